import { MAX_TIMER_MS, OptionsError, abortReason, isKey, systemClock, type Clock, type Key } from '@reconcile-loop/primitives';
import { WorkQueueDrainTimeoutError, WorkQueueKeyError, WorkQueueNotProcessingError, WorkQueueStoppedError } from './errors.js';
import { KeyFifo } from './fifo.js';
import type { UnfinishedWork, WorkQueueHook, WorkQueueObserver, WorkQueuePriority } from './observer.js';

/** Default of {@link WorkQueueOptions.agingMs}: a low-priority key ranks with normal ones after 10 s. */
const DEFAULT_AGING_MS = 10_000;

/** Options for {@link WorkQueue}; every one is optional. */
export interface WorkQueueOptions<K> {
  /**
   * Two priorities with aging: `get` hands out `normal` keys before `low` ones until the oldest low
   * key has waited `agingMs`; from then on the two take turns. Default `false`: one FIFO, and the
   * priority given to `add` is ignored.
   */
  priority?: boolean | undefined;
  /**
   * With `priority`: how long the oldest `low` key may wait before it ranks with `normal` keys (the
   * queue then alternates). Bounds a low key's wait; see the README's "Priority and aging". Default
   * 10 000 ms.
   */
  agingMs?: number | undefined;
  /** Metrics hooks; see {@link WorkQueueObserver}. */
  observer?: WorkQueueObserver<K> | undefined;
  /** Time source for hook timestamps, held-time accounting and drain deadlines. Default {@link systemClock}. */
  clock?: Clock | undefined;
  /** Receives what an observer hook threw. Without it such errors are dropped; a throwing `onError` is ignored. */
  onError?: ((error: unknown, hook: WorkQueueHook) => void) | undefined;
}

interface Waiter<K> {
  resolve(key: K): void;
  reject(error: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface DrainWaiter {
  resolve(): void;
  reject(error: unknown): void;
  timer: unknown;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * Insertion-ordered dedup queue of keys with client-go's per-key exclusion, optionally in two
 * priorities with aging: the scheduling core of a reconcile loop. A key is queued at most once; `get` hands out the oldest and holds it until its
 * consumer calls `done`; an `add` of a held key marks it dirty, and `done` queues it again at the
 * back. Any number of consumers may wait in `get`, served first come first served. This is
 * client-go's queue/dirty/processing protocol: a key is never held by two consumers at once, and a
 * key added while held is handed out again right after its `done`.
 *
 * Invariants: every key is in at most one of *queued*, *held*, *held and dirty*; a queued key is
 * never held, and queued at one priority only (the higher one it was added at); waiting consumers
 * exist only while nothing is queued. Fairness: a key goes to the back of its priority whenever it
 * becomes ready again, so one hot key cannot starve the others; with `priority`, once the oldest
 * low key has waited `agingMs` at least every second hand-out is a low key, so no low key starves.
 *
 * @typeParam K - the parent key type; a primitive, so dedup is by value.
 */
export class WorkQueue<K extends Key> {
  readonly #observer: WorkQueueObserver<K> | undefined;
  readonly #clock: Clock;
  readonly #onError: ((error: unknown, hook: WorkQueueHook) => void) | undefined;
  readonly #prioritized: boolean;
  readonly #agingMs: number;
  /** Normal-priority keys ready to hand out, oldest first (every key, without `priority`). */
  readonly #queue = new KeyFifo<K>();
  /** Low-priority keys ready to hand out, oldest first; never holds a key `#queue` holds. */
  readonly #low = new KeyFifo<K>();
  /** Which priority won the last hand-out the two took turns at (the oldest low key had aged). */
  #lastTurn: WorkQueuePriority = 'low';
  /** Held keys → clock time they were handed out, in hand-out order. */
  readonly #processing = new Map<K, number>();
  /** Held keys re-added while held → the priority they are queued at on `done`; keys ⊆ `#processing`'s. */
  readonly #dirty = new Map<K, WorkQueuePriority>();
  /** Pending key → time of the add that made it pending; kept only when an `onGet` hook wants it. */
  readonly #addedAt = new Map<K, number>();
  /** Consumers waiting in `get`, first come first served. */
  readonly #waiters = new Set<Waiter<K>>();
  readonly #drains = new Set<DrainWaiter>();
  #stopped = false;

  /**
   * Creates an empty, running queue.
   *
   * @throws {@link OptionsError} for an option of the wrong type.
   */
  constructor(options: WorkQueueOptions<K> = {}) {
    const { observer, clock = systemClock, onError, priority = false, agingMs = DEFAULT_AGING_MS } = options;
    if (observer !== undefined && (observer === null || typeof observer !== 'object')) {
      throw new OptionsError('WorkQueue', 'observer must be an object when given');
    }
    if (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
      throw new OptionsError('WorkQueue', 'clock must have now, setTimeout and clearTimeout');
    }
    if (onError !== undefined && typeof onError !== 'function') {
      throw new OptionsError('WorkQueue', 'onError must be a function when given');
    }
    if (typeof priority !== 'boolean') throw new OptionsError('WorkQueue', 'priority must be a boolean when given');
    if (typeof agingMs !== 'number' || !Number.isFinite(agingMs) || agingMs < 0 || agingMs > MAX_TIMER_MS) {
      throw new OptionsError('WorkQueue', `agingMs must be a finite number in [0, ${MAX_TIMER_MS}]; got ${String(agingMs)}`);
    }
    this.#observer = observer;
    this.#clock = clock;
    this.#onError = onError;
    this.#prioritized = priority;
    this.#agingMs = agingMs;
  }

  /** Keys queued and not yet handed out, both priorities (client-go's depth). A held dirty key is not counted. */
  get size(): number {
    return this.#queue.size + this.#low.size;
  }

  /**
   * Per priority: keys queued, and how long the oldest of them has waited at that priority (0 when
   * none) on the queue's clock — the depth and oldest-age gauges. Without `priority` every key is
   * `normal`.
   */
  byPriority(): Readonly<Record<WorkQueuePriority, { readonly depth: number; readonly oldestMs: number }>> {
    const now = this.#clock.now();
    const of = (fifo: KeyFifo<K>) => {
      const at = fifo.oldestAt();
      return { depth: fifo.size, oldestMs: at === undefined ? 0 : Math.max(0, now - at) };
    };
    return { normal: of(this.#queue), low: of(this.#low) };
  }

  /** Keys held by consumers (handed out, not yet `done`). */
  get processingCount(): number {
    return this.#processing.size;
  }

  /** Consumers waiting in `get`. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** True once {@link WorkQueue.stop} (or {@link WorkQueue.drain}) was called. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Makes `key` pending at `priority` (default `normal`; ignored without the `priority` option). An
   * idle key is queued behind every key queued at its priority, or handed straight to the
   * longest-waiting consumer. A no-op when `key` is already queued at this priority or a higher one
   * (it keeps its place) and after {@link WorkQueue.stop}; a key queued `low` and added `normal` is
   * promoted: it leaves the low queue and joins the back of the normal one, still one entry. A held
   * key is marked dirty instead (once; its priority is the higher of its re-adds), and is queued at
   * the back of that priority when its consumer calls `done`.
   *
   * @throws {@link WorkQueueKeyError} when `key` is not a string, number, bigint or boolean.
   * @throws {@link OptionsError} when `priority` is neither `normal` nor `low`.
   */
  add(key: K, priority: WorkQueuePriority = 'normal'): void {
    if (!isKey(key)) throw new WorkQueueKeyError(key);
    if (priority !== 'normal' && priority !== 'low') {
      throw new OptionsError('WorkQueue', `add priority must be 'normal' or 'low'; got ${String(priority)}`);
    }
    const level: WorkQueuePriority = this.#prioritized ? priority : 'normal';
    if (this.#stopped || this.#queue.has(key)) return;
    if (this.#low.has(key)) {
      // Promotion keeps the key's add time for `queuedMs`: it was pending all along.
      if (level === 'low') return;
      this.#low.delete(key);
      this.#queue.push(key, this.#clock.now());
      return;
    }
    const observed = this.#observer !== undefined;
    if (this.#processing.has(key)) {
      const marked = this.#dirty.get(key);
      if (marked !== undefined) {
        if (level === 'normal') this.#dirty.set(key, level);
        return;
      }
      this.#dirty.set(key, level);
      if (observed) this.#notifyAdd(key, this.#clock.now(), true, level);
      return;
    }
    const at = this.#clock.now();
    if (observed && this.#observer?.onGet !== undefined) this.#addedAt.set(key, at);
    // State first, hooks after: a hook that calls back into the queue sees a consistent queue.
    const waiter = this.#enqueue(key, at, level);
    if (observed) {
      this.#notifyAdd(key, at, false, level);
      if (waiter !== undefined) this.#notifyGet(key, at, level);
    }
    waiter?.resolve(key);
  }

  /**
   * Resolves with the oldest queued key and hands it out, held until `done`.
   * Waits while nothing is queued; waiting consumers are served first come first served.
   * Rejects with the signal's reason when `signal` aborts (or already has), and with
   * {@link WorkQueueStoppedError} once the queue is stopped.
   */
  get(signal?: AbortSignal): Promise<K> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#stopped) return Promise.reject(new WorkQueueStoppedError());
    const key = this.tryGet();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise<K>((resolve, reject) => {
      const waiter: Waiter<K> = { resolve, reject, signal, onAbort: undefined };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          if (!this.#waiters.has(waiter)) return;
          this.#release(waiter);
          reject(abortReason(signal));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#waiters.add(waiter);
    });
  }

  /** The next queued key, handed out like `get` does; `undefined` when none is queued. Never waits. */
  tryGet(): K | undefined {
    const at = this.#clock.now();
    const from = this.#next(at);
    const key = from === 'low' ? this.#low.shift() : this.#queue.shift();
    if (key === undefined) return undefined;
    this.#processing.set(key, at);
    this.#notifyGet(key, at, from);
    return key;
  }

  /**
   * Which priority the next hand-out takes from: `normal` while the oldest low key is younger than
   * `agingMs`, then the two in turns. The turn is what bounds a low key's wait: once it has aged, at
   * most one normal key is handed out between two low ones, so a low key with L low keys ahead of it
   * is handed out within 2·(L+1) hand-outs after its `agingMs` passed, whatever normal keys keep
   * arriving (controller-runtime's priority queue has no such turn: its low keys wait as long as
   * normal ones arrive, controller-runtime #3496). A normal key keeps at least every second
   * hand-out, so a cold start's backlog never holds a change for more than one extra hand-out.
   */
  #next(now: number): WorkQueuePriority {
    if (this.#low.size === 0) return 'normal';
    if (this.#queue.size === 0) return 'low';
    if (now - (this.#low.oldestAt() as number) < this.#agingMs) return 'normal';
    this.#lastTurn = this.#lastTurn === 'low' ? 'normal' : 'low';
    return this.#lastTurn;
  }

  /**
   * Releases a key handed out by `get`/`tryGet`: the consumer finished with it. A key re-added
   * while held is queued now, at the back (or handed to a waiting consumer); after `stop` it is not.
   *
   * @throws {@link WorkQueueNotProcessingError} when no consumer holds `key`.
   */
  done(key: K): void {
    const since = this.#processing.get(key);
    if (since === undefined) throw new WorkQueueNotProcessingError(key);
    const at = this.#clock.now();
    this.#processing.delete(key);
    // stop() clears the dirty set, so a key re-added before a stop is not resurrected after it.
    const level = this.#dirty.get(key);
    const requeue = level !== undefined;
    if (requeue) this.#dirty.delete(key);
    const waiter = requeue ? this.#enqueue(key, at, level) : undefined;
    const onDone = this.#observer?.onDone;
    if (onDone !== undefined) {
      this.#call('onDone', () => onDone.call(this.#observer, { key, at, workMs: at - since, requeued: requeue }));
    }
    if (waiter !== undefined) this.#notifyGet(key, at, level as WorkQueuePriority);
    waiter?.resolve(key);
    if (this.#processing.size === 0 && this.#drains.size > 0) this.#finishDrains();
  }

  /** Whether `key` is queued, at either priority (a key already handed out, held or not, is not). */
  has(key: K): boolean {
    return this.#queue.has(key) || this.#low.has(key);
  }

  /** Whether a consumer holds `key`. */
  isProcessing(key: K): boolean {
    return this.#processing.has(key);
  }

  /** Whether `key` is held and was re-added meanwhile, so `done` will queue it again. */
  isDirty(key: K): boolean {
    return this.#dirty.has(key);
  }

  /**
   * Held keys and how long they have been held, on the queue's clock: the source of client-go's
   * unfinished-work and longest-running-processor gauges.
   */
  unfinishedWork(): UnfinishedWork {
    if (this.#processing.size === 0) return { processing: 0, totalMs: 0, longestMs: 0 };
    const now = this.#clock.now();
    let totalMs = 0;
    let longestMs = 0;
    for (const since of this.#processing.values()) {
      const held = Math.max(0, now - since);
      totalMs += held;
      if (held > longestMs) longestMs = held;
    }
    return { processing: this.#processing.size, totalMs, longestMs };
  }

  /**
   * Stops the queue: drops every queued key and every dirty mark, and rejects every waiting `get`
   * with {@link WorkQueueStoppedError}. Later `add` calls are no-ops. Held keys stay held until
   * their `done` (see {@link WorkQueue.drain} to wait for them). Idempotent.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#queue.clear();
    this.#low.clear();
    this.#dirty.clear();
    this.#addedAt.clear();
    for (const waiter of [...this.#waiters]) {
      this.#release(waiter);
      waiter.reject(new WorkQueueStoppedError());
    }
  }

  /**
   * client-go's `ShutDownWithDrain`: stops the queue (as {@link WorkQueue.stop}) and resolves once
   * every held key is `done`. Rejects with {@link WorkQueueDrainTimeoutError} (naming the keys
   * still held) when `timeoutMs` passes first, or with the signal's reason when `signal` aborts;
   * either way the queue stays stopped and the held keys are still released by their `done`.
   *
   * @param timeoutMs - the deadline, a finite number of ms ≥ 0 and ≤ 2³¹−1.
   * @throws (as a rejection) {@link OptionsError} for a bad `timeoutMs`; the queue is then not stopped.
   */
  drain(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMER_MS) {
      return Promise.reject(
        new OptionsError(
          'WorkQueue',
          `drain timeoutMs must be a finite number in [0, ${MAX_TIMER_MS}]; got ${String(timeoutMs)}`,
        ),
      );
    }
    this.stop();
    if (this.#processing.size === 0) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const drain: DrainWaiter = { resolve, reject, timer: undefined, signal, onAbort: undefined };
      drain.timer = this.#clock.setTimeout(() => {
        if (!this.#drains.has(drain)) return;
        this.#endDrain(drain);
        reject(new WorkQueueDrainTimeoutError([...this.#processing.keys()], timeoutMs));
      }, timeoutMs);
      if (signal !== undefined) {
        drain.onAbort = () => {
          if (!this.#drains.has(drain)) return;
          this.#endDrain(drain);
          reject(abortReason(signal));
        };
        signal.addEventListener('abort', drain.onAbort, { once: true });
      }
      this.#drains.add(drain);
    });
  }

  /**
   * A key that is not held became ready: it is handed to the longest-waiting consumer (returned, so
   * the caller resolves it after its hooks ran), or queued at the back of its priority.
   */
  #enqueue(key: K, at: number, level: WorkQueuePriority): Waiter<K> | undefined {
    const first = this.#waiters.values().next();
    if (first.done === true) {
      (level === 'low' ? this.#low : this.#queue).push(key, at);
      return undefined;
    }
    // A waiting consumer means nothing is queued, so handing the key over directly keeps order.
    const waiter = first.value;
    this.#release(waiter);
    this.#processing.set(key, at);
    return waiter;
  }

  #notifyAdd(key: K, at: number, dirty: boolean, priority: WorkQueuePriority): void {
    const observer = this.#observer as WorkQueueObserver<K>;
    if (dirty && observer.onGet !== undefined) this.#addedAt.set(key, at);
    const onAdd = observer.onAdd;
    if (onAdd === undefined) return;
    const depth = this.size;
    this.#call('onAdd', () => onAdd.call(observer, { key, at, depth, dirty, priority }));
  }

  #notifyGet(key: K, at: number, priority: WorkQueuePriority): void {
    const observer = this.#observer;
    const onGet = observer?.onGet;
    if (onGet === undefined) return;
    const addedAt = this.#addedAt.get(key) ?? at;
    this.#addedAt.delete(key);
    const depth = this.size;
    this.#call('onGet', () => onGet.call(observer, { key, at, depth, queuedMs: at - addedAt, priority }));
  }

  #call(hook: WorkQueueHook, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      try {
        this.#onError?.(error, hook);
      } catch {
        // A failing error sink must not change what the queue does.
      }
    }
  }

  /** Detaches a waiting consumer and its abort listener, so nothing outlives a settled `get`. */
  #release(waiter: Waiter<K>): void {
    this.#waiters.delete(waiter);
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  #endDrain(drain: DrainWaiter): void {
    this.#drains.delete(drain);
    this.#clock.clearTimeout(drain.timer);
    if (drain.onAbort !== undefined) drain.signal?.removeEventListener('abort', drain.onAbort);
  }

  #finishDrains(): void {
    for (const drain of [...this.#drains]) {
      this.#endDrain(drain);
      drain.resolve();
    }
  }
}
