import { setImmediate as immediate } from 'node:timers/promises';
import { WorkQueue } from '@reconcile-loop/work-queue';
import type { BenchContext } from '../lib/context.js';
import { fmt, fmtSummary, printTable, scaled, summarize, type Summary } from '../lib/stats.js';

/** Result of benchmark 6. */
export interface QueueResult {
  distinctKeys: number;
  adds: number;
  /** Share of adds that found their key already queued. */
  duplicateShare: number;
  /** add + tryGet calls per second, one synchronous caller. */
  syncOpsPerSec: Summary;
  /** Same pattern on a bare Set + array (the data-structure floor). */
  floorOpsPerSec: Summary;
  /** add calls plus keys delivered to an awaiting `get` consumer, per second. */
  asyncOpsPerSec: Summary;
}

function randomIndices(count: number, range: number, seed: number): Uint32Array {
  const out = new Uint32Array(count);
  let s = seed;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (s >>> 0) % range;
  }
  return out;
}

/** One add per index, one tryGet after every 4th add: the queue stays near-full, so most adds are duplicates. */
function syncRun(keys: readonly string[], indices: Uint32Array): { ms: number; ops: number; fresh: number } {
  const queue = new WorkQueue<string>();
  let ops = 0;
  let fresh = 0;
  const start = performance.now();
  for (let i = 0; i < indices.length; i++) {
    const key = keys[indices[i]!]!;
    const before = queue.size;
    queue.add(key);
    if (queue.size !== before) fresh++;
    ops++;
    if ((i & 3) === 3) {
      const got = queue.tryGet();
      if (got !== undefined) queue.done(got); // handed out and finished at once: no key stays held
      ops++;
    }
  }
  return { ms: performance.now() - start, ops, fresh };
}

/** The floor: the same pattern on an insertion-ordered Set with no queue logic around it. */
function floorRun(keys: readonly string[], indices: Uint32Array): { ms: number; ops: number; fresh: number } {
  const set = new Set<string>();
  let ops = 0;
  let fresh = 0;
  const start = performance.now();
  for (let i = 0; i < indices.length; i++) {
    const key = keys[indices[i]!]!;
    const before = set.size;
    set.add(key);
    if (set.size !== before) fresh++;
    ops++;
    if ((i & 3) === 3) {
      const first = set.values().next();
      if (!first.done) set.delete(first.value);
      ops++;
    }
  }
  return { ms: performance.now() - start, ops, fresh };
}

/** A worker awaiting `get` (as the loop's worker does) while a producer adds bursts of 64 and yields. */
async function asyncRun(keys: readonly string[], indices: Uint32Array): Promise<{ ms: number; ops: number }> {
  const queue = new WorkQueue<string>();
  let delivered = 0;
  const worker = (async () => {
    for (;;) {
      try {
        queue.done(await queue.get());
      } catch {
        return;
      }
      delivered++;
    }
  })();
  const start = performance.now();
  for (let i = 0; i < indices.length; i++) {
    queue.add(keys[indices[i]!]!);
    if ((i & 63) === 63) await immediate();
  }
  while (queue.size > 0) await immediate();
  const ms = performance.now() - start;
  queue.stop();
  await worker;
  return { ms, ops: indices.length + delivered };
}

/** Benchmark 6: adds + gets per second with heavy duplication. */
export async function runQueue(ctx: BenchContext): Promise<QueueResult> {
  const distinct = ctx.smoke ? 100 : 1_000;
  const adds = ctx.smoke ? 20_000 : 2_000_000;
  const keys = Array.from({ length: distinct }, (_, i) => `cell-${i}`);
  const indices = randomIndices(adds, distinct, 0x2545f491);

  // Warm up the JIT on a slice, so the first measured run is not the interpreter's.
  syncRun(keys, indices.subarray(0, Math.min(adds, 50_000)));
  floorRun(keys, indices.subarray(0, Math.min(adds, 50_000)));

  const sync: number[] = [];
  const floor: number[] = [];
  const asyncRates: number[] = [];
  let fresh = 0;
  for (let r = 0; r < ctx.runs; r++) {
    const s = syncRun(keys, indices);
    sync.push(s.ops / (s.ms / 1000));
    fresh = s.fresh;
    const f = floorRun(keys, indices);
    floor.push(f.ops / (f.ms / 1000));
    const a = await asyncRun(keys, indices);
    asyncRates.push(a.ops / (a.ms / 1000));
  }
  const result: QueueResult = {
    distinctKeys: distinct,
    adds,
    duplicateShare: 1 - fresh / adds,
    syncOpsPerSec: summarize(sync),
    floorOpsPerSec: summarize(floor),
    asyncOpsPerSec: summarize(asyncRates),
  };
  const m = (s: Summary): string => fmtSummary(scaled(s, 1e6));
  printTable(
    `6. Queue: ${distinct.toLocaleString('en-US')} distinct parent keys, ${adds.toLocaleString('en-US')} adds, ${fmt(result.duplicateShare * 100)} % duplicates (M ops/s, min / median / max of ${ctx.runs})`,
    ['pattern', 'M ops/s', 'vs bare Set'],
    [
      [
        'WorkQueue add + tryGet (sync)',
        m(result.syncOpsPerSec),
        `${fmt(result.syncOpsPerSec.median / result.floorOpsPerSec.median)}×`,
      ],
      ['bare Set + delete-first (floor)', m(result.floorOpsPerSec), '1×'],
      [
        'WorkQueue add + awaiting get (worker)',
        m(result.asyncOpsPerSec),
        `${fmt(result.asyncOpsPerSec.median / result.floorOpsPerSec.median)}×`,
      ],
    ],
  );
  return result;
}
