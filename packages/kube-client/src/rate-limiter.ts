import { OptionsError } from '@reconcile-loop/primitives';
import { abortReason, type Clock } from '@reconcile-loop/primitives';
import {} from './errors.js';

/** A client-side request limiter. */
export interface RateLimiter {
  /**
   * Resolves when one request may go. Rejects with the signal's reason when it aborts, and with
   * `onTooLong()`'s error at once (taking nothing) when the wait would exceed `maxWaitMs`.
   */
  wait(signal: AbortSignal, maxWaitMs: number, onTooLong: () => Error): Promise<void>;
}

/** client-go's `rest.Config` defaults: `QPS: 5`, `Burst: 10`. */
export const DEFAULT_QPS = 5;
/** client-go's `rest.Config` default `Burst`. */
export const DEFAULT_BURST = 10;

/** Options of {@link TokenBucketRateLimiter}. */
export interface TokenBucketOptions {
  /** Sustained requests per second (client-go `QPS`). Default 5. */
  readonly qps?: number | undefined;
  /** Requests that may go at once after a quiet spell (client-go `Burst`). Default 10. */
  readonly burst?: number | undefined;
  readonly clock: Clock;
}

/**
 * A token bucket like client-go's `flowcontrol.NewTokenBucketRateLimiter` (x/time/rate): it starts
 * full, refills at `qps` up to `burst`, and serves waiters in call order.
 *
 * Invariant: a waiter reserves its token when it calls (`tokens` may go negative), so its wait is
 * fixed at call time and later callers queue behind it; an aborted waiter hands its token back, as
 * x/time/rate's `Reservation.Cancel` does, so an abort never costs the others throughput.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly qps: number;
  readonly burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(options: TokenBucketOptions) {
    const qps = options.qps ?? DEFAULT_QPS;
    const burst = options.burst ?? DEFAULT_BURST;
    if (!(qps > 0) || !Number.isFinite(qps))
      throw new OptionsError('RateLimiter', `qps must be a finite number > 0, got ${String(qps)}`);
    if (!Number.isInteger(burst) || burst < 1)
      throw new OptionsError('RateLimiter', `burst must be an integer >= 1, got ${String(burst)}`);
    this.qps = qps;
    this.burst = burst;
    this.#clock = options.clock;
    this.#tokens = burst;
    this.#last = options.clock.now();
  }

  #refill(): void {
    const now = this.#clock.now();
    if (now > this.#last) {
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
      this.#last = now;
    }
  }

  /** Tokens available now (negative while waiters hold reservations). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /** Takes a token if one is available now, without waiting. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  wait(signal: AbortSignal, maxWaitMs: number, onTooLong: () => Error): Promise<void> {
    if (signal.aborted) return Promise.reject(abortReason(signal));
    this.#refill();
    const waitMs = this.#tokens >= 1 ? 0 : ((1 - this.#tokens) / this.qps) * 1000;
    if (waitMs > maxWaitMs) return Promise.reject(onTooLong());
    this.#tokens -= 1;
    if (waitMs === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#clock.clearTimeout(handle);
        this.#refill();
        this.#tokens = Math.min(this.burst, this.#tokens + 1);
        reject(abortReason(signal));
      };
      const handle = this.#clock.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
