import { ReconcileLoopError, type Key } from '@reconcile-loop/primitives';

/** Rejects {@link WorkQueue.get} once the queue is stopped (also a `get` that was waiting). */
export class WorkQueueStoppedError extends ReconcileLoopError {
  readonly code = 'RL_QUEUE_STOPPED' as const;
  constructor() {
    super('work queue is stopped');
  }
}

/** True when `error` is a {@link WorkQueueStoppedError} (from any copy of this package). */
export function isQueueStopped(error: unknown): error is WorkQueueStoppedError {
  return error instanceof WorkQueueStoppedError;
}

/** Thrown by {@link WorkQueue.add} for a key that is not a {@link Key} (a guard for untyped callers). */
export class WorkQueueKeyError extends ReconcileLoopError {
  readonly code = 'RL_QUEUE_INVALID_KEY' as const;
  /** The rejected value. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`work queue keys must be a string, number, bigint or boolean; got ${key === null ? 'null' : typeof key}`);
    this.key = key;
  }
}

/**
 * Thrown by {@link WorkQueue.done} for a key no consumer holds: a second
 * `done` for one `get`, or a key that was never handed out. Releasing a key twice would let two
 * consumers hold it at once, so the mistake is loud.
 */
export class WorkQueueNotProcessingError extends ReconcileLoopError {
  readonly code = 'RL_QUEUE_NOT_PROCESSING' as const;
  /** The key passed to `done`. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`work queue done(${String(key)}): no consumer holds this key`);
    this.key = key;
  }
}

/**
 * Rejects {@link WorkQueue.drain} when keys are still being processed at its deadline. The queue
 * stays stopped; the keys listed are still held and are released by their `done` as usual.
 */
export class WorkQueueDrainTimeoutError<K = unknown> extends ReconcileLoopError {
  readonly code = 'RL_QUEUE_DRAIN_TIMEOUT' as const;
  /** Keys still held by a consumer when the deadline passed, in the order they were handed out. */
  readonly keys: readonly K[];
  /** The deadline that passed, in ms. */
  readonly timeoutMs: number;
  constructor(keys: readonly K[], timeoutMs: number) {
    super(`work queue drain: ${keys.length} key(s) still processing after ${timeoutMs} ms`);
    this.keys = keys;
    this.timeoutMs = timeoutMs;
  }
}
