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
/** First-sight values a cache remembers (a pod reads a few maps and lists into one cache), and the most parts one may have. */
const RECENT = 4;
const RECENT_PARTS = 32;

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
   * Holds a value for its parts from the second time they are offered on, and returns the instance
   * to use. A value read once and never again (an annotation map with a per-pod heartbeat, a pod's
   * own owner) is not held, so it neither takes a slot from one that repeats nor costs the cache a
   * copy of its parts. The first instance is remembered for a few offers more: when its parts come
   * again soon (the pods of one owner, next to each other in a LIST), that first instance is the one
   * held and returned, so it is not left unshared in the first pod's view.
   */
  offer(hash: number, parts: readonly unknown[], count: number, value: T): T {
    const slot = hash & (this.#seen.length - 1);
    if (this.#seen[slot] !== hash) {
      this.#seen[slot] = hash;
      this.#remember(hash, parts, count, value);
      return value;
    }
    const first = this.#recalled(hash, parts, count) ?? value;
    this.set(hash, parts, count, first);
    return first;
  }

  /** The last few values offered for the first time: their hashes, parts (copied into reused arrays) and instances. */
  readonly #recentHashes = new Int32Array(RECENT);
  readonly #recentParts: unknown[][] = Array.from({ length: RECENT }, () => []);
  readonly #recentCounts = new Int32Array(RECENT).fill(-1);
  readonly #recentValues: (T | undefined)[] = new Array<T | undefined>(RECENT).fill(undefined);
  #recentNext = 0;

  #remember(hash: number, parts: readonly unknown[], count: number, value: T): void {
    if (count > RECENT_PARTS) return;
    const i = this.#recentNext;
    this.#recentNext = (i + 1) % RECENT;
    this.#recentHashes[i] = hash;
    this.#recentCounts[i] = count;
    const kept = this.#recentParts[i]!;
    for (let k = 0; k < count; k++) kept[k] = parts[k];
    this.#recentValues[i] = value;
  }

  /** The remembered first instance with exactly these parts, if it is still among the last few. */
  #recalled(hash: number, parts: readonly unknown[], count: number): T | undefined {
    for (let i = 0; i < RECENT; i++) {
      if (this.#recentHashes[i] === hash && this.#recentCounts[i] === count && sameParts(this.#recentParts[i]!, parts, count))
        return this.#recentValues[i];
    }
    return undefined;
  }

  /** The value set for the first `count` of `parts` (hashed to `hash`), if held. */
  get(hash: number, parts: readonly unknown[], count: number): T | undefined {
    const slot = hash & this.#mask;
    const held = this.#parts[slot];
    return held !== undefined && held.length === count && sameParts(held, parts, count) ? this.#values[slot] : undefined;
  }

  /** Holds `value` for the first `count` of `parts` (copied). */
  set(hash: number, parts: readonly unknown[], count: number, value: T): void {
    const slot = hash & this.#mask;
    this.#parts[slot] = parts.slice(0, count);
    this.#values[slot] = value;
  }
}

/** Whether the first `count` parts of both are the same values (`===`: the reader's strings are interned). */
function sameParts(held: readonly unknown[], parts: readonly unknown[], count: number): boolean {
  for (let i = 0; i < count; i++) if (held[i] !== parts[i]) return false;
  return true;
}

/** Folds one part's hash into a running hash. */
export function mix(hash: number, part: number): number {
  return Math.imul(hash ^ part, 0x9e3779b1) ^ (hash >>> 15);
}
