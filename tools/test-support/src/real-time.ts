import { systemClock, type Clock } from '@reconcile-loop/primitives';

/**
 * The system clock running faster by `1000 / msPerSecond`: a component's 1000 ms last `msPerSecond`
 * real milliseconds. Integration tests scale a server's `timeoutSeconds` unit by the same amount, so
 * timeouts, idle timeouts and backoffs keep their proportions over real HTTP.
 */
export function scaledClock(msPerSecond: number): Clock {
  const factor = 1000 / msPerSecond;
  return {
    now: () => systemClock.now() * factor,
    setTimeout: (callback, delayMs) => systemClock.setTimeout(callback, delayMs / factor),
    clearTimeout: (handle) => systemClock.clearTimeout(handle),
  };
}

/** Resolves with `promise`, or rejects after `ms` real milliseconds naming what never happened. */
export function within<V>(promise: Promise<V>, what: string, ms: number): Promise<V> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
