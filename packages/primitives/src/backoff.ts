import type { Clock } from './clock.js';
import { OptionsError } from './errors.js';

/**
 * One exponential backoff policy for every retry in every package (a source's reconnects, a key's
 * reconcile retries, a standby's tries at a Lease, a write retried on conflict): client-go's
 * `wait.Backoff` plus its `BackoffManager`'s reset. The delay of the n-th consecutive failure is
 * `min(maxMs, initialMs * factor^(n-1))`, stretched by up to `jitter` of itself at random.
 */
export interface BackoffPolicy {
  /** The first delay, in ms. */
  readonly initialMs: number;
  /** No delay (before jitter) is longer than this, in ms. */
  readonly maxMs: number;
  /** Each delay is the previous one times this. Default 2; 1 keeps it constant. */
  readonly factor?: number | undefined;
  /** Each delay is lengthened by up to this fraction of itself, at random. Default 0. */
  readonly jitter?: number | undefined;
  /**
   * A failure this long after the previous one starts over at `initialMs` (client-go resets its
   * reflector's backoff after 2 minutes without one). Default never: only `reset()` starts over.
   */
  readonly resetAfterMs?: number | undefined;
}

// 2 ** 1074 overflows to Infinity long after any cap applies; the exponent stops here.
const MAX_EXPONENT = 1_000;

/**
 * The delay before retry number `failures` (1 = the first failure), without state: what
 * {@link Backoff} computes, for callers that keep the count themselves (a retry schedule per key).
 */
export function backoffDelay(policy: BackoffPolicy, failures: number, random: () => number = Math.random): number {
  const { initialMs, maxMs, factor = 2, jitter = 0 } = policy;
  const exponent = Math.min(Math.max(0, failures - 1), MAX_EXPONENT);
  const capped = Math.min(maxMs, initialMs * factor ** exponent);
  return jitter > 0 ? capped + capped * jitter * random() : capped;
}

/** Throws {@link OptionsError} (naming `component` and `option`) unless `policy` is usable. */
export function checkBackoffPolicy(policy: BackoffPolicy, component: string, option: string): void {
  const { initialMs, maxMs, factor = 2, jitter = 0, resetAfterMs } = policy;
  const finite = (v: number): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  if (!finite(initialMs))
    throw new OptionsError(component, `${option}.initialMs must be a finite number >= 0, got ${String(initialMs)}`);
  if (!(typeof maxMs === 'number' && maxMs >= initialMs)) {
    throw new OptionsError(component, `${option}.maxMs must be a number >= initialMs (${initialMs}), got ${String(maxMs)}`);
  }
  if (!(typeof factor === 'number' && Number.isFinite(factor) && factor >= 1)) {
    throw new OptionsError(component, `${option}.factor must be a finite number >= 1, got ${String(factor)}`);
  }
  if (!finite(jitter)) throw new OptionsError(component, `${option}.jitter must be a finite number >= 0, got ${String(jitter)}`);
  if (resetAfterMs !== undefined && !(typeof resetAfterMs === 'number' && resetAfterMs > 0)) {
    throw new OptionsError(component, `${option}.resetAfterMs must be a number > 0, got ${String(resetAfterMs)}`);
  }
}

/** What a {@link Backoff} reads besides its policy. */
export interface BackoffOptions {
  /** Measures the gap for `resetAfterMs`. Required when the policy sets it. */
  readonly clock?: Clock | undefined;
  /** Jitter source in [0, 1). Default `Math.random`. */
  readonly random?: (() => number) | undefined;
}

/**
 * The state of one backoff: how many failures in a row. Invariant: `failures` counts the failures
 * since the last `reset()` or the last gap of `resetAfterMs`, so a source that fails right after
 * every reconnect keeps doubling its delay instead of being reset by its own reconnect.
 */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #clock: Clock | undefined;
  readonly #random: () => number;
  #failures = 0;
  #lastFailureAt: number | undefined;

  constructor(policy: BackoffPolicy, options?: BackoffOptions) {
    if (policy.resetAfterMs !== undefined && options?.clock === undefined) {
      throw new OptionsError('Backoff', 'a policy with resetAfterMs needs a clock');
    }
    this.#policy = policy;
    this.#clock = options?.clock;
    this.#random = options?.random ?? Math.random;
  }

  /** Failures counted since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** The delay the next failure would wait, before jitter (and before any reset by time). */
  get nextMs(): number {
    return backoffDelay({ ...this.#policy, jitter: 0 }, this.#failures + 1);
  }

  /**
   * Counts a failure that just happened and returns how long to wait before the next try. A
   * server's `Retry-After` (ms) replaces the exponential delay, bounded below by `initialMs` (no hot
   * loop on `Retry-After: 0`) and above by `maxMs`.
   */
  next(retryAfterMs?: number): number {
    const now = this.#clock?.now();
    const { resetAfterMs } = this.#policy;
    if (
      resetAfterMs !== undefined &&
      now !== undefined &&
      this.#lastFailureAt !== undefined &&
      now - this.#lastFailureAt >= resetAfterMs
    ) {
      this.#failures = 0;
    }
    this.#lastFailureAt = now;
    this.#failures += 1;
    if (retryAfterMs !== undefined) {
      return Math.min(this.#policy.maxMs, Math.max(this.#policy.initialMs, retryAfterMs));
    }
    return backoffDelay(this.#policy, this.#failures, this.#random);
  }

  /** Back to the first delay (proof of health). */
  reset(): void {
    this.#failures = 0;
    this.#lastFailureAt = undefined;
  }
}
