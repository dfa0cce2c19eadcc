/**
 * User-defined indexes over a store (client-go's `Indexers` / `ByIndex`, controller-runtime's
 * `IndexField` + `MatchingFields`): each index is a function from an object to the string values it
 * is found under, maintained incrementally on every write, so a query costs O(matches), not a scan
 * or a copy of the store. Generic: the store knows no Kubernetes; a label or field index is an
 * index function the caller writes (e.g. `(pod) => [pod.spec.nodeName]`).
 */
import { OptionsError, ReconcileLoopError, silentLogger, type Logger } from '@reconcile-loop/primitives';
import type { ObjectKey } from './events.js';

/**
 * The values one object is indexed under (client-go's `IndexFunc`): none (`undefined` or `[]`),
 * one, or several (a label index may give one value per label). Must be a pure function of the
 * object: the old values of an update or a delete are computed again from the object being
 * replaced, as client-go does, instead of being stored per object. A throw indexes the object under
 * no value of that index (logged); the object is still cached.
 */
export type IndexFunc<T> = (object: T, key: ObjectKey) => string | readonly string[] | undefined;

/** Index functions by index name (client-go's `Indexers`). */
export type Indexers<T> = Readonly<Record<string, IndexFunc<T>>>;

/**
 * Read access to a store's indexes. Collections are snapshots of the matches only (O(matches));
 * objects are shared, never mutate them.
 */
export interface IndexReader<T> {
  /**
   * The objects indexed under `value` in index `name` (client-go's `ByIndex`; controller-runtime's
   * `List` with `MatchingFields`), in first-indexed order; empty when none is.
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, T>;
  /**
   * Object keys indexed under `value` in index `name` (client-go's `IndexKeys`).
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  indexKeys(name: string, value: string): ObjectKey[];
  /**
   * The values index `name` holds at least one object under (client-go's `ListIndexFuncValues`).
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  indexValues(name: string): string[];
  /**
   * The cached objects `filter` accepts, e.g. a label-selector matcher (controller-runtime's `List`
   * with `MatchingLabels` on an unindexed cache): one pass over the store, no copy of the rest.
   * Prefer an index on a hot path with a large store.
   */
  list(filter: (object: T, key: ObjectKey) => boolean): ReadonlyMap<ObjectKey, T>;
}

/** Thrown by an index query naming an index the store was not built with (client-go: "Index with name … does not exist"). */
export class UnknownIndexError extends ReconcileLoopError {
  readonly code = 'RL_STORE_UNKNOWN_INDEX' as const;
  /** The index name asked for. */
  readonly index: string;
  constructor(index: string, known: readonly string[]) {
    super(`no index named ${JSON.stringify(index)} (declared: ${known.length === 0 ? 'none' : known.join(', ')})`);
    this.index = index;
  }
}

const NONE: readonly string[] = Object.freeze([]);
const EMPTY = new Map<never, never>();

/**
 * The indexes of one store. The store calls {@link StoreIndexes.update} once per write with the
 * object it replaced (or `undefined`) and the new one (or `undefined` for a delete), after its own
 * maps hold the write.
 *
 * Invariant (per index): `#values.get(name).get(v).has(k)` ⇔ k is cached and `v ∈ func(object(k))`;
 * no value map is empty, so `indexValues` is exactly the values with objects.
 */
export class StoreIndexes<T> {
  readonly #funcs: ReadonlyArray<readonly [string, IndexFunc<T>]>;
  readonly #values = new Map<string, Map<string, Map<ObjectKey, T>>>();
  readonly #logger: Logger;

  /**
   * @param owner the class named by an {@link OptionsError}; `path` the option's path in its options.
   * @throws {OptionsError} when `indexers` is not an object of functions.
   */
  constructor(owner: string, indexers: Indexers<T>, logger: Logger = silentLogger, path = 'indexers') {
    if (indexers === null || typeof indexers !== 'object' || Array.isArray(indexers))
      throw new OptionsError(owner, `${path} must be an object of index functions by name`);
    const funcs: Array<readonly [string, IndexFunc<T>]> = [];
    for (const [name, func] of Object.entries(indexers)) {
      if (typeof func !== 'function') throw new OptionsError(owner, `${path}.${name} must be a function`);
      funcs.push([name, func]);
      this.#values.set(name, new Map());
    }
    this.#funcs = funcs;
    this.#logger = logger;
  }

  /** Whether any index is declared (the store skips {@link update} when not). */
  get size(): number {
    return this.#funcs.length;
  }

  /** Moves `key` from the values of `previous` to those of `next` in every index. O(values) per index. */
  update(key: ObjectKey, previous: T | undefined, next: T | undefined): void {
    for (const [name, func] of this.#funcs) {
      const byValue = this.#values.get(name)!;
      const before = previous === undefined ? NONE : this.#run(name, func, previous, key);
      const after = next === undefined ? NONE : this.#run(name, func, next, key);
      for (const value of before) {
        if (next !== undefined && after.includes(value)) continue;
        const objects = byValue.get(value);
        if (objects === undefined) continue;
        objects.delete(key);
        if (objects.size === 0) byValue.delete(value);
      }
      for (const value of after) {
        let objects = byValue.get(value);
        if (objects === undefined) byValue.set(value, (objects = new Map()));
        // Re-set also when the value is unchanged: the entry must hold the new object.
        objects.set(key, next as T);
      }
    }
  }

  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, T> {
    const objects = this.#index(name).get(value);
    return objects === undefined ? new Map() : new Map(objects);
  }

  indexKeys(name: string, value: string): ObjectKey[] {
    return [...(this.#index(name).get(value) ?? EMPTY).keys()];
  }

  indexValues(name: string): string[] {
    return [...this.#index(name).keys()];
  }

  #index(name: string): Map<string, Map<ObjectKey, T>> {
    const index = this.#values.get(name);
    if (index === undefined)
      throw new UnknownIndexError(
        name,
        this.#funcs.map(([n]) => n),
      );
    return index;
  }

  #run(name: string, func: IndexFunc<T>, object: T, key: ObjectKey): readonly string[] {
    let result: unknown;
    try {
      result = func(object, key);
    } catch (error) {
      this.#logger.error({ index: name, objectKey: key, err: error }, 'index function threw; object not indexed under it');
      return NONE;
    }
    if (result === undefined) return NONE;
    if (typeof result === 'string') return [result];
    if (!Array.isArray(result)) {
      this.#logger.error(
        { index: name, objectKey: key, got: typeof result },
        'index function returned neither strings nor undefined',
      );
      return NONE;
    }
    const values: string[] = [];
    for (const value of result as unknown[]) if (typeof value === 'string' && !values.includes(value)) values.push(value);
    return values;
  }
}

/** The entries `filter` accepts, in iteration order: the one pass behind every store's `list`. */
export function listMatching<T>(
  entries: Iterable<readonly [ObjectKey, T]>,
  filter: (object: T, key: ObjectKey) => boolean,
): ReadonlyMap<ObjectKey, T> {
  const out = new Map<ObjectKey, T>();
  for (const [key, object] of entries) if (filter(object, key)) out.set(key, object);
  return out;
}
