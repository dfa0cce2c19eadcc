/** {@link StreamDriverOptions}, their defaults and their validation: every bad value is a typed error before anything runs. */
import { DEFAULT_SOURCE_RETRY, type Source, type SourceEvent } from '@reconcile-loop/object-store';
import {
  MAX_TIMER_MS,
  OptionsError,
  checkBackoffPolicy,
  type BackoffPolicy,
  type Clock,
  type Key,
  type Logger,
} from '@reconcile-loop/primitives';

/**
 * The one store method the driver needs. `ObjectStore` satisfies it; it returns the parent keys an
 * event affected, computed after the store is updated.
 */
export interface StoreWriter<T, P extends Key> {
  apply(event: SourceEvent<T>): ReadonlySet<P>;
}

/** Default bound on closing a stream (`iterator.return()`); a close still pending after it is abandoned and logged. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

/**
 * The healthy stretch when the source's `retry` policy sets no `resetAfterMs`: a stream that applied
 * its listing and then stayed open this long resets the backoff when it ends. client-go resets its
 * reflector's backoff after 2 min without a failure.
 */
export const DEFAULT_HEALTHY_STREAM_MS = 120_000;

/** Options for {@link StreamDriver}. */
export interface StreamDriverOptions<T, P extends Key> {
  /** Where the source events come from (a reflector, an in-process registry, a test). */
  source: Source<T>;
  /** The cache every event is applied to, before anyone is notified. */
  store: StoreWriter<T, P>;
  /**
   * Called with the parent keys an event affected and the event's type, only after the store holds
   * the event (cache before notify). Not called for an empty set. A `replace` is a listing (the
   * first sync or a relist): a loop may queue what it affected at a lower priority than a change.
   * Must not throw; a throw is logged.
   */
  onAffected: (parents: ReadonlySet<P>, type: SourceEvent<T>['type']) => void;
  /** Random source for the jitter of the source's `retry` policy, in [0, 1). Default `Math.random`. */
  random?: (() => number) | undefined;
  /** Bound on awaiting a stream's close; a close still pending after it is logged and abandoned. Default 5000 ms. */
  closeTimeoutMs?: number | undefined;
  /** Time source for every delay and timestamp. Default `systemClock`. */
  clock?: Clock | undefined;
  /** Default: silent. */
  logger?: Logger | undefined;
}

/** The settings, defaults applied. */
export interface DriverSettings {
  /** The source's own `retry`, or {@link DEFAULT_SOURCE_RETRY}. */
  readonly retry: BackoffPolicy;
  readonly closeTimeoutMs: number;
}

type Defaults = Omit<DriverSettings, 'retry'>;

export function validateDriverOptions<T, P extends Key>(options: StreamDriverOptions<T, P>, defaults: Defaults): DriverSettings {
  const { source, store, onAffected } = options ?? ({} as Partial<StreamDriverOptions<T, P>>);
  if (typeof source?.open !== 'function') throw new OptionsError('StreamDriver', 'source must have an open(signal) method');
  if (typeof store?.apply !== 'function') throw new OptionsError('StreamDriver', 'store must have an apply(event) method');
  if (typeof onAffected !== 'function') throw new OptionsError('StreamDriver', 'onAffected must be a function');
  if (options.random !== undefined && typeof options.random !== 'function')
    throw new OptionsError('StreamDriver', 'random must be a function');
  const retry = source.retry ?? DEFAULT_SOURCE_RETRY;
  if (retry === null || typeof retry !== 'object') throw new OptionsError('StreamDriver', 'source.retry must be a BackoffPolicy');
  checkBackoffPolicy(retry, 'StreamDriver', `source "${source.name}".retry`);
  return {
    retry,
    closeTimeoutMs: positiveMs('closeTimeoutMs', options.closeTimeoutMs ?? defaults.closeTimeoutMs),
  };
}

/** A timer longer than {@link MAX_TIMER_MS} would fire after 1 ms, so a longer bound is refused. */
function positiveMs(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) {
    throw new OptionsError(
      'StreamDriver',
      `${name} must be a number of milliseconds > 0 and <= ${MAX_TIMER_MS}, got ${String(value)}`,
    );
  }
  return value;
}
