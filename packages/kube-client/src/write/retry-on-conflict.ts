import {
  backoffDelay,
  checkBackoffPolicy,
  OptionsError,
  sleep,
  systemClock,
  type BackoffPolicy,
  type Clock,
} from '@reconcile-loop/primitives';
import { isConflict } from '../errors.js';

/** How often and how fast {@link retryOnConflict} retries: apimachinery's `wait.Backoff`, as a policy plus a count. */
export interface ConflictRetry {
  /** The sleeps between attempts (primitives' one backoff policy). */
  readonly retry: BackoffPolicy;
  /** Attempts in all (not retries): the function runs at most this many times (`wait.Backoff.Steps`). */
  readonly attempts: number;
}

/** client-go `retry.DefaultRetry`: 5 attempts, 10 ms apart, jitter 0.1 — for conflicts, which clear at once. */
export const DEFAULT_RETRY: ConflictRetry = Object.freeze({
  retry: Object.freeze({ initialMs: 10, maxMs: 10, factor: 1, jitter: 0.1 }),
  attempts: 5,
});
/** client-go `retry.DefaultBackoff`: 4 attempts, 10/50/250 ms, jitter 0.1 — for errors that take a moment to clear. */
export const DEFAULT_BACKOFF: ConflictRetry = Object.freeze({
  retry: Object.freeze({ initialMs: 10, maxMs: 250, factor: 5, jitter: 0.1 }),
  attempts: 4,
});

/** Options of {@link retryOnConflict} and the helpers built on it (spread {@link DEFAULT_BACKOFF} in for slower errors). */
export interface RetryOptions {
  /** The sleeps between attempts. Default {@link DEFAULT_RETRY}'s (10 ms, constant, jitter 0.1). */
  readonly retry?: BackoffPolicy | undefined;
  /** Attempts in all. Default {@link DEFAULT_RETRY}'s (5). */
  readonly attempts?: number | undefined;
  /** What the sleeps wait on. Default the system clock (helpers pass the client's). */
  readonly clock?: Clock | undefined;
  /** Aborts a sleep between attempts (and is passed to every request by the helpers). */
  readonly signal?: AbortSignal | undefined;
  /** Jitter source in [0, 1). Default `Math.random`. */
  readonly random?: (() => number) | undefined;
  /** Which errors are retried. Default {@link isConflict}. */
  readonly retriable?: ((error: unknown) => boolean) | undefined;
}

/**
 * client-go's `retry.RetryOnConflict`: runs `attempt` (which must re-read the object and re-apply
 * its mutation to what it read), and when it fails with a 409 Conflict runs it again after the
 * `retry` policy's delay, at most `attempts` times in all. Any other error, or the last conflict, is thrown
 * as it is. `attempt` gets its 1-based number.
 *
 * Invariant: a retry never reuses a value read before the conflict; that is why the whole
 * read-mutate-write is the function, not just the write.
 */
export async function retryOnConflict<R>(attempt: (attempt: number) => Promise<R>, options: RetryOptions = {}): Promise<R> {
  const policy = options.retry ?? DEFAULT_RETRY.retry;
  const attempts = options.attempts ?? DEFAULT_RETRY.attempts;
  checkBackoffPolicy(policy, 'retryOnConflict', 'retry');
  if (!(Number.isInteger(attempts) && attempts >= 1))
    throw new OptionsError('retryOnConflict', `attempts must be an integer >= 1, got ${String(attempts)}`);
  const clock = options.clock ?? systemClock;
  const retriable = options.retriable ?? isConflict;
  for (let n = 1; ; n++) {
    options.signal?.throwIfAborted();
    try {
      return await attempt(n);
    } catch (error) {
      if (!retriable(error) || n >= attempts) throw error;
    }
    await sleep(clock, backoffDelay(policy, n, options.random), options.signal);
  }
}
