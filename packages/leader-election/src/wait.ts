import type { Clock } from '@reconcile-loop/kube-client';

/** The reason an aborted signal carries (a `DOMException` `AbortError` when it gave none). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Resolves after `delayMs` on `clock`, or rejects with the signal's reason when it aborts; leaves no timer or listener behind. */
export function sleep(clock: Clock, delayMs: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(abortReason(signal));
    };
    const handle = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, delayMs));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Resolves `true` once every promise in `work` has settled, or `false` when `delayMs` passes
 * first. Never rejects (a rejected piece of work has settled).
 */
export function settledWithin(clock: Clock, work: Iterable<Promise<unknown>>, delayMs: number): Promise<boolean> {
  const all = Promise.allSettled([...work]).then(() => true);
  if (delayMs <= 0) return Promise.race([all, Promise.resolve(false)]);
  let handle: unknown;
  const timeout = new Promise<boolean>((resolve) => {
    handle = clock.setTimeout(() => resolve(false), delayMs);
  });
  return Promise.race([all, timeout]).finally(() => clock.clearTimeout(handle));
}
