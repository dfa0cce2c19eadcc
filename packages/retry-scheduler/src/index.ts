import { systemClock, type Clock } from './clock.js';
import { MinHeap } from './heap.js';

export { systemClock, type Clock } from './clock.js';

/**
 * A key the scheduler can track. Only primitives, so a `Map` finds a key's failure count and
 * retry deadline by value; a composite parent key is encoded to a string by the key map.
 */
export type RetryKey = string | number | bigint | boolean;

/** Default delay after a key's first failure: 100 ms (see the README for why not client-go's 5 ms). */
export const DEFAULT_BASE_DELAY_MS = 100;
/** Default cap on the delay: 1000 s, client-go's per-item cap. */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;

/** Options for {@link RetryScheduler}. */
export interface RetrySchedulerOptions<K> {
  /**
   * Called once when a key's retry deadline passes, after the key has left the pending set, so it
   * may call `schedule` or `forget` re-entrantly. The caller enqueues the key (the scheduler holds
   * no queue). A throw is caught, passed to `onError`, and never stops later retries.
   */
  onRetry: (key: K) => void;
  /** Delay after the first failure; doubles with each further failure. Default {@link DEFAULT_BASE_DELAY_MS}. */
  baseDelayMs?: number;
  /** Cap on the delay; `Infinity` means no cap. Default {@link DEFAULT_MAX_DELAY_MS}. */
  maxDelayMs?: number;
  /** Time source. Default {@link systemClock}. */
  clock?: Clock;
  /** Receives what `onRetry` threw. Without it such errors are dropped; a throwing `onError` is ignored. */
  onError?: (error: unknown, key: K) => void;
}

/** Thrown by the {@link RetryScheduler} constructor for options it cannot run with. */
export class RetrySchedulerOptionsError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'RETRY_SCHEDULER_INVALID_OPTIONS' as const;
  constructor(message: string) {
    super(message);
    this.name = 'RetrySchedulerOptionsError';
  }
}

/** Thrown by {@link RetryScheduler.schedule} for a key that is not a {@link RetryKey} (a guard for untyped callers). */
export class RetrySchedulerKeyError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'RETRY_SCHEDULER_INVALID_KEY' as const;
  /** The rejected value. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`retry keys must be a string, number, bigint or boolean; got ${key === null ? 'null' : typeof key}`);
    this.name = 'RetrySchedulerKeyError';
    this.key = key;
  }
}

/** Node clamps longer timers to 1 ms; a longer wait re-arms when this one fires early. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;
/** Below this heap size stale entries are only dropped as they surface. */
const COMPACT_MIN = 64;

interface HeapEntry<K> {
  readonly deadline: number;
  /** Scheduling order; also the generation stamp that tells a live entry from a replaced one. */
  readonly seq: number;
  readonly key: K;
}

interface KeyState {
  failures: number;
  /** `seq` and `deadline` of the pending retry; both `undefined` when none is pending. */
  seq: number | undefined;
  deadline: number | undefined;
}

function isRetryKey(value: unknown): value is RetryKey {
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean';
}

function earlier<K>(a: HeapEntry<K>, b: HeapEntry<K>): boolean {
  return a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq);
}

/**
 * Per-key exponential backoff with latest-wins retry deadlines. Each `schedule` records a failure
 * and replaces the key's pending deadline with `now + delay`; when a deadline passes the scheduler
 * calls `onRetry(key)`. One timer is armed for the earliest pending deadline and none while nothing
 * is pending. Single-threaded by design: every method runs to completion between timer callbacks.
 *
 * @typeParam K - the parent key type; a primitive, so lookups are by value.
 */
export class RetryScheduler<K extends RetryKey> {
  readonly #onRetry: (key: K) => void;
  readonly #onError: ((error: unknown, key: K) => void) | undefined;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #clock: Clock;
  /** Keys with a failure count; a key is here until `forget`, pending or not. */
  readonly #keys = new Map<K, KeyState>();
  /** Pending deadlines plus stale entries of replaced or forgotten ones (lazy deletion). */
  readonly #heap = new MinHeap<HeapEntry<K>>(earlier);
  #pending = 0;
  #seq = 0;
  /** Identifies the armed timer; a callback whose token is no longer current does nothing. */
  #token: object | undefined;
  #handle: unknown;
  #armedFor = 0;
  #sweeping = false;
  #shutdown = false;

  /**
   * Creates an idle scheduler. Touches no timer: the first one is armed by the first `schedule`.
   *
   * @throws {@link RetrySchedulerOptionsError} when `onRetry` is not a function, `baseDelayMs` is not a
   * finite number ≥ 0, or `maxDelayMs` is below `baseDelayMs`.
   */
  constructor(options: RetrySchedulerOptions<K>) {
    const { onRetry, onError, baseDelayMs = DEFAULT_BASE_DELAY_MS, maxDelayMs = DEFAULT_MAX_DELAY_MS } = options;
    if (typeof onRetry !== 'function') throw new RetrySchedulerOptionsError('onRetry must be a function');
    if (onError !== undefined && typeof onError !== 'function') {
      throw new RetrySchedulerOptionsError('onError must be a function when given');
    }
    if (typeof baseDelayMs !== 'number' || !Number.isFinite(baseDelayMs) || baseDelayMs < 0) {
      throw new RetrySchedulerOptionsError(`baseDelayMs must be a finite number >= 0; got ${String(baseDelayMs)}`);
    }
    if (typeof maxDelayMs !== 'number' || Number.isNaN(maxDelayMs) || maxDelayMs < baseDelayMs) {
      throw new RetrySchedulerOptionsError(
        `maxDelayMs must be a number >= baseDelayMs (${baseDelayMs}); got ${String(maxDelayMs)}`,
      );
    }
    this.#onRetry = onRetry;
    this.#onError = onError;
    this.#baseDelayMs = baseDelayMs;
    this.#maxDelayMs = maxDelayMs;
    this.#clock = options.clock ?? systemClock;
  }

  /** Keys with a pending retry deadline. */
  get pending(): number {
    return this.#pending;
  }

  /**
   * Records one more failure for `key` and sets its retry deadline to `now + delay`, replacing any
   * pending one (latest wins). Delay is `baseDelayMs * 2^(failures - 1)`, capped at `maxDelayMs`.
   * After {@link RetryScheduler.shutdown} it does nothing and returns `-1`.
   *
   * @returns the delay in ms, or `-1` after shutdown.
   * @throws {@link RetrySchedulerKeyError} when `key` is not a string, number, bigint or boolean.
   */
  schedule(key: K): number {
    if (this.#shutdown) return -1;
    if (!isRetryKey(key)) throw new RetrySchedulerKeyError(key);
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { failures: 0, seq: undefined, deadline: undefined };
      this.#keys.set(key, state);
    }
    state.failures += 1;
    const delay = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** Math.min(state.failures - 1, 1023));
    const deadline = this.#clock.now() + delay;
    if (state.seq === undefined) this.#pending += 1;
    const seq = ++this.#seq;
    state.seq = seq;
    state.deadline = deadline;
    this.#heap.push({ deadline, seq, key });
    this.#maybeCompact();
    this.#rearm();
    return delay;
  }

  /** Success: resets `key`'s failure count and drops its pending deadline, so it will not fire. */
  forget(key: K): void {
    const state = this.#keys.get(key);
    if (state === undefined) return;
    this.#keys.delete(key);
    if (state.seq === undefined) return;
    this.#pending -= 1;
    this.#maybeCompact();
    this.#rearm();
  }

  /** Failures recorded for `key` since it was last forgotten; 0 for an unknown key. */
  failures(key: K): number {
    return this.#keys.get(key)?.failures ?? 0;
  }

  /** `key`'s pending retry deadline on the clock's scale, or `undefined` when none is pending. */
  deadline(key: K): number | undefined {
    return this.#keys.get(key)?.deadline;
  }

  /** Cancels the timer and drops every key; nothing fires afterwards and `schedule` is a no-op. Idempotent. */
  shutdown(): void {
    if (this.#shutdown) return;
    this.#shutdown = true;
    this.#disarm();
    this.#keys.clear();
    this.#heap.clear();
    this.#pending = 0;
  }

  #isLive = (entry: HeapEntry<K>): boolean => this.#keys.get(entry.key)?.seq === entry.seq;

  /** Bounds stale entries to the live count, so the heap stays O(pending) and pushes O(log pending). */
  #maybeCompact(): void {
    const length = this.#heap.length;
    if (length > COMPACT_MIN && length > 2 * this.#pending) this.#heap.compact(this.#isLive);
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
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, Math.ceil(top.deadline - this.#clock.now())));
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
    // Entries scheduled by onRetry wait for the next timer, so a zero delay cannot spin here.
    const lastSeq = this.#seq;
    this.#sweeping = true;
    try {
      while (!this.#shutdown) {
        const top = this.#earliest();
        // A timer that fires early (now < deadline) just re-arms below.
        if (top === undefined || top.deadline > now || top.seq > lastSeq) break;
        this.#heap.pop();
        const state = this.#keys.get(top.key) as KeyState;
        state.seq = undefined;
        state.deadline = undefined;
        this.#pending -= 1;
        this.#call(top.key);
      }
    } finally {
      this.#sweeping = false;
    }
    this.#rearm();
  }

  #call(key: K): void {
    try {
      this.#onRetry(key);
    } catch (error) {
      try {
        this.#onError?.(error, key);
      } catch {
        // A failing error sink must not cost the other keys their retries.
      }
    }
  }
}
