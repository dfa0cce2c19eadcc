/** Validation of {@link StreamDriverOptions}: every bad value is a typed error before anything runs. */
import { DEFAULT_SOURCE_RETRY } from '@reconcile-loop/object-store';
import { MAX_TIMER_MS, OptionsError, checkBackoffPolicy, type BackoffPolicy, type Key } from '@reconcile-loop/primitives';
import type { StreamDriverOptions } from './driver.js';

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
