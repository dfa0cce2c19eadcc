/** @reconcile-loop/retry-scheduler: per-key retry and requeue deadlines on one timer, with an opt-in retry budget. */
// The scheduler and what a failure records and returns.
export { RetryScheduler, type Failure } from './scheduler.js';
// Options: the backoff, the budget, the observer; parked and released keys.
export {
  DEFAULT_RETRY_BACKOFF,
  type Fingerprint,
  type ParkedKey,
  type RetryBudget,
  type RetrySchedulerObserver,
  type RetrySchedulerOptions,
} from './options.js';
// Errors (all extend primitives' ReconcileLoopError).
export {
  RetrySchedulerDelayError,
  RetrySchedulerFingerprintError,
  RetrySchedulerKeyError,
} from './errors.js';
