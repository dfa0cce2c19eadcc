/**
 * Time as the work queue sees it: observer timestamps and drain deadlines. Structurally identical
 * to `Clock` in `@reconcile-loop/object-store` (and `@reconcile-loop/retry-scheduler`), declared
 * again so this package keeps zero runtime dependencies; any one satisfies the others.
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
 * Timers are `unref`'d: a drain deadline never keeps the process alive on its own.
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
