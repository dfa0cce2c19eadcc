/**
 * Time as the packages see it. Everything that waits goes through a `Clock`, so tests drive time
 * with a fake one and never sleep for real.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are meaningful). */
  now(): number;
  /** Calls `callback` once after `delayMs`; returns a handle for {@link Clock.clearTimeout}. */
  setTimeout(callback: () => void, delayMs: number): unknown;
  /** Cancels a pending callback; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: unknown): void;
}

/**
 * The process clock. Reads the globals at call time, so `vi.useFakeTimers()` also fakes it.
 * Timers are `unref`'d: a pending retry or resync never keeps the process alive on its own.
 */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, delayMs: number): unknown => {
    const handle = globalThis.setTimeout(callback, delayMs);
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
});

/** Thrown by {@link sleep} (and by waits built on it) when the signal aborts. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Settles as `promise` does, or rejects with the signal's reason ({@link abortReason}) as soon as
 * `signal` aborts (at once when it already has), even if `promise` never settles. Leaves no listener
 * on `signal` once the result settles, and always observes `promise`, so its rejection after it
 * lost the race is never unhandled.
 */
export function raceAbort<V>(promise: Promise<V>, signal: AbortSignal): Promise<V> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(abortReason(signal));
  }
  return new Promise<V>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Resolves after `delayMs` on `clock`, or rejects with the signal's reason as soon as `signal`
 * aborts (also when it is already aborted). Never leaves a timer or listener behind.
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
