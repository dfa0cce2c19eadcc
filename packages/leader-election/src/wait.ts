import type { Clock } from '@reconcile-loop/primitives';

const KEEP_ALIVE = Object.freeze({ keepAlive: true });

/**
 * Resolves `true` once every promise in `work` has settled, or `false` when `delayMs` passes
 * first. Never rejects (a rejected piece of work has settled).
 */
export function settledWithin(clock: Clock, work: Iterable<Promise<unknown>>, delayMs: number): Promise<boolean> {
  const all = Promise.allSettled([...work]).then(() => true);
  if (delayMs <= 0) return Promise.race([all, Promise.resolve(false)]);
  let handle: unknown;
  const timeout = new Promise<boolean>((resolve) => {
    handle = clock.setTimeout(() => resolve(false), delayMs, KEEP_ALIVE);
  });
  return Promise.race([all, timeout]).finally(() => clock.clearTimeout(handle));
}
