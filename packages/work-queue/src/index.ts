/**
 * A key the queue can hold. Only primitives: a `Set` compares them by value (SameValueZero), so
 * dedup needs no key codec. Objects would compare by identity and two equal parent keys would be
 * queued twice; a composite parent key is encoded to a string by the key map instead.
 */
export type QueueKey = string | number | bigint | boolean;

/** Rejects {@link WorkQueue.get} once the queue is stopped (also a `get` that was waiting). */
export class WorkQueueStoppedError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_STOPPED' as const;
  constructor() {
    super('work queue is stopped');
    this.name = 'WorkQueueStoppedError';
  }
}

/** Rejects a second {@link WorkQueue.get} while another one is still waiting: the queue has one consumer. */
export class WorkQueueBusyError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_BUSY' as const;
  constructor() {
    super('work queue already has a waiting consumer; it supports exactly one');
    this.name = 'WorkQueueBusyError';
  }
}

/** Thrown by {@link WorkQueue.add} for a key that is not a {@link QueueKey} (a guard for untyped callers). */
export class WorkQueueKeyError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_INVALID_KEY' as const;
  /** The rejected value. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`work queue keys must be a string, number, bigint or boolean; got ${describe(key)}`);
    this.name = 'WorkQueueKeyError';
    this.key = key;
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value;
}

function isQueueKey(value: unknown): value is QueueKey {
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean';
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

interface Waiter<K> {
  resolve(key: K): void;
  reject(error: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** Past this many consumed slots the order array is compacted, keeping `get` amortized O(1). */
const COMPACT_AT = 1024;

/**
 * Insertion-ordered dedup set of keys with one awaiting consumer: the scheduling core of a
 * reconcile loop. A key is either queued once or not at all; `get` hands out the oldest and
 * removes it, so a key re-added while its reconcile runs is queued once more (no dirty/processing
 * split: with one worker the set alone is that protocol).
 *
 * @typeParam K - the parent key type; a primitive, so dedup is by value.
 */
export class WorkQueue<K extends QueueKey> {
  /** Membership; always exactly the keys in `order[head..]`. */
  #members = new Set<K>();
  /** Delivery order: first insertion among keys not yet delivered. Slots before `head` are spent. */
  #order: K[] = [];
  #head = 0;
  #waiter: Waiter<K> | undefined;
  #stopped = false;

  /** Creates an empty, running queue. */
  constructor() {}

  /** Keys queued and not yet handed out. */
  get size(): number {
    return this.#members.size;
  }

  /** True once {@link WorkQueue.stop} was called. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Queues `key` behind every key already queued. A no-op when `key` is already queued (it keeps
   * its place) and after {@link WorkQueue.stop}. A waiting `get` receives the key at once, so the key
   * is never observable as queued in that case.
   *
   * @throws {@link WorkQueueKeyError} when `key` is not a string, number, bigint or boolean.
   */
  add(key: K): void {
    if (!isQueueKey(key)) throw new WorkQueueKeyError(key);
    if (this.#stopped || this.#members.has(key)) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      // A waiting consumer means the set is empty, so handing the key over directly keeps order.
      this.#settle();
      waiter.resolve(key);
      return;
    }
    this.#members.add(key);
    this.#order.push(key);
  }

  /**
   * Resolves with the oldest queued key and removes it. Waits while the queue is empty.
   * Rejects with the signal's reason when `signal` aborts (or already has), with
   * {@link WorkQueueStoppedError} once the queue is stopped, and with {@link WorkQueueBusyError}
   * when another `get` is already waiting.
   */
  get(signal?: AbortSignal): Promise<K> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#stopped) return Promise.reject(new WorkQueueStoppedError());
    if (this.#waiter !== undefined) return Promise.reject(new WorkQueueBusyError());
    const key = this.tryGet();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise<K>((resolve, reject) => {
      const waiter: Waiter<K> = { resolve, reject, signal, onAbort: undefined };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          if (this.#waiter !== waiter) return;
          this.#settle();
          reject(abortReason(signal));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#waiter = waiter;
    });
  }

  /** The oldest queued key, removed from the queue; `undefined` when empty. Never waits. */
  tryGet(): K | undefined {
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

  /** Whether `key` is queued (a key already handed out by `get` is not). */
  has(key: K): boolean {
    return this.#members.has(key);
  }

  /**
   * Stops the queue: drops every queued key and rejects a waiting `get` with
   * {@link WorkQueueStoppedError}. Later `add` calls are no-ops. Idempotent. There is no drain:
   * with one worker the only in-flight key is the one being reconciled, and reconcile is idempotent.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#members.clear();
    this.#order = [];
    this.#head = 0;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#settle();
      waiter.reject(new WorkQueueStoppedError());
    }
  }

  /** Detaches the waiting consumer and its abort listener, so nothing outlives a settled `get`. */
  #settle(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (waiter?.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }
}
