/**
 * Shared values found again by the parts they were built from, before building anything: a map
 * read from a frame is the shared frozen instance of an earlier equal map when its keys and values,
 * in order, are the same strings. The byte reader's strings come from its string cache, so equal
 * parts are mostly one instance and comparing them is comparing pointers; the string key
 * `share.ts` would build (and hash) for the same lookup costs more than reading the map did.
 *
 * Invariant: `get` returns a value only for the exact part sequence it was `set` with (compared with
 * `===`), so a hit is what building from the parts would have shared. A fixed table where a later
 * entry takes a slot over: bounded, and a lost slot loses a shortcut only.
 */
export class PartsCache<T> {
  readonly #parts: (readonly unknown[] | undefined)[];
  readonly #values: (T | undefined)[];
  readonly #mask: number;

  /** `slots`: a power of two. */
  constructor(slots: number) {
    this.#parts = new Array<readonly unknown[] | undefined>(slots).fill(undefined);
    this.#values = new Array<T | undefined>(slots).fill(undefined);
    this.#mask = slots - 1;
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
