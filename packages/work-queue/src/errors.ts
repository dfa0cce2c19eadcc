/** Rejects {@link WorkQueue.get} once the queue is stopped (also a `get` that was waiting). */
export class WorkQueueStoppedError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_STOPPED' as const;
  constructor() {
    super('work queue is stopped');
    this.name = 'WorkQueueStoppedError';
  }
}

/**
 * Rejects a second {@link WorkQueue.get} while another one is still waiting, in the default
 * single-consumer mode. An `exclusive` queue accepts any number of waiting consumers instead.
 */
export class WorkQueueBusyError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_BUSY' as const;
  constructor() {
    super('work queue already has a waiting consumer; it supports exactly one (use { exclusive: true } for several)');
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
    super(`work queue keys must be a string, number, bigint or boolean; got ${key === null ? 'null' : typeof key}`);
    this.name = 'WorkQueueKeyError';
    this.key = key;
  }
}

/**
 * Thrown by {@link WorkQueue.done} on an `exclusive` queue for a key no consumer holds: a second
 * `done` for one `get`, or a key that was never handed out. Releasing a key twice would let two
 * consumers hold it at once, so the mistake is loud.
 */
export class WorkQueueNotProcessingError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_NOT_PROCESSING' as const;
  /** The key passed to `done`. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`work queue done(${String(key)}): no consumer holds this key`);
    this.name = 'WorkQueueNotProcessingError';
    this.key = key;
  }
}

/** Thrown by the {@link WorkQueue} constructor or {@link WorkQueue.drain} for arguments it cannot run with. */
export class WorkQueueOptionsError extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_INVALID_OPTIONS' as const;
  constructor(message: string) {
    super(message);
    this.name = 'WorkQueueOptionsError';
  }
}

/**
 * Rejects {@link WorkQueue.drain} when keys are still being processed at its deadline. The queue
 * stays stopped; the keys listed are still held and are released by their `done` as usual.
 */
export class WorkQueueDrainTimeoutError<K = unknown> extends Error {
  /** Stable across dual ESM/CJS builds, where `instanceof` can fail. */
  readonly code = 'WORK_QUEUE_DRAIN_TIMEOUT' as const;
  /** Keys still held by a consumer when the deadline passed, in the order they were handed out. */
  readonly keys: readonly K[];
  /** The deadline that passed, in ms. */
  readonly timeoutMs: number;
  constructor(keys: readonly K[], timeoutMs: number) {
    super(`work queue drain: ${keys.length} key(s) still processing after ${timeoutMs} ms`);
    this.name = 'WorkQueueDrainTimeoutError';
    this.keys = keys;
    this.timeoutMs = timeoutMs;
  }
}
