import { OptionsError, checkBackoffPolicy, type BackoffPolicy, type Clock } from '@reconcile-loop/primitives';

/**
 * What a parked key is parked *at*: a value the loop derives from the parent (its
 * `metadata.generation` by default). Primitives only, compared by value (SameValueZero), so "the
 * fingerprint changed" means the parent's spec changed, not that a new object was built.
 */
export type Fingerprint = string | number | bigint | boolean | null | undefined;

/**
 * The default per-key backoff: 100 ms after the first failure (see the README for why not client-go's
 * 5 ms), doubling, capped at 1000 s (client-go's per-item cap), no jitter.
 */
export const DEFAULT_RETRY_BACKOFF: BackoffPolicy = Object.freeze({ initialMs: 100, maxMs: 1_000_000 });

/**
 * An opt-in retry budget ("N attempts, then dead-letter"): a finite schedule instead of unbounded
 * exponential backoff. Failure *n* (counted at one fingerprint) is retried after `delaysMs[n-1]`;
 * the failure after the last step parks the key (dead-letter) until its fingerprint changes or it is
 * released by hand. `[0, 1000, 5000, 30000]` runs a failing reconcile five times (the first run and
 * four retries) and parks it at the fifth failure. An empty schedule parks at the first failure.
 */
export interface RetryBudget {
  /** Delay before each retry, in order; finite numbers ≥ 0. */
  readonly delaysMs: readonly number[];
}

/** One parked (dead-lettered) key, as {@link RetrySchedulerObserver.onPark} and `parked()` report it. */
export interface ParkedKey<K> {
  /** The key. */
  readonly key: K;
  /** The fingerprint it was parked at; only an `offer` with a different one releases it. */
  readonly fingerprint: Fingerprint;
  /** Failures counted at that fingerprint (the schedule's length + 1 when parked, more if it failed again). */
  readonly failures: number;
  /** The error of the last failure. */
  readonly lastError: unknown;
  /** Clock time it was parked at. */
  readonly parkedAt: number;
}

/** Why a parked key was released, as {@link RetrySchedulerObserver.onRelease} reports it. */
export interface ReleasedKey<K> {
  /** The key. */
  readonly key: K;
  /** `fingerprint`: an offer or failure carried a different fingerprint; `manual`: `release(key)`. */
  readonly reason: 'fingerprint' | 'manual';
  /** The fingerprint it had been parked at. */
  readonly parkedFingerprint: Fingerprint;
  /** The fingerprint that released it (`reason: 'fingerprint'` only). */
  readonly fingerprint?: Fingerprint | undefined;
  /** Clock time of the release. */
  readonly at: number;
}

/**
 * Counting hooks (a metrics package maps them to counters; no metrics library here). Called after
 * the scheduler's state is updated, so a hook may call back into it. A throwing hook goes to the
 * `onError` option and never changes what the scheduler does.
 *
 * @typeParam K - the key type.
 */
export interface RetrySchedulerObserver<K> {
  /** A failure scheduled a retry (client-go's `retries_total`). */
  onFailure?(event: {
    readonly key: K;
    readonly failures: number;
    readonly delayMs: number;
    readonly at: number;
    readonly error: unknown;
  }): void;
  /** A requeue-after was requested; `deadline` is the one now pending (earliest wins). */
  onRequeue?(event: { readonly key: K; readonly delayMs: number; readonly deadline: number; readonly at: number }): void;
  /** A key exhausted its budget and was parked (dead-lettered). */
  onPark?(event: ParkedKey<K>): void;
  /** A parked key was released. */
  onRelease?(event: ReleasedKey<K>): void;
}

/** Options for `RetryScheduler`. */
export interface RetrySchedulerOptions<K> {
  /**
   * Called once when a key's deadline (retry or requeue-after) passes, after the key has left the
   * pending set, so it may call back re-entrantly. The caller enqueues the key (the scheduler holds
   * no queue). A throw is caught, passed to `onError`, and never stops later retries.
   */
  onRetry: (key: K) => void;
  /**
   * The delay of a key's n-th consecutive failure (primitives' {@link BackoffPolicy}: `initialMs`,
   * multiplied by `factor` per further failure, capped at `maxMs`, which may be `Infinity`).
   * `resetAfterMs` does not apply: a key's count resets on success (`forget`/`requeueAfter`).
   * Default {@link DEFAULT_RETRY_BACKOFF}. Not with `budget`.
   */
  backoff?: BackoffPolicy | undefined;
  /** Opt-in finite retry schedule with parking; replaces the exponential backoff. Default: none (never parks). */
  budget?: RetryBudget | undefined;
  /** Counting hooks. */
  observer?: RetrySchedulerObserver<K> | undefined;
  /** Time source. Default `systemClock`. */
  clock?: Clock | undefined;
  /** Receives what `onRetry` or an observer hook threw. Without it such errors are dropped; a throwing `onError` is ignored. */
  onError?: ((error: unknown, key: K) => void) | undefined;
}

/** The validated form of {@link RetrySchedulerOptions}' timing fields. */
export interface Timing {
  readonly backoff: BackoffPolicy;
  /** Frozen copy of the budget schedule, or `undefined` without a budget. */
  readonly budget: readonly number[] | undefined;
}

/**
 * Validates the timing options.
 *
 * @throws {@link OptionsError} for a value the scheduler cannot run with.
 */
export function resolveTiming(options: RetrySchedulerOptions<unknown>): Timing {
  const { budget, backoff = DEFAULT_RETRY_BACKOFF } = options;
  if (backoff === null || typeof backoff !== 'object')
    throw new OptionsError('RetryScheduler', 'backoff must be a BackoffPolicy');
  checkBackoffPolicy(backoff, 'RetryScheduler', 'backoff');
  if (budget === undefined) return { backoff, budget: undefined };
  if (options.backoff !== undefined) {
    throw new OptionsError('RetryScheduler', 'budget replaces the exponential backoff: give budget or backoff, not both');
  }
  const delays: unknown = (budget as { delaysMs?: unknown } | null)?.delaysMs;
  if (!Array.isArray(delays) || !delays.every((d) => typeof d === 'number' && Number.isFinite(d) && d >= 0)) {
    throw new OptionsError('RetryScheduler', 'budget.delaysMs must be an array of finite numbers >= 0');
  }
  return { backoff, budget: Object.freeze([...(delays as number[])]) };
}
