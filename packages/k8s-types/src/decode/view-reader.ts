import { freezeList, isShareableList } from './share.js';
import { EMPTY_LIST } from './view-parts.js';
import { firstKept, isNull, KeySet, nextItem, nextKept, lastSharedHash, notProven, openArray, sharedStr } from './cursor.js';
import { mix, type PartsCache } from './parts-cache.js';

/**
 * Building blocks of a byte reader for one view (see `pod-reader.ts`): reading an object level's
 * members by index, building each object as an exact-size literal of the members present (as
 * `compactFresh` rebuilds zod's output), and lists the view shares, found again by their items'
 * parts before `share.ts` builds a key for them.
 */

/** A member present in the input, in the order of the view's shape (so the output keeps zod's key order). */
export type Draft = Record<string, unknown>;

/**
 * Reads the members of the object at the cursor into `fields` (indexed like `keys`), each read by
 * `read(index)`; members the view does not read are stepped over. Returns the present members as a
 * bit mask. A member given twice is left to the exact path (`JSON.parse` keeps the last one, and
 * proving that here is not worth the code).
 */
export function members(keys: KeySet, read: (index: number) => unknown, fields: unknown[]): number {
  let present = 0;
  for (let index = firstKept(keys); index >= 0; index = nextKept(keys)) {
    const bit = 1 << index;
    if ((present & bit) !== 0) notProven();
    present |= bit;
    fields[index] = read(index);
  }
  return present;
}

/** A view list (`listOf`): `null` is the shared empty list; `[]` a fresh one, as zod builds it. */
export function list<T>(item: () => T): T[] | typeof EMPTY_LIST {
  const items = grownList(item);
  // `push` leaves room to grow (16 slots for one item); the view keeps an exact-size copy.
  return items === EMPTY_LIST ? items : items.slice();
}

/** {@link list}'s items as `push` grew them (not yet copied to their exact size). */
function grownList<T>(item: () => T): T[] | typeof EMPTY_LIST {
  if (isNull()) return EMPTY_LIST;
  if (!openArray()) return [];
  const items: T[] = [];
  do items.push(item());
  while (nextItem());
  return items;
}

/**
 * One object level of the view: builds its objects as exact-size literals of the present members,
 * in the shape's order (what `compactFresh` makes of zod's output), one compiled maker per
 * combination of present members.
 */
export class Shape {
  readonly #names: readonly string[];
  readonly #makers = new Map<number, (fields: readonly unknown[]) => Draft>();

  constructor(names: readonly string[]) {
    this.#names = names;
  }

  /** The object of the members in `present` (a bit mask over the names), valued from `fields`. */
  build(present: number, fields: readonly unknown[]): Draft {
    let maker = this.#makers.get(present);
    if (maker === undefined) {
      const members = this.#names.flatMap((name, index) =>
        (present & (1 << index)) !== 0 ? [`${JSON.stringify(name)}: f[${index}]`] : [],
      );
      // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiled once per member combination, from the view's own names
      maker = new Function('f', `return {${members.join(', ')}};`) as (fields: readonly unknown[]) => Draft;
      this.#makers.set(present, maker);
    }
    return maker(fields);
  }
}

/** Fails unless every member in `mask` is present. */
export function required(present: number, mask: number): void {
  if ((present & mask) !== mask) notProven();
}

/** One object level the view reads: its member names (in the view's shape order), matched and built. */
export interface Level {
  readonly keys: KeySet;
  readonly shape: Shape;
}

export function level(names: readonly string[]): Level {
  return { keys: new KeySet(names), shape: new Shape(names) };
}

/** Reads the object at the cursor as `at` (see {@link members}) and builds it, requiring the members in `mask`. */
export function object(at: Level, read: (index: number) => unknown, mask = 0): Draft {
  const fields: unknown[] = [];
  const present = members(at.keys, read, fields);
  required(present, mask);
  return at.shape.build(present, fields);
}

/**
 * The running hash of the list being read, over its items' shared strings (see `parts-cache.ts`):
 * a shared list is found again by its items before `share.ts` builds a key for it.
 */
let listHash = 0;
/** The shared strings of the list being read, in order (reused: lists of this kind do not nest). */
const listParts: unknown[] = [];
let listCount = 0;

/** Adds a part to the list being read. */
export function part(value: unknown, hash: number): void {
  listHash = mix(listHash, hash);
  listParts[listCount++] = value;
}

/** The hashes of the shared strings of the object being read, by member index (flat objects only). */
export const memberHashes: number[] = [];

/** Reads a shared string member, keeping its hash for {@link part}. */
export function hashedStr(index: number): string {
  const text = sharedStr();
  memberHashes[index] = lastSharedHash();
  return text;
}

/**
 * Reads a list the view shares: found again by its items' parts (see `parts-cache.ts`); a new one
 * is frozen when `share.ts` would share it, and held from its second sight on.
 */
export function sharedList<T>(
  kind: string,
  cache: PartsCache<readonly T[]>,
  item: () => T,
  itemKey: (item: T) => string | undefined,
): readonly T[] {
  listHash = 0;
  listCount = 0;
  const grown = grownList(item);
  if (grown === EMPTY_LIST) return grown;
  const hash = listHash;
  const count = listCount;
  const held = cache.get(hash, listParts, count);
  // Found held: the items read are dropped without an exact-size copy.
  if (held !== undefined && held.length === grown.length) return held;
  const items = grown.slice();
  // Frozen exactly when the exact path would share it.
  if (!isShareableList(kind, items, itemKey)) return items;
  const shared = freezeList(items);
  return cache.offer(hash, listParts, count, shared);
}
