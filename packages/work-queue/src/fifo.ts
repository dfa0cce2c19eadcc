/** Past this many consumed slots the order array is compacted, keeping `shift` amortized O(1). */
const COMPACT_AT = 1024;

/**
 * Insertion-ordered set of keys: `push` of a member is a no-op (the key keeps its place), `shift`
 * takes the oldest. Internal to the work queue.
 *
 * Invariant: `#members` is exactly the keys in `#order[#head..]`, each once.
 */
export class KeyFifo<K> {
  #members = new Set<K>();
  /** Delivery order; slots before `#head` are spent. */
  #order: K[] = [];
  #head = 0;

  /** Keys held. */
  get size(): number {
    return this.#members.size;
  }

  /** Whether `key` is held. */
  has(key: K): boolean {
    return this.#members.has(key);
  }

  /** Appends `key` unless held; returns whether it was appended. */
  push(key: K): boolean {
    if (this.#members.has(key)) return false;
    this.#members.add(key);
    this.#order.push(key);
    return true;
  }

  /** Removes and returns the oldest key; `undefined` when empty. */
  shift(): K | undefined {
    if (this.#members.size === 0) return undefined;
    const key = this.#order[this.#head] as K;
    this.#head += 1;
    this.#members.delete(key);
    if (this.#members.size === 0) {
      this.#order = [];
      this.#head = 0;
    } else if (this.#head >= COMPACT_AT && this.#head * 2 >= this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
    return key;
  }

  /** Drops every key. */
  clear(): void {
    this.#members.clear();
    this.#order = [];
    this.#head = 0;
  }
}
