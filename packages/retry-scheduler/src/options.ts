import { OptionsError } from '@reconcile-loop/primitives';
import type { Clock } from '@reconcile-loop/primitives';

/**
 * What a parked key is parked *at*: a value the loop derives from the parent (its
 * `metadata.generation` by default). Primitives only, compared by value (SameValueZero), so "the
 * fingerprint changed" means the parent's spec changed, not that a new object was built.
 */
export type Fingerprint = string | number | bigint | boolean | null | undefined;

/** Default delay after a key's first failure: 100 ms (see the README for why not client-go's 5 ms). */
export const DEFAULT_BASE_DELAY_MS = 100;
/** Default cap on the delay: 1000 s, client-go's per-item cap. */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;

/**
 * An opt-in retry budget (seed 004's rebuild budget): a finite schedule instead of unbounded
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
  readonly fingerprint?: Fingerprint;
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
  /** Delay after the first failure; doubles with each further failure. Default {@link DEFAULT_BASE_DELAY_MS}. Not with `budget`. */
  baseDelayMs?: number;
  /** Cap on the delay; `Infinity` means no cap. Default {@link DEFAULT_MAX_DELAY_MS}. Not with `budget`. */
  maxDelayMs?: number;
  /** Opt-in finite retry schedule with parking; replaces the exponential backoff. Default: none (never parks). */
  budget?: RetryBudget;
  /** Counting hooks. */
  observer?: RetrySchedulerObserver<K>;
  /** Time source. Default `systemClock`. */
  clock?: Clock;
  /** Receives what `onRetry` or an observer hook threw. Without it such errors are dropped; a throwing `onError` is ignored. */
  onError?: (error: unknown, key: K) => void;
}

/** The validated form of {@link RetrySchedulerOptions}' timing fields. */
export interface Timing {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Frozen copy of the budget schedule, or `undefined` without a budget. */
  readonly budget: readonly number[] | undefined;
}

/**
 * Validates the timing options.
 *
 * @throws {@link OptionsError} for a value the scheduler cannot run with.
 */
export function resolveTiming(options: RetrySchedulerOptions<unknown>): Timing {
  const { budget, baseDelayMs = DEFAULT_BASE_DELAY_MS, maxDelayMs = DEFAULT_MAX_DELAY_MS } = options;
  if (typeof baseDelayMs !== 'number' || !Number.isFinite(baseDelayMs) || baseDelayMs < 0) {
    throw new OptionsError('RetryScheduler', `baseDelayMs must be a finite number >= 0; got ${String(baseDelayMs)}`);
  }
  if (typeof maxDelayMs !== 'number' || Number.isNaN(maxDelayMs) || maxDelayMs < baseDelayMs) {
    throw new OptionsError(
      'RetryScheduler',
      `maxDelayMs must be a number >= baseDelayMs (${baseDelayMs}); got ${String(maxDelayMs)}`,
    );
  }
  if (budget === undefined) return { baseDelayMs, maxDelayMs, budget: undefined };
  if (options.baseDelayMs !== undefined || options.maxDelayMs !== undefined) {
    throw new OptionsError(
      'RetryScheduler',
      'budget replaces the exponential backoff: give budget or baseDelayMs/maxDelayMs, not both',
    );
  }
  const delays: unknown = (budget as { delaysMs?: unknown } | null)?.delaysMs;
  if (!Array.isArray(delays) || !delays.every((d) => typeof d === 'number' && Number.isFinite(d) && d >= 0)) {
    throw new OptionsError('RetryScheduler', 'budget.delaysMs must be an array of finite numbers >= 0');
  }
  return { baseDelayMs, maxDelayMs, budget: Object.freeze([...(delays as number[])]) };
}
