import { OptionsError } from '@reconcile-loop/primitives';
import { sleep, systemClock, type Clock } from '@reconcile-loop/primitives';
import { isConflict } from './errors.js';

/** A backoff schedule: apimachinery's `wait.Backoff`. */
export interface Backoff {
  /** Attempts in all (not retries): the function runs at most this many times. */
  readonly steps: number;
  /** The first sleep, in ms. */
  readonly durationMs: number;
  /** Each sleep is the previous one times this (1 keeps it constant). */
  readonly factor: number;
  /** Each sleep is lengthened by up to this fraction of itself, at random. */
  readonly jitter: number;
  /** No sleep is longer than this, in ms. */
  readonly capMs?: number | undefined;
}

/** client-go `retry.DefaultRetry`: 5 attempts, 10 ms apart, jitter 0.1 — for conflicts, which clear at once. */
export const DEFAULT_RETRY: Backoff = Object.freeze({ steps: 5, durationMs: 10, factor: 1, jitter: 0.1 });
/** client-go `retry.DefaultBackoff`: 4 attempts, 10/50/250 ms, jitter 0.1 — for errors that take a moment to clear. */
export const DEFAULT_BACKOFF: Backoff = Object.freeze({ steps: 4, durationMs: 10, factor: 5, jitter: 0.1 });

/** Options of {@link retryOnConflict} and the helpers built on it. */
export interface RetryOptions {
  /** Default {@link DEFAULT_RETRY}. */
  readonly backoff?: Backoff | undefined;
  /** What the sleeps wait on. Default the system clock (helpers pass the client's). */
  readonly clock?: Clock | undefined;
  /** Aborts a sleep between attempts (and is passed to every request by the helpers). */
  readonly signal?: AbortSignal | undefined;
  /** Jitter source in [0, 1). Default `Math.random`. */
  readonly random?: (() => number) | undefined;
  /** Which errors are retried. Default {@link isConflict}. */
  readonly retriable?: ((error: unknown) => boolean) | undefined;
}

/** The sleeps of `backoff` in order (one fewer than its steps), jittered by `random`. */
export function backoffDelays(backoff: Backoff, random: () => number = Math.random): number[] {
  const delays: number[] = [];
  let duration = backoff.durationMs;
  for (let step = 1; step < backoff.steps; step++) {
    let delay = duration;
    if (backoff.factor !== 0) {
      duration = duration * backoff.factor;
      if (backoff.capMs !== undefined && duration > backoff.capMs) duration = backoff.capMs;
    }
    if (backoff.jitter > 0) delay += random() * backoff.jitter * delay;
    delays.push(delay);
  }
  return delays;
}

function checkBackoff(backoff: Backoff): void {
  const ok =
    Number.isInteger(backoff.steps) &&
    backoff.steps >= 1 &&
    backoff.durationMs >= 0 &&
    Number.isFinite(backoff.durationMs) &&
    backoff.factor >= 0 &&
    backoff.jitter >= 0;
  if (!ok) throw new OptionsError('retryOnConflict', `not a usable backoff: ${JSON.stringify(backoff)}`);
}

/**
 * client-go's `retry.RetryOnConflict`: runs `attempt` (which must re-read the object and re-apply
 * its mutation to what it read), and when it fails with a 409 Conflict runs it again after the
 * backoff, at most `backoff.steps` times in all. Any other error, or the last conflict, is thrown
 * as it is. `attempt` gets its 1-based number.
 *
 * Invariant: a retry never reuses a value read before the conflict; that is why the whole
 * read-mutate-write is the function, not just the write.
 */
export async function retryOnConflict<R>(attempt: (attempt: number) => Promise<R>, options: RetryOptions = {}): Promise<R> {
  const backoff = options.backoff ?? DEFAULT_RETRY;
  checkBackoff(backoff);
  const clock = options.clock ?? systemClock;
  const retriable = options.retriable ?? isConflict;
  const delays = backoffDelays(backoff, options.random);
  for (let n = 1; ; n++) {
    options.signal?.throwIfAborted();
    try {
      return await attempt(n);
    } catch (error) {
      if (!retriable(error) || n >= backoff.steps) throw error;
    }
    await sleep(clock, delays[n - 1]!, options.signal);
  }
}
