/**
 * Shared values found again by the parts they were built from, before building anything: a map
 * read from a frame is the shared frozen instance of an earlier equal map when its keys and values,
 * in order, are the same strings. The byte reader's strings come from its string cache, so equal
 * parts are mostly one instance and comparing them is comparing pointers; the string key
 * `share.ts` would build (and hash) for the same lookup costs more than reading the map did.
 *
 * It is the byte reader's sharing table: a value it holds is the one frozen instance every later
 * equal read returns (the exact path shares through `share.ts`; the two paths each share within
 * themselves, and their values are equal and frozen alike).
 *
 * Invariant: `get` returns a value only for the exact part sequence it was `set` with (compared with
 * `===`), so a hit is what building from the parts would have shared. A fixed table where a later
 * entry takes a slot over: bounded, and a lost slot loses sharing only.
 */
export class PartsCache<T> {
  readonly #parts: (readonly unknown[] | undefined)[];
  readonly #values: (T | undefined)[];
  readonly #mask: number;
  /** Hashes seen once, by slot: a value is held from its second sight on (see {@link offer}). */
  readonly #seen: Int32Array;

  /** `slots`: a power of two. */
  constructor(slots: number) {
    this.#parts = new Array<readonly unknown[] | undefined>(slots).fill(undefined);
    this.#values = new Array<T | undefined>(slots).fill(undefined);
    this.#mask = slots - 1;
    this.#seen = new Int32Array(slots * 4);
  }

  /**
   * Holds `value` for its parts from the second time they are offered on. A value read once and
   * never again (an annotation map with a per-pod heartbeat, a pod's own owner) is not held, so it
   * neither takes a slot from one that repeats nor costs the cache a copy of its parts.
   */
  offer(hash: number, parts: readonly unknown[], count: number, value: T): void {
    const slot = hash & (this.#seen.length - 1);
    if (this.#seen[slot] === hash) this.set(hash, parts, count, value);
    else this.#seen[slot] = hash;
  }

  /** The value set for the first `count` of `parts` (hashed to `hash`), if held. */
  get(hash: number, parts: readonly unknown[], count: number): T | undefined {
    const slot = hash & this.#mask;
    const held = this.#parts[slot];
    if (held === undefined || held.length !== count) return undefined;
    for (let i = 0; i < count; i++) if (held[i] !== parts[i]) return undefined;
    return this.#values[slot];
  }

  /** Holds `value` for the first `count` of `parts` (copied). */
  set(hash: number, parts: readonly unknown[], count: number, value: T): void {
    const slot = hash & this.#mask;
    this.#parts[slot] = parts.slice(0, count);
    this.#values[slot] = value;
  }
}

/** Folds one part's hash into a running hash. */
export function mix(hash: number, part: number): number {
  return Math.imul(hash ^ part, 0x9e3779b1) ^ (hash >>> 15);
}
