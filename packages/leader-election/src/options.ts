import type { Clock, Logger } from '@reconcile-loop/primitives';
import { OptionsError } from '@reconcile-loop/primitives';
import type { ResourceLock } from './lease-lock.js';

/** client-go's `LeaseDuration` default (kube-controller-manager, controller-runtime): 15 s. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** client-go's `RenewDeadline` default: 10 s. */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/** client-go's `RetryPeriod` default: 2 s. */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** client-go's `JitterFactor`: a candidate waits `retryPeriod · (1 + random · 1.2)` between tries. */
export const JITTER_FACTOR = 1.2;

/** Callbacks of an elector (client-go's `LeaderCallbacks`). Each runs guarded: a throw or a rejection is logged. */
export interface LeaderCallbacks {
  /**
   * This replica became leader. `signal` aborts (with a `LeadershipLostError`) the moment leadership
   * is lost or the elector stops. A returned promise is the leading work: with `releaseOnCancel`,
   * the Lease is released only once it has settled.
   */
  readonly onStartedLeading?: ((signal: AbortSignal) => void | Promise<unknown>) | undefined;
  /** This replica stopped leading (lost the lease, or stopped). Runs after the term signal aborted. */
  readonly onStoppedLeading?: (() => void) | undefined;
  /** The observed holder changed (`''` when the lease was released). Also called for this replica. */
  readonly onNewLeader?: ((identity: string) => void) | undefined;
}

/** How to build a {@link LeaderElector}. Durations in milliseconds, on `clock`. */
export interface LeaderElectorOptions extends LeaderCallbacks {
  /** Where the record lives, usually a `LeaseLock`. */
  readonly lock: ResourceLock;
  /**
   * How long a candidate waits, from when it observed the record last change, before taking over.
   * Whole seconds (a Lease records seconds). Default 15 000.
   */
  readonly leaseDurationMs?: number | undefined;
  /** A leader that has not renewed within this, counted from sending its last successful renewal, steps down. Default 10 000. */
  readonly renewDeadlineMs?: number | undefined;
  /** Between tries to acquire (jittered) and to renew. Default 2 000. */
  readonly retryPeriodMs?: number | undefined;
  /**
   * On a graceful stop, write the Lease released (no holder, 1 s) once the leading work settled, so
   * a standby takes over in about a retry period instead of a lease duration. Default `true`
   * (client-go: `false`); turn it off only when the leading work cannot be stopped promptly.
   */
  readonly releaseOnCancel?: boolean | undefined;
  /** Monotonic time for every decision and wait. Default `systemClock`; every wait of the elector asks it to keep Node alive while `run()` is pending. */
  readonly clock?: Clock | undefined;
  /** Wall time written into the record's `MicroTime`s (never compared with anything). Default `Date.now`. */
  readonly wallClock?: (() => number) | undefined;
  /** Jitter source in [0, 1). Default `Math.random`. */
  readonly random?: (() => number) | undefined;
  /** Where every failure and transition is logged. Default silent. */
  readonly logger?: Logger | undefined;
}

/** The options after defaults and validation. */
export interface ResolvedTimings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

function duration(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw new OptionsError('LeaderElector', `${name} must be a finite number > 0, got ${String(value)}`);
  return value;
}

/**
 * client-go's `NewLeaderElector` checks, plus one: the lease duration must be whole seconds,
 * because a Lease records seconds and a candidate waits what the record says. A truncated 1.5 s
 * lease would be 1 s to others while the holder trusts itself for up to its renew deadline.
 */
export function resolveTimings(
  options: Pick<LeaderElectorOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>,
): ResolvedTimings {
  const leaseDurationMs = duration('leaseDurationMs', options.leaseDurationMs, DEFAULT_LEASE_DURATION_MS);
  const renewDeadlineMs = duration('renewDeadlineMs', options.renewDeadlineMs, DEFAULT_RENEW_DEADLINE_MS);
  const retryPeriodMs = duration('retryPeriodMs', options.retryPeriodMs, DEFAULT_RETRY_PERIOD_MS);
  if (leaseDurationMs % 1000 !== 0)
    throw new OptionsError(
      'LeaderElector',
      `leaseDurationMs must be whole seconds (a Lease records seconds), got ${leaseDurationMs}`,
    );
  if (leaseDurationMs <= renewDeadlineMs)
    throw new OptionsError('LeaderElector', 'leaseDuration must be greater than renewDeadline');
  if (renewDeadlineMs <= JITTER_FACTOR * retryPeriodMs)
    throw new OptionsError('LeaderElector', 'renewDeadline must be greater than retryPeriod*JitterFactor');
  return { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}

/** Checks the parts of the options that are not timings. */
export function checkOptions(options: LeaderElectorOptions): void {
  if (options === null || typeof options !== 'object') throw new OptionsError('LeaderElector', 'options are required');
  const lock = options.lock as Partial<ResourceLock> | undefined;
  if (
    lock === undefined ||
    typeof lock.get !== 'function' ||
    typeof lock.update !== 'function' ||
    typeof lock.create !== 'function'
  ) {
    throw new OptionsError('LeaderElector', 'Lock must not be nil.');
  }
  if (typeof lock.identity !== 'string' || lock.identity === '')
    throw new OptionsError('LeaderElector', 'Lock identity is empty');
  for (const name of ['onStartedLeading', 'onStoppedLeading', 'onNewLeader'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw new OptionsError('LeaderElector', `${name} must be a function`);
  }
}
