/**
 * Time as this client sees it. The interface is structurally the `Clock` of
 * `@reconcile-loop/object-store` (which this package does not import: kube-client depends on
 * k8s-types only), so the same `ManualClock` or `systemClock` drives both.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are meaningful). */
  now(): number;
  /** Calls `callback` once after `delayMs`; returns a handle for {@link Clock.clearTimeout}. */
  setTimeout(callback: () => void, delayMs: number): unknown;
  /** Cancels a pending callback; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: unknown): void;
}

/** The process clock: `performance.now()` and unref'd timers, so a pending wait never keeps Node alive. */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, delayMs: number): unknown => {
    const handle = globalThis.setTimeout(callback, delayMs);
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
});

/** The reason an aborted signal rejects with (a `DOMException` `AbortError` when it gave none). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Resolves after `delayMs` on `clock`, or rejects with the signal's reason as soon as it aborts.
 * Leaves no timer and no listener behind either way.
 */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(abortReason(signal!));
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, delayMs));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
