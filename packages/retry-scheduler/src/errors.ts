import { ReconcileLoopError, type Key } from '@reconcile-loop/primitives';

/** Thrown for a key that is not a `Key` (a guard for untyped callers). */
export class RetrySchedulerKeyError extends ReconcileLoopError {
  readonly code = 'RL_RETRY_INVALID_KEY' as const;
  /** The rejected value. */
  readonly key: unknown;
  constructor(key: unknown) {
    super(`retry keys must be a string, number, bigint or boolean; got ${key === null ? 'null' : typeof key}`);
    this.key = key;
  }
}

/** Thrown by `RetryScheduler.requeueAfter` for a delay that is not a finite number ≥ 0. */
export class RetrySchedulerDelayError extends ReconcileLoopError {
  readonly code = 'RL_RETRY_INVALID_DELAY' as const;
  /** The rejected value. */
  readonly delayMs: unknown;
  constructor(delayMs: unknown) {
    super(`requeueAfter delayMs must be a finite number >= 0; got ${String(delayMs)}`);
    this.delayMs = delayMs;
  }
}

/**
 * Thrown by `RetryScheduler.fail` and `RetryScheduler.offer` for a fingerprint that is
 * not a `Fingerprint`. An object would compare by identity, so every offer would "change" it
 * and release the key: the budget would never hold.
 */
export class RetrySchedulerFingerprintError extends ReconcileLoopError {
  readonly code = 'RL_RETRY_INVALID_FINGERPRINT' as const;
  /** The rejected value. */
  readonly fingerprint: unknown;
  constructor(fingerprint: unknown) {
    super(`fingerprints must be a string, number, bigint, boolean, null or undefined; got ${typeof fingerprint}`);
    this.fingerprint = fingerprint;
  }
}
