/**
 * The outer retry's delay: exponential from a base, capped, optionally jittered, and reset only by a
 * healthy stretch. client-go's reflector wraps `ListAndWatch` in a `BackoffManager` built the same
 * way (800 ms base, 30 s cap, factor 2, jitter 1.0, reset after 2 min without a backoff); a flat
 * retry is what let a stream that fails at once re-LIST every second forever.
 */

/** Default base of the outer retry: the first reopen waits this long. */
export const DEFAULT_SOURCE_RETRY_DELAY_MS = 1_000;
/** Default cap of the outer retry (client-go's reflector backoff cap). */
export const DEFAULT_MAX_SOURCE_RETRY_DELAY_MS = 30_000;
/**
 * Default healthy stretch: a stream that applied its listing and then stayed open this long resets
 * the backoff when it ends. client-go resets its reflector backoff after 2 min without a failure.
 */
export const DEFAULT_SOURCE_HEALTHY_AFTER_MS = 120_000;

/** How one stream ended, as far as the backoff is concerned. */
export interface StreamOutcome {
  /** The stream applied its listing (its first replace). */
  readonly listed: boolean;
  /** How long it stayed open, in clock ms. */
  readonly openMs: number;
}

/** Settings of {@link SourceBackoff}; validated by the driver. */
export interface SourceBackoffSettings {
  readonly baseMs: number;
  readonly maxMs: number;
  readonly healthyAfterMs: number;
  /** 0 = none; `f` stretches each delay by up to `f × delay` (client-go uses 1.0). */
  readonly jitter: number;
  readonly random: () => number;
}

/**
 * Counts consecutive unhealthy streams. Invariant: `failures` is the number of streams that ended
 * since the last healthy one (one that listed and then ran `healthyAfterMs`), so a source that fails
 * right after every relist keeps doubling its delay instead of being reset by its own reopen.
 */
export class SourceBackoff {
  readonly #settings: SourceBackoffSettings;
  #failures = 0;

  constructor(settings: SourceBackoffSettings) {
    this.#settings = settings;
  }

  /** Streams ended since the last healthy stretch. */
  get failures(): number {
    return this.#failures;
  }

  /** Records how a stream ended and returns how long to wait before reopening. */
  next(outcome: StreamOutcome): number {
    const { baseMs, maxMs, healthyAfterMs, jitter, random } = this.#settings;
    if (outcome.listed && outcome.openMs >= healthyAfterMs) this.#failures = 0;
    this.#failures += 1;
    // 2 ** 1074 would overflow to Infinity long after the cap applies; clamp the exponent first.
    const exponential = baseMs * 2 ** Math.min(this.#failures - 1, 52);
    const capped = Math.min(exponential, maxMs);
    return jitter > 0 ? capped + capped * jitter * random() : capped;
  }

  /** A stream is healthy again (it listed and ran `healthyAfterMs`). */
  reset(): void {
    this.#failures = 0;
  }
}
