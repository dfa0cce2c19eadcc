export { RetryScheduler, type Failure, type FailureOutcome } from './scheduler.js';
export {
  DEFAULT_RETRY_BACKOFF,
  type Fingerprint,
  type ParkedKey,
  type ReleasedKey,
  type RetryBudget,
  type RetrySchedulerObserver,
  type RetrySchedulerOptions,
} from './options.js';
export {
  RetrySchedulerDelayError,
  RetrySchedulerFingerprintError,
  RetrySchedulerKeyError,
} from './errors.js';
