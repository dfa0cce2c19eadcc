/**
 * Compact copies of validated views, for the cache. V8 gives an object built one property at a
 * time (as zod builds its output) four in-object fields whatever it ends up holding, and every
 * further property goes to a separate property array with room to grow: a `{ ip }` holds three
 * unused fields, a nine-field metadata object a half-empty property array. An object literal with
 * all its keys is allocated at its exact size. So a view's plain objects are rebuilt by a literal
 * of their keys, compiled once per distinct key list (measured: −170 B per cached pod, BENCHMARKS.md).
 *
 * Invariants: the copy is deep-equal to the input (same keys in the same order, same values,
 * frozen shared values kept by identity); the input is never mutated; only plain objects and arrays
 * are copied (a `Date`, a `Map`, a class instance is kept as is).
 */

/** Distinct key lists compiled before new ones are left as built (maps with arbitrary keys would otherwise grow it). */
const MAX_MAKERS = 512;
/** Nodes of the key-list trie, bounded for the same reason. */
const MAX_NODES = 8192;

type Maker = (source: Record<string, unknown>) => Record<string, unknown>;

/** A trie over key lists, so finding a list's maker hashes each (interned) key once and builds no string. */
interface KeyNode {
  next?: Map<string, KeyNode>;
  /** `undefined`: not compiled yet; `null`: not compactable (`__proto__`). */
  maker?: Maker | null;
}
const root: KeyNode = {};
let makerCount = 0;
let nodeCount = 0;

function makerFor(keys: readonly string[]): Maker | undefined {
  let node = root;
  for (const key of keys) {
    let next = node.next?.get(key);
    if (next === undefined) {
      if (nodeCount >= MAX_NODES) return undefined;
      next = {};
      nodeCount++;
      (node.next ??= new Map()).set(key, next);
    }
    node = next;
  }
  if (node.maker !== undefined) return node.maker ?? undefined;
  if (makerCount >= MAX_MAKERS) return undefined;
  makerCount++;
  // `__proto__` as a literal key would set the prototype instead of a property: not compacted.
  node.maker = keys.includes('__proto__')
    ? null
    : // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiled once per key list, from JSON-quoted keys only
      (new Function(
        's',
        `return {${keys.map((key) => `${JSON.stringify(key)}: s[${JSON.stringify(key)}]`).join(', ')}};`,
      ) as Maker);
  return node.maker ?? undefined;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  // A null-prototype object is kept as is: a literal would give it Object.prototype.
  return Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * A compact deep copy of `value` (see the module comment), or `value` itself when nothing in it
 * needed compacting. Frozen values (the shared ones) are kept by identity and not descended into.
 */
export function compactView<T>(value: T): T {
  return compactValue(value, 0) as T;
}

function compactValue(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value) || depth > 32) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const compacted = compactValue(item, depth + 1);
      if (compacted !== item) (copy ??= value.slice())[i] = compacted;
    }
    return copy ?? value;
  }
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  let children: Record<string, unknown> | undefined;
  for (const key of keys) {
    const child = value[key];
    const compacted = compactValue(child, depth + 1);
    if (compacted !== child) {
      children ??= { ...value };
      children[key] = compacted;
    }
  }
  const maker = makerFor(keys);
  const source = children ?? value;
  return maker === undefined ? source : maker(source);
}

/**
 * {@link compactView} for a value that only the caller holds (a zod output just built, whose
 * objects are all fresh): children are replaced in place, so no temporary copy is made. Frozen
 * (shared) values are neither descended into nor touched.
 */
export function compactFresh<T>(value: T): T {
  return compactFreshValue(value, 0) as T;
}

function compactFreshValue(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > 32 || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null) {
        const compacted = compactFreshValue(item, depth + 1);
        if (compacted !== item) value[i] = compacted;
      }
    }
    return value;
  }
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  for (const key of keys) {
    const child = value[key];
    if (typeof child === 'object' && child !== null) {
      const compacted = compactFreshValue(child, depth + 1);
      if (compacted !== child) value[key] = compacted;
    }
  }
  const maker = makerFor(keys);
  return maker === undefined ? value : maker(value);
}

const compactViews = new WeakSet<object>();

/**
 * Marks `view` so that `parseObject` (and so the reflector, for LIST items and watch frames) caches
 * compact copies of what it validates ({@link compactFresh}: in place, on zod's fresh output). The
 * bundled `podSchema` is marked; mark a view of your own only when its output is plain data that
 * zod built for this parse (objects, arrays, records, scalars; frozen shared values are fine), not
 * objects your transforms return from elsewhere. `compileSchema` keeps the mark. Returns `view`.
 */
export function compactOutput<T extends object>(view: T): T {
  compactViews.add(view);
  return view;
}

/** Whether `view` was marked by {@link compactOutput}. */
export function isCompactOutput(view: object): boolean {
  return compactViews.has(view);
}
