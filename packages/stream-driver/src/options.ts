/** Validation of {@link StreamDriverOptions}: every bad value is a typed error before anything runs. */
import { OptionsError, type Key } from '@reconcile-loop/primitives';

import type { StreamDriverOptions } from './driver.js';

/** Node clamps a longer timer to 1 ms, which would turn a long delay into a busy loop. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The numeric settings, defaults applied. */
export interface DriverSettings {
  readonly sourceRetryDelayMs: number;
  readonly maxSourceRetryDelayMs: number;
  readonly sourceHealthyAfterMs: number;
  readonly sourceRetryJitter: number;
  readonly closeTimeoutMs: number;
}

type Defaults = Omit<DriverSettings, 'sourceRetryJitter'>;

export function validateDriverOptions<T, P extends Key>(options: StreamDriverOptions<T, P>, defaults: Defaults): DriverSettings {
  const { source, store, onAffected } = options ?? ({} as Partial<StreamDriverOptions<T, P>>);
  if (typeof source?.open !== 'function') throw new OptionsError('StreamDriver', 'source must have an open(signal) method');
  if (typeof store?.apply !== 'function') throw new OptionsError('StreamDriver', 'store must have an apply(event) method');
  if (typeof onAffected !== 'function') throw new OptionsError('StreamDriver', 'onAffected must be a function');
  if (options.random !== undefined && typeof options.random !== 'function')
    throw new OptionsError('StreamDriver', 'random must be a function');
  const sourceRetryDelayMs = ms('sourceRetryDelayMs', options.sourceRetryDelayMs ?? defaults.sourceRetryDelayMs, true);
  const maxSourceRetryDelayMs = ms(
    'maxSourceRetryDelayMs',
    options.maxSourceRetryDelayMs ?? Math.max(defaults.maxSourceRetryDelayMs, sourceRetryDelayMs),
    true,
  );
  if (maxSourceRetryDelayMs < sourceRetryDelayMs) {
    throw new OptionsError(
      'StreamDriver',
      `maxSourceRetryDelayMs (${maxSourceRetryDelayMs}) must be >= sourceRetryDelayMs (${sourceRetryDelayMs})`,
    );
  }
  const jitter = options.sourceRetryJitter ?? 0;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw new OptionsError('StreamDriver', `sourceRetryJitter must be a number in [0, 1], got ${String(jitter)}`);
  }
  return {
    sourceRetryDelayMs,
    maxSourceRetryDelayMs,
    sourceHealthyAfterMs: ms('sourceHealthyAfterMs', options.sourceHealthyAfterMs ?? defaults.sourceHealthyAfterMs, true),
    sourceRetryJitter: jitter,
    closeTimeoutMs: ms('closeTimeoutMs', options.closeTimeoutMs ?? defaults.closeTimeoutMs, false),
  };
}

function ms(name: string, value: unknown, zeroAllowed: boolean): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (!zeroAllowed && value === 0) ||
    value > MAX_TIMER_MS
  ) {
    throw new OptionsError(
      'StreamDriver',
      `${name} must be a number of milliseconds ${zeroAllowed ? '>= 0' : '> 0'} and <= ${MAX_TIMER_MS}, got ${String(value)}`,
    );
  }
  return value;
}
