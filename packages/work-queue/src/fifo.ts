/** Past this many consumed slots the order array is compacted, keeping `shift` amortized O(1). */
const COMPACT_AT = 1024;

/** One queued key and the clock time it joined this FIFO. */
interface Entry<K> {
  readonly key: K;
  readonly at: number;
}

/**
 * Insertion-ordered set of keys: `push` of a member is a no-op (the key keeps its place), `shift`
 * takes the oldest, `delete` takes one out of the middle. Internal to the work queue.
 *
 * Invariant: `#members` maps exactly the live keys to their entry; a slot of `#order[#head..]` is live
 * when `#members` maps its key to that very entry. A `delete` leaves its slot stale (skipped by
 * `shift` and `oldestAt`) instead of splicing the array, so it costs O(1); a stale slot is dropped
 * when the head passes it, so the array holds at most one slot per push since the last compaction.
 */
export class KeyFifo<K> {
  #members = new Map<K, Entry<K>>();
  /** Delivery order; slots before `#head` are spent. */
  #order: Entry<K>[] = [];
  #head = 0;

  /** Keys held. */
  get size(): number {
    return this.#members.size;
  }

  /** Whether `key` is held. */
  has(key: K): boolean {
    return this.#members.has(key);
  }

  /** Appends `key` at clock time `at` unless held; returns whether it was appended. */
  push(key: K, at: number): boolean {
    if (this.#members.has(key)) return false;
    const entry = { key, at };
    this.#members.set(key, entry);
    this.#order.push(entry);
    return true;
  }

  /** Removes `key` wherever it is; returns whether it was held. */
  delete(key: K): boolean {
    if (!this.#members.delete(key)) return false;
    if (this.#members.size === 0) this.#reset();
    return true;
  }

  /** When the oldest key joined; `undefined` when empty. */
  oldestAt(): number | undefined {
    return this.#live()?.at;
  }

  /** Removes and returns the oldest key; `undefined` when empty. */
  shift(): K | undefined {
    const entry = this.#live();
    if (entry === undefined) return undefined;
    this.#head += 1;
    this.#members.delete(entry.key);
    if (this.#members.size === 0) this.#reset();
    else if (this.#head >= COMPACT_AT && this.#head * 2 >= this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
    return entry.key;
  }

  /** Drops every key. */
  clear(): void {
    this.#members.clear();
    this.#reset();
  }

  /** The oldest live entry, after dropping the stale slots in front of it. */
  #live(): Entry<K> | undefined {
    if (this.#members.size === 0) return undefined;
    for (;;) {
      const entry = this.#order[this.#head] as Entry<K>;
      if (this.#members.get(entry.key) === entry) return entry;
      this.#head += 1;
    }
  }

  #reset(): void {
    this.#order = [];
    this.#head = 0;
  }
}
