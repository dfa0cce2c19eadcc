import { setImmediate as immediate } from 'node:timers/promises';

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;

function gcFunction(): Gc {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (typeof gc !== 'function') {
    throw new Error('the memory benchmarks need a forced GC: run node with --expose-gc (pnpm bench does)');
  }
  return gc;
}

/** One full, synchronous GC. */
export function fullGc(): void {
  gcFunction()();
}

/** Full GC, repeated across turns of the event loop so finalizers and weak maps settle. */
export async function settleHeap(): Promise<void> {
  const gc = gcFunction();
  for (let i = 0; i < 4; i++) {
    gc();
    await immediate();
  }
}

/** JS heap in use right now, without collecting. */
export function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

/** JS heap in use after a forced, settled GC. */
export async function heapAfterGc(): Promise<number> {
  await settleHeap();
  return heapUsed();
}
