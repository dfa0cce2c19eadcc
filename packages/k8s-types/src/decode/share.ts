/**
 * Sharing equal values across cached objects: one frozen instance of a label map, an annotation
 * map, a container-name list or a condition list that many pods carry alike (every pod of a
 * ReplicaSet has the same labels but for one hash, the same containers, the same four conditions).
 * Each instance costs a pod 60–150 bytes of heap in V8; shared, it costs a map lookup.
 *
 * Invariants:
 * - A shared value is deep-frozen and equal (same keys in the same order, same values) to what the
 *   view would have built; so it is observably the same value, except that it cannot be mutated,
 *   which no reader of a cached object may do anyway (see object-store's `StoreReader`).
 * - Only small values are shared (a bounded key), and each table is bounded: when full it starts
 *   over, which loses sharing, never correctness.
 */

/** Bound on the intern table, so a stream of distinct values cannot grow it without limit. */
const INTERN_CAPACITY = 16_384;
const internTable = new Map<string, string>();

/**
 * Returns one shared instance of `value`. JSON.parse allocates a fresh string for every value, so
 * without this every cached pod holds its own copy of `"kube-controller-manager"`-like values that
 * thousands of pods share. The table is bounded: when full it starts over, which only loses sharing.
 */
export function intern(value: string): string {
  // V8's JSON.parse already shares string values of up to 10 characters; hashing them again buys nothing.
  if (value.length <= 10) return value;
  const shared = internTable.get(value);
  if (shared !== undefined) return shared;
  if (internTable.size >= INTERN_CAPACITY) internTable.clear();
  internTable.set(value, value);
  return value;
}

/** Entries past which a value is kept as built (its key would cost more than sharing saves). */
const MAX_ENTRIES = 16;
/** Characters of key past which a value is kept as built. */
const MAX_KEY_LENGTH = 1024;
/** Values held per table before it starts over. */
const TABLE_CAPACITY = 4096;

/** A bounded table of frozen shared values by a string key. */
class ShareTable<T> {
  readonly #values = new Map<string, T>();

  /** The shared value for `key`: the one held, or `value` (frozen by `freeze`) from now on. */
  share(key: string, value: T, freeze: (value: T) => T): T {
    const held = this.#values.get(key);
    if (held !== undefined) return held;
    if (this.#values.size >= TABLE_CAPACITY) this.#values.clear();
    const frozen = freeze(value);
    this.#values.set(key, frozen);
    return frozen;
  }
}

// Keys are the parts joined by \u0000 (which no label key or value the apiserver accepts holds). A
// part containing it could make two different values one key, so such a value is not shared.
const SEP = '\u0000';

const stringMaps = new ShareTable<Readonly<Record<string, string>>>();

/**
 * One shared frozen instance of a `map[string]string` (labels, annotations) per distinct content
 * and key order; `map` itself when it is large or holds a separator character.
 */
export function shareStringMap(map: Record<string, string>): Readonly<Record<string, string>> {
  let key = '';
  let entries = 0;
  for (const name in map) {
    if (!Object.hasOwn(map, name)) continue;
    const value = map[name]!;
    if (++entries > MAX_ENTRIES || name.includes(SEP) || value.includes(SEP)) return map;
    key += `${name}${SEP}${value}${SEP}`;
    if (key.length > MAX_KEY_LENGTH) return map;
  }
  return stringMaps.share(key, map, Object.freeze);
}

/**
 * Whether {@link shareStringMap} would share `map` (small enough, no separator character): the byte
 * reader, which shares maps by their parts instead, decides frozenness by the same rule.
 */
export function isShareableStringMap(map: Readonly<Record<string, string>>): boolean {
  let length = 0;
  let entries = 0;
  for (const name in map) {
    if (!Object.hasOwn(map, name)) continue;
    const value = map[name]!;
    if (++entries > MAX_ENTRIES || name.includes(SEP) || value.includes(SEP)) return false;
    length += name.length + value.length + 2;
    if (length > MAX_KEY_LENGTH) return false;
  }
  return true;
}

/** Whether {@link shareList} would share `list` (the same rule, without building its key). */
export function isShareableList<T>(kind: string, list: readonly T[], itemKey: (item: T) => string | undefined): boolean {
  if (list.length === 0 || list.length > MAX_ENTRIES) return false;
  let length = kind.length;
  for (const item of list) {
    const part = itemKey(item);
    if (part === undefined || part.includes(SEP)) return false;
    length += 1 + part.length;
    if (length > MAX_KEY_LENGTH) return false;
  }
  return true;
}

/** Deep-freezes a list as {@link shareList} does with one it shares (items frozen with it). */
export function freezeList<T>(list: readonly T[]): readonly T[] {
  for (const item of list) Object.freeze(item);
  return Object.freeze(list);
}

const lists = new ShareTable<readonly unknown[]>();

/**
 * One shared frozen instance of a list whose items are described by `itemKey` (a string that
 * determines the item, or `undefined` when it cannot: then the list is kept as built). `kind` keeps
 * lists of different shapes apart. Items are frozen with the list.
 */
export function shareList<T>(kind: string, list: readonly T[], itemKey: (item: T) => string | undefined): readonly T[] {
  if (list.length === 0 || list.length > MAX_ENTRIES) return list;
  let key = kind;
  for (const item of list) {
    const part = itemKey(item);
    if (part === undefined || part.includes(SEP)) return list;
    key += `${SEP}${part}`;
    if (key.length > MAX_KEY_LENGTH) return list;
  }
  return lists.share(key, list as readonly unknown[], freezeList<unknown>) as readonly T[];
}
