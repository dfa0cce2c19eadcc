/** The loop's options, their defaults, and their validation (every bad value is a typed error). */
import type { Clock, KeyMap, Logger, ParentKey, Source } from '@reconcile-loop/object-store';
import type { Reconcile } from './context.js';
import { ReconcileLoopOptionsError } from './errors.js';

/** Go's default resync period: 10 hours. */
export const DEFAULT_RESYNC_PERIOD_MS = 10 * 60 * 60 * 1000;
/** controller-runtime's `CacheSyncTimeout` default: `start()` gives up after 2 minutes. */
export const DEFAULT_SYNC_TIMEOUT_MS = 2 * 60 * 1000;
/** controller-runtime's `GracefulShutdownTimeout` default: `stop()` waits at most 30 s for running work. */
export const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS = 30 * 1000;

/** Node clamps a longer timer to 1 ms, which would turn a long period into a busy loop. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Per-parent-key exponential backoff after a failed reconcile. */
export interface RetryOptions {
  /** Delay after the first failure; doubles per further failure. Default: the retry scheduler's (100 ms). */
  baseDelayMs?: number;
  /** Cap on the delay. Default: the retry scheduler's (1000 s). */
  maxDelayMs?: number;
}

/** When `health()` calls the loop not ready or not alive. Every limit is in clock ms. */
export interface HealthLimits {
  /** A source failing (consecutive failures, not healed) longer than this makes the loop not ready. Default 60 000. */
  sourceFailingMs?: number;
  /** A source failing longer than this makes the loop not alive (restart it). Default 600 000 (10 min). */
  sourceWedgedMs?: number;
  /**
   * A source that reports its health, says it is streaming, and delivered no frame (bookmarks
   * count) for longer than this makes the loop not alive. Sources without `health()` (in-process
   * registries) may be silent forever and are never judged by it. Default 900 000 (15 min, above a
   * watch's 10 min server timeout plus the reflector's idle grace).
   */
  sourceSilentMs?: number;
  /** A reconcile running longer than this makes the loop neither ready nor alive. Default 600 000 (10 min). */
  reconcileStuckMs?: number;
}

/** Defaults of {@link HealthLimits}. */
export const DEFAULT_HEALTH_LIMITS: Readonly<Required<HealthLimits>> = Object.freeze({
  sourceFailingMs: 60_000,
  sourceWedgedMs: 600_000,
  sourceSilentMs: 900_000,
  reconcileStuckMs: 600_000,
});

/** Options for {@link ReconcileLoop}. */
export interface ReconcileLoopOptions<T, P extends ParentKey> {
  /**
   * The one source this loop tracks. One per loop because a replace is the whole world of one
   * source: a second source's replace would delete every object of the first from the store.
   */
  source: Source<T>;
  /** Attributes each object to its parent key (e.g. from a label); see `KeyMap`. */
  keyMap: KeyMap<T, P>;
  /** Called for each dequeued parent key, one at a time. */
  reconcile: Reconcile<T, P>;
  /**
   * Re-enqueue every parent that still has members this often (level-triggered backstop).
   * Default {@link DEFAULT_RESYNC_PERIOD_MS} (10 h), no jitter; `0` disables it.
   */
  resyncPeriodMs?: number;
  /** Backoff for failed reconciles. */
  retry?: RetryOptions;
  /** Outer retry: the first reopen of a source stream that ended or failed waits this long, doubling per failure. Default 1000 ms. */
  sourceRetryDelayMs?: number;
  /** Cap of the outer retry. Default 30 000 ms. */
  maxSourceRetryDelayMs?: number;
  /** A stream that listed and stayed open this long resets the outer retry. Default 120 000 ms. */
  sourceHealthyAfterMs?: number;
  /**
   * `start()` rejects with `SyncTimeoutError` (its `cause` the source's last error) when the first
   * replace takes longer. Default {@link DEFAULT_SYNC_TIMEOUT_MS} (2 min, controller-runtime's
   * `CacheSyncTimeout`); `Infinity` waits forever.
   */
  syncTimeoutMs?: number;
  /**
   * Abort a reconcile that runs longer (its signal aborts with `ReconcileTimeoutError`) and count it
   * as a failure, so one hung parent key cannot stall the loop. Default: no limit.
   */
  reconcileTimeoutMs?: number;
  /**
   * How long `stop()` waits for running reconciles and the source to end before it resolves anyway
   * and reports what it abandoned. Default {@link DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS} (30 s,
   * controller-runtime's `GracefulShutdownTimeout`); `Infinity` waits forever.
   */
  gracefulShutdownTimeoutMs?: number;
  /** When `health()` reports the loop not ready / not alive. */
  health?: HealthLimits;
  /**
   * Called (once) when a failure ends a running loop: a source failed permanently after `start()`
   * resolved. The loop has begun stopping itself; `health().error` holds the same error. A failure
   * during `start()` rejects `start()` instead. A throw from `onError` is logged and ignored.
   */
  onError?: (error: unknown) => void;
  /** Time source for every timer. Default `systemClock` (timers are `unref`'d). */
  clock?: Clock;
  /** Default: silent. Every failure that ends the loop also reaches the caller (`start()`, `onError`, `health()`). */
  logger?: Logger;
}

/** The validated numbers. */
export interface LoopSettings {
  readonly resyncPeriodMs: number;
  readonly syncTimeoutMs: number;
  readonly reconcileTimeoutMs: number | undefined;
  readonly gracefulShutdownTimeoutMs: number;
  readonly health: Readonly<Required<HealthLimits>>;
}

/** @throws {ReconcileLoopOptionsError} */
export function validateLoopOptions<T, P extends ParentKey>(options: ReconcileLoopOptions<T, P>): LoopSettings {
  const { source, keyMap, reconcile } = options ?? ({} as Partial<ReconcileLoopOptions<T, P>>);
  if (typeof source?.open !== 'function') throw new ReconcileLoopOptionsError('source must have an open(signal) method');
  if (typeof keyMap !== 'function') throw new ReconcileLoopOptionsError('keyMap must be a function');
  if (typeof reconcile !== 'function') throw new ReconcileLoopOptionsError('reconcile must be a function');
  if (options.onError !== undefined && typeof options.onError !== 'function') throw new ReconcileLoopOptionsError('onError must be a function');
  for (const name of ['sourceRetryDelayMs', 'maxSourceRetryDelayMs', 'sourceHealthyAfterMs'] as const) {
    if (options[name] !== undefined) duration(name, options[name], true);
  }
  const { baseDelayMs, maxDelayMs } = options.retry ?? {};
  if (baseDelayMs !== undefined) duration('retry.baseDelayMs', baseDelayMs, true);
  if (maxDelayMs !== undefined && (typeof maxDelayMs !== 'number' || Number.isNaN(maxDelayMs) || maxDelayMs < (baseDelayMs ?? 0))) {
    throw new ReconcileLoopOptionsError(`retry.maxDelayMs must be a number >= retry.baseDelayMs, got ${String(maxDelayMs)}`);
  }
  const limits = options.health ?? {};
  const health = { ...DEFAULT_HEALTH_LIMITS };
  for (const name of Object.keys(DEFAULT_HEALTH_LIMITS) as Array<keyof HealthLimits>) {
    if (limits[name] !== undefined) health[name] = duration(`health.${name}`, limits[name], false, true);
  }
  return {
    resyncPeriodMs: duration('resyncPeriodMs', options.resyncPeriodMs ?? DEFAULT_RESYNC_PERIOD_MS, true),
    syncTimeoutMs: duration('syncTimeoutMs', options.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS, false, true),
    reconcileTimeoutMs: options.reconcileTimeoutMs === undefined ? undefined : duration('reconcileTimeoutMs', options.reconcileTimeoutMs, false),
    gracefulShutdownTimeoutMs: duration(
      'gracefulShutdownTimeoutMs',
      options.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
      true,
      true,
    ),
    health: Object.freeze(health),
  };
}

/** A delay in ms: finite, within Node's timer range; `Infinity` only where it means "no limit". */
export function duration(name: string, value: unknown, zeroAllowed: boolean, infinityAllowed = false): number {
  if (infinityAllowed && value === Infinity) return Infinity;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zeroAllowed && value === 0) || value > MAX_TIMER_MS) {
    throw new ReconcileLoopOptionsError(
      `${name} must be a number of milliseconds ${zeroAllowed ? '>= 0' : '> 0'} and <= ${MAX_TIMER_MS}` +
        `${infinityAllowed ? ' (or Infinity)' : ''}, got ${String(value)}`,
    );
  }
  return value;
}
