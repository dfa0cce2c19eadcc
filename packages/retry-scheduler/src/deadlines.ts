import { timerDelay, type Clock } from '@reconcile-loop/primitives';
import { MinHeap } from './heap.js';

/** Below this heap size stale entries are only dropped as they surface. */
const COMPACT_MIN = 64;

interface HeapEntry<K> {
  readonly deadline: number;
  /** Setting order; also the generation stamp that tells a live entry from a replaced one. */
  readonly seq: number;
  readonly key: K;
}

interface Pending {
  readonly seq: number;
  readonly deadline: number;
}

function earlier<K>(a: HeapEntry<K>, b: HeapEntry<K>): boolean {
  return a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq);
}

/**
 * At most one deadline per key, fired through ONE timer armed for the earliest. Internal to the
 * scheduler, which decides what a deadline means; this only keeps time.
 *
 * Invariants: exactly one timer is armed while any deadline is pending and none otherwise (zero
 * idle wakeups); a replaced or cleared deadline stays in the heap with a stale `seq` and is
 * skipped when it surfaces, and the heap is compacted when stale entries outnumber live ones, so
 * every `set` stays O(log pending).
 */
export class DeadlineTimer<K> {
  readonly #clock: Clock;
  readonly #onDue: (key: K) => void;
  readonly #pending = new Map<K, Pending>();
  readonly #heap = new MinHeap<HeapEntry<K>>(earlier);
  #seq = 0;
  /** Identifies the armed timer; a callback whose token is no longer current does nothing. */
  #token: object | undefined;
  #handle: unknown;
  #armedFor = 0;
  #sweeping = false;
  #shutdown = false;

  /** @param onDue - called once per due key, after its deadline was removed; must not throw. */
  constructor(clock: Clock, onDue: (key: K) => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Keys with a pending deadline. */
  get size(): number {
    return this.#pending.size;
  }

  /** `key`'s pending deadline, or `undefined`. */
  get(key: K): number | undefined {
    return this.#pending.get(key)?.deadline;
  }

  /** Sets `key`'s deadline, replacing a pending one. */
  set(key: K, deadline: number): void {
    if (this.#shutdown) return;
    const seq = ++this.#seq;
    this.#pending.set(key, { seq, deadline });
    this.#heap.push({ deadline, seq, key });
    this.#maybeCompact();
    this.#rearm();
  }

  /** Drops `key`'s pending deadline, so it will not fire; returns whether one was pending. */
  clear(key: K): boolean {
    if (!this.#pending.delete(key)) return false;
    this.#maybeCompact();
    this.#rearm();
    return true;
  }

  /** Cancels the timer and drops every deadline; nothing fires afterwards and `set` is a no-op. */
  shutdown(): void {
    this.#shutdown = true;
    this.#disarm();
    this.#pending.clear();
    this.#heap.clear();
  }

  #isLive = (entry: HeapEntry<K>): boolean => this.#pending.get(entry.key)?.seq === entry.seq;

  /** Bounds stale entries to the live count, so the heap stays O(pending) and pushes O(log pending). */
  #maybeCompact(): void {
    const length = this.#heap.length;
    if (length > COMPACT_MIN && length > 2 * this.#pending.size) this.#heap.compact(this.#isLive);
  }

  /** The earliest live entry; stale entries that surface on top are dropped. */
  #earliest(): HeapEntry<K> | undefined {
    for (;;) {
      const top = this.#heap.peek();
      if (top === undefined || this.#isLive(top)) return top;
      this.#heap.pop();
    }
  }

  /** Keeps exactly one timer armed for the earliest pending deadline, and none when nothing is pending. */
  #rearm(): void {
    if (this.#sweeping || this.#shutdown) return;
    const top = this.#earliest();
    if (top === undefined) {
      this.#disarm();
      return;
    }
    if (this.#token !== undefined && this.#armedFor === top.deadline) return;
    this.#disarm();
    const token = {};
    // Clamped to primitives' MAX_TIMER_MS; a longer wait re-arms when this one fires early.
    const delay = timerDelay(Math.ceil(top.deadline - this.#clock.now()));
    this.#token = token;
    this.#armedFor = top.deadline;
    this.#handle = this.#clock.setTimeout(() => {
      if (this.#token === token) this.#fire();
    }, delay);
  }

  #disarm(): void {
    if (this.#token === undefined) return;
    const handle = this.#handle;
    this.#token = undefined;
    this.#handle = undefined;
    this.#clock.clearTimeout(handle);
  }

  /** Fires every entry due by now that existed when the timer went off, then re-arms. */
  #fire(): void {
    this.#token = undefined;
    this.#handle = undefined;
    const now = this.#clock.now();
    // Entries set by onDue wait for the next timer, so a zero delay cannot spin here.
    const lastSeq = this.#seq;
    this.#sweeping = true;
    try {
      while (!this.#shutdown) {
        const top = this.#earliest();
        // A timer that fires early (now < deadline) just re-arms below.
        if (top === undefined || top.deadline > now || top.seq > lastSeq) break;
        this.#heap.pop();
        this.#pending.delete(top.key);
        this.#onDue(top.key);
      }
    } finally {
      this.#sweeping = false;
    }
    this.#rearm();
  }
}
