import { setImmediate as immediate, setTimeout as delay } from 'node:timers/promises';
import { InProcessSource, ReconcileLoop } from '@reconcile-loop/loop';
import { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import { WorkQueue } from '@reconcile-loop/work-queue';
import type { BenchContext } from '../lib/context.js';
import { countingClock } from '../lib/counting-clock.js';
import { fmt, fmtSummary, percentiles, printTable, summarize, type Summary } from '../lib/stats.js';

/** Result of benchmark 5. */
export interface RetryResult {
  keys: number;
  /** Per run: p50 / p99 / max of (onRetry time − retry deadline), ms; summarized across runs. */
  latenessP50Ms: Summary;
  latenessP99Ms: Summary;
  latenessMaxMs: Summary;
  /** Same, measured when the worker's `get` receives the key (adds the queue hop). */
  dequeueLatenessP99Ms: Summary;
  /** Timer callbacks per run while retries were pending, and deadlines they served. */
  wakeupsWhilePending: number;
  /** Timer callbacks per second with nothing pending: the scheduler alone, and a whole idle loop. */
  idleWakeupsPerSec: { scheduler: number; loop: number };
  idleWindowMs: number;
}

interface RunStats {
  lateness: number[];
  dequeueLateness: number[];
  wakeups: number;
}

/**
 * 10 000 keys, each failing 1–4 times in a row (latest wins, so stale heap entries pile up),
 * scheduled in bursts across event-loop turns so deadlines spread out; onRetry feeds a WorkQueue
 * drained by an awaiting worker, as in the loop. Real clock.
 */
async function oneRun(
  keyCount: number,
  baseDelayMs: number,
): Promise<RunStats & { scheduler: RetryScheduler<string>; clock: ReturnType<typeof countingClock> }> {
  const clock = countingClock();
  const queue = new WorkQueue<string>();
  const deadlines = new Map<string, number>();
  const lateness: number[] = [];
  const dequeueLateness: number[] = [];
  let fired = 0;
  const scheduler = new RetryScheduler<string>({
    clock,
    backoff: { initialMs: baseDelayMs, maxMs: 1_000_000 },
    onRetry: (key) => {
      lateness.push(clock.now() - deadlines.get(key)!);
      fired++;
      queue.add(key);
    },
  });
  const worker = (async () => {
    for (;;) {
      let key: string;
      try {
        key = await queue.get();
      } catch {
        return;
      }
      dequeueLateness.push(clock.now() - deadlines.get(key)!);
      queue.done(key);
    }
  })();
  for (let i = 0; i < keyCount; i++) {
    const key = `cell-${i}`;
    const failures = 1 + (i % 4);
    for (let f = 0; f < failures; f++) scheduler.fail(key);
    deadlines.set(key, scheduler.deadline(key)!);
    if (i % 250 === 249) await immediate();
  }
  const wakeupsBefore = clock.wakeups;
  const giveUp = clock.now() + 60_000;
  while (fired < keyCount) {
    if (clock.now() > giveUp) throw new Error(`retry benchmark: only ${fired} of ${keyCount} retries fired within 60 s`);
    await delay(5);
  }
  while (queue.size > 0) await immediate();
  queue.stop();
  await worker;
  return { lateness, dequeueLateness, wakeups: clock.wakeups - wakeupsBefore, scheduler, clock };
}

/** Benchmark 5: retry lateness against deadlines, and timer wakeups while nothing is pending. */
export async function runRetry(ctx: BenchContext): Promise<RetryResult> {
  const keyCount = ctx.smoke ? 200 : 10_000;
  const baseDelayMs = ctx.smoke ? 5 : 25;
  const idleWindowMs = ctx.smoke ? 300 : 5_000;

  const p50: number[] = [];
  const p99: number[] = [];
  const max: number[] = [];
  const dq99: number[] = [];
  let wakeupsWhilePending = 0;
  let last: Awaited<ReturnType<typeof oneRun>> | undefined;
  for (let r = 0; r < ctx.runs; r++) {
    last?.scheduler.shutdown();
    last = await oneRun(keyCount, baseDelayMs);
    const l = percentiles(last.lateness);
    p50.push(l.p50);
    p99.push(l.p99);
    max.push(l.max);
    dq99.push(percentiles(last.dequeueLateness).p99);
    wakeupsWhilePending = last.wakeups;
  }

  // Idle: the last scheduler has nothing pending but is alive; a whole loop over an in-process
  // source sits synced with its default 10 h resync armed. Count timer callbacks over one window.
  const scheduler = last!;
  const loopClock = countingClock();
  const source = new InProcessSource<{ parent: string }>(
    'idle',
    Array.from({ length: 64 }, (_, i) => [`bench/pod-${i}`, { parent: `cell-${i % 8}` }] as const),
  );
  let reconciles = 0;
  const loop = new ReconcileLoop<{ parent: string }, string>({
    source,
    keyMap: (pod) => pod.parent,
    reconcile: () => {
      reconciles++;
    },
    clock: loopClock,
  });
  await loop.start();
  while (reconciles < 8) await delay(1);
  const schedulerWakeups0 = scheduler.clock.wakeups;
  const loopWakeups0 = loopClock.wakeups;
  await delay(idleWindowMs);
  const idle = {
    scheduler: (scheduler.clock.wakeups - schedulerWakeups0) / (idleWindowMs / 1000),
    loop: (loopClock.wakeups - loopWakeups0) / (idleWindowMs / 1000),
  };
  await loop.stop();
  scheduler.scheduler.shutdown();

  const result: RetryResult = {
    keys: keyCount,
    latenessP50Ms: summarize(p50),
    latenessP99Ms: summarize(p99),
    latenessMaxMs: summarize(max),
    dequeueLatenessP99Ms: summarize(dq99),
    wakeupsWhilePending,
    idleWakeupsPerSec: idle,
    idleWindowMs,
  };
  printTable(
    `5. Retry timing: ${keyCount.toLocaleString('en-US')} keys, 1-4 failures each, base delay ${baseDelayMs} ms, real clock (min / median / max of ${ctx.runs})`,
    ['measure', 'value'],
    [
      ['lateness p50 (onRetry − deadline)', fmtSummary(result.latenessP50Ms, 'ms')],
      ['lateness p99', fmtSummary(result.latenessP99Ms, 'ms')],
      ['lateness max', fmtSummary(result.latenessMaxMs, 'ms')],
      ['lateness p99 at the worker (+ queue hop)', fmtSummary(result.dequeueLatenessP99Ms, 'ms')],
      ['timer wakeups for the last run', `${wakeupsWhilePending} (for ${keyCount.toLocaleString('en-US')} deadlines)`],
      [`idle wakeups/s, scheduler (${idleWindowMs} ms window)`, fmt(idle.scheduler)],
      [`idle wakeups/s, whole loop (${idleWindowMs} ms window)`, fmt(idle.loop)],
    ],
  );
  return result;
}
