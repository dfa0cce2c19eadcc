/**
 * Time as every package sees it. Everything that waits goes through a `Clock`, so tests drive time
 * with a {@link ManualClock} and never sleep for real.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are meaningful). */
  now(): number;
  /**
   * Calls `callback` once after `delayMs` (clamped to `[0, MAX_TIMER_MS]`); returns a handle for
   * {@link Clock.clearTimeout}. See {@link TimerOptions} for whether the wait keeps Node alive.
   */
  setTimeout(callback: () => void, delayMs: number, options?: TimerOptions): unknown;
  /** Cancels a pending callback; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: unknown): void;
}

/** How one wait treats the process. */
export interface TimerOptions {
  /**
   * Whether this pending wait alone keeps Node running. Default false: a pending retry, resync or
   * drain deadline never holds a process open. A wait that IS the work (a standby waiting for its
   * next try at a Lease while `run()` is pending) passes true; an unref'd one there lets Node exit
   * under a pending top-level await (exit code 13).
   */
  readonly keepAlive?: boolean | undefined;
}

/**
 * The longest delay a Node timer takes: 2^31 - 1 ms (24.8 days). Longer ones fire after 1 ms
 * (with a TimeoutOverflowWarning), so every wait is clamped to this.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `delayMs` as a timer can take it: not negative, not NaN, at most {@link MAX_TIMER_MS}. */
export function timerDelay(delayMs: number): number {
  return delayMs > 0 ? Math.min(delayMs, MAX_TIMER_MS) : 0;
}

/**
 * The process clock: `performance.now()` and Node's timers, unref'd unless a wait asks to keep the
 * process alive. Reads the globals at call time, so `vi.useFakeTimers()` also fakes it.
 */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, delayMs: number, options?: TimerOptions): unknown => {
    const handle = globalThis.setTimeout(callback, timerDelay(delayMs));
    if (options?.keepAlive !== true) (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
});
