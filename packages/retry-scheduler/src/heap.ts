/**
 * Binary min-heap ordered by `less`. Internal: the scheduler keeps replaced and forgotten entries
 * in it (lazy deletion) and drops them when they surface or when {@link MinHeap.compact} runs.
 */
export class MinHeap<T> {
  #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  /** Entries held, stale ones included. */
  get length(): number {
    return this.#items.length;
  }

  /** The least entry, or `undefined` when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** O(log n). */
  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as T;
      if (!this.#less(item, p)) break;
      items[i] = p;
      i = parent;
    }
    items[i] = item;
  }

  /** Removes and returns the least entry; O(log n). */
  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      this.#siftDown(0);
    }
    return top;
  }

  /** Keeps only the entries `keep` accepts and restores heap order; O(n). */
  compact(keep: (item: T) => boolean): void {
    this.#items = this.#items.filter(keep);
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  /** Drops every entry. */
  clear(): void {
    this.#items = [];
  }

  #siftDown(start: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[start] as T;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && this.#less(items[right] as T, items[left] as T)) child = right;
      const c = items[child] as T;
      if (!this.#less(c, item)) break;
      items[i] = c;
      i = child;
    }
    items[i] = item;
  }
}
