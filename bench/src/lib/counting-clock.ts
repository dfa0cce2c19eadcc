import { systemClock, type Clock } from '@reconcile-loop/primitives';

/** A real clock that counts what is asked of it: timers armed, cleared, and callbacks that ran (wakeups). */
export interface CountingClock extends Clock {
  readonly armed: number;
  readonly cleared: number;
  readonly wakeups: number;
}

/** Wraps `inner` (default {@link systemClock}) and counts every timer it arms, clears and fires. */
export function countingClock(inner: Clock = systemClock): CountingClock {
  let armed = 0;
  let cleared = 0;
  let wakeups = 0;
  return {
    now: () => inner.now(),
    setTimeout: (callback, delayMs) => {
      armed += 1;
      return inner.setTimeout(() => {
        wakeups += 1;
        callback();
      }, delayMs);
    },
    clearTimeout: (handle) => {
      cleared += 1;
      inner.clearTimeout(handle);
    },
    get armed() {
      return armed;
    },
    get cleared() {
      return cleared;
    },
    get wakeups() {
      return wakeups;
    },
  };
}
