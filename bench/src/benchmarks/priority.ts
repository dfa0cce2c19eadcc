/**
 * `priority`: a controller cold-starting with 20,000 parents while a user changes one parent every
 * 100 ms. How long do those changes wait for their reconcile with the priority queue (the default)
 * and with plain FIFO (`queue.priority: false`), and how long did the longest initial-list parent
 * wait? The source is in-process (`InProcessSource`): what is measured is the queue behind the
 * store, and an apiserver in front would only add the same listing time to every mode.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { InProcessSource, ReconcileLoop } from '@reconcile-loop/loop';
import type { BenchContext } from '../lib/context.js';
import { fmt, fmtSummary, percentiles, printTable, summarize, type Summary } from '../lib/stats.js';

/** One reconcile: an apiserver round trip of about this long (a timer), four at once. */
const RECONCILE_MS = 2;
const CONCURRENCY = 4;
/** The user's pace: one change every 100 ms for as long as the backlog lasts. */
const USER_EVERY_MS = 100;
/** A low key with this many low keys ahead may wait `agingMs` plus 2·(L+1) hand-outs: the bound. */
const DEFAULT_AGING_MS = 10_000;
/** A short aging, so that the turns run for most of the backlog. */
const SHORT_AGING_MS = 1_000;

type Mode = 'priority' | 'fifo' | 'priority-aging-1s';

interface Run {
  mode: Mode;
  userWaits: number[];
  /** Longest wait of an initial-list parent: listing applied (sync) → its first reconcile started. */
  maxInitialWaitMs: number;
  /** Sync → the last initial-list parent's first reconcile started. */
  drainMs: number;
  /** Reconciles started per ms over the drain (the hand-out rate the bound is computed with). */
  handOutsPerMs: number;
}

/** Result of the `priority` benchmark. */
export interface PriorityResult {
  parents: number;
  reconcileMs: number;
  concurrency: number;
  userEveryMs: number;
  /** Medians over the runs of each run's p99 user wait. The three keys first. */
  p99UserWaitMs: number;
  fifoP99UserWaitMs: number;
  maxInitialWaitMs: number;
  fifoMaxInitialWaitMs: number;
  /** The documented bound for the last initial-list parent with the default aging, from the measured hand-out rate. */
  boundMs: number;
  agedP99UserWaitMs: number;
  agedMaxInitialWaitMs: number;
  /**
   * Per run, priority's longest initial wait over FIFO's in the same run (modes alternate within a
   * run, so both saw the same machine): summarized over the runs. Above 1, priority lost.
   */
  initialWaitPriorityOverFifo: Summary;
  detail: Record<
    Mode,
    { p99UserWaitMs: Summary; maxUserWaitMs: Summary; maxInitialWaitMs: Summary; drainMs: Summary; userChanges: number }
  >;
}

async function oneRun(mode: Mode, parents: number): Promise<Run> {
  const names = Array.from({ length: parents }, (_, i) => `parent-${i}`);
  const source = new InProcessSource<{ v: number }>(
    'parents',
    names.map((name): [string, { v: number }] => [name, { v: 0 }]),
  );
  /** Parent → when the user's latest change to it was made, until a reconcile starts for it. */
  const changedAt = new Map<string, number>();
  const userWaits: number[] = [];
  const firstStart = new Map<string, number>();
  let syncedAt = 0;
  const loop = new ReconcileLoop<{ v: number }, string>({
    source,
    keyMap: (_, key) => key,
    controller: { concurrency: CONCURRENCY },
    queue:
      mode === 'fifo'
        ? { priority: false }
        : { priority: true, agingMs: mode === 'priority' ? DEFAULT_AGING_MS : SHORT_AGING_MS },
    sources: { resyncPeriodMs: 0 },
    reconcile: async (key) => {
      const now = performance.now();
      const at = changedAt.get(key);
      if (at !== undefined) {
        userWaits.push(now - at);
        changedAt.delete(key);
      }
      if (!firstStart.has(key)) firstStart.set(key, now);
      await delay(RECONCILE_MS);
    },
  });
  await loop.start();
  syncedAt = performance.now();
  // The user: one change every 100 ms to a parent picked by a fixed sequence, until every listed
  // parent has had its first reconcile (the backlog is gone).
  let pick = 12345;
  let version = 0;
  let next = syncedAt;
  while (firstStart.size < parents) {
    next += USER_EVERY_MS;
    await delay(Math.max(0, next - performance.now()));
    pick = (pick * 1103515245 + 12345) % 2 ** 31;
    const name = names[pick % parents]!;
    version += 1;
    if (!changedAt.has(name)) changedAt.set(name, performance.now());
    source.upsert(name, { v: version });
  }
  // Changes still unreconciled at the end wait on: let them finish (bounded by the loop's own pace).
  for (let i = 0; i < 1_000 && changedAt.size > 0; i++) await delay(5);
  await loop.stop();
  let last = 0;
  let maxInitialWaitMs = 0;
  for (const started of firstStart.values()) {
    last = Math.max(last, started);
    maxInitialWaitMs = Math.max(maxInitialWaitMs, started - syncedAt);
  }
  const drainMs = last - syncedAt;
  return { mode, userWaits, maxInitialWaitMs, drainMs, handOutsPerMs: (parents + userWaits.length) / drainMs };
}

export async function runPriority(ctx: BenchContext): Promise<PriorityResult> {
  const parents = ctx.smoke ? 1_000 : 20_000;
  const modes: Mode[] = ['priority', 'fifo', 'priority-aging-1s'];
  const runs: Run[] = [];
  for (let r = 0; r < ctx.runs; r++) for (const mode of modes) runs.push(await oneRun(mode, parents));
  const of = (mode: Mode) => runs.filter((run) => run.mode === mode);
  const detail = Object.fromEntries(
    modes.map((mode) => {
      const list = of(mode);
      return [
        mode,
        {
          p99UserWaitMs: summarize(list.map((run) => percentiles(run.userWaits).p99)),
          maxUserWaitMs: summarize(list.map((run) => percentiles(run.userWaits).max)),
          maxInitialWaitMs: summarize(list.map((run) => run.maxInitialWaitMs)),
          drainMs: summarize(list.map((run) => run.drainMs)),
          userChanges: list.at(-1)!.userWaits.length,
        },
      ];
    }),
  ) as PriorityResult['detail'];
  const paired = (value: (run: Run) => number): Summary =>
    summarize(of('priority').map((run, r) => value(run) / value(of('fifo')[r]!)));
  const initialWaitPriorityOverFifo = paired((run) => run.maxInitialWaitMs);
  // The bound for the last of `parents` low keys: agingMs + 2·(L+1) hand-outs at the measured rate.
  const rate = summarize(of('priority').map((run) => run.handOutsPerMs)).median;
  const boundMs = DEFAULT_AGING_MS + (2 * (parents + 1)) / rate;
  printTable(
    `priority: cold start with ${parents} parents, ${CONCURRENCY} workers × ${RECONCILE_MS} ms reconciles, one user change every ${USER_EVERY_MS} ms (${ctx.runs} runs)`,
    ['mode', 'user wait p99', 'user wait max', 'longest initial wait', 'backlog drained', 'user changes (last run)'],
    modes.map((mode) => [
      mode,
      fmtSummary(detail[mode].p99UserWaitMs, ' ms'),
      fmtSummary(detail[mode].maxUserWaitMs, ' ms'),
      fmtSummary(detail[mode].maxInitialWaitMs, ' ms'),
      fmtSummary(detail[mode].drainMs, ' ms'),
      String(detail[mode].userChanges),
    ]),
  );
  console.log(
    `priority / FIFO in the same run, longest initial wait (= the backlog's drain): ${fmtSummary(initialWaitPriorityOverFifo, '×')}`,
  );
  console.log(
    `bound for the last initial-list parent (agingMs ${DEFAULT_AGING_MS} + 2·(L+1) hand-outs at ${fmt(rate)}/ms): ${fmt(boundMs)} ms`,
  );
  return {
    parents,
    reconcileMs: RECONCILE_MS,
    concurrency: CONCURRENCY,
    userEveryMs: USER_EVERY_MS,
    p99UserWaitMs: detail.priority.p99UserWaitMs.median,
    fifoP99UserWaitMs: detail.fifo.p99UserWaitMs.median,
    maxInitialWaitMs: detail.priority.maxInitialWaitMs.median,
    fifoMaxInitialWaitMs: detail.fifo.maxInitialWaitMs.median,
    boundMs,
    agedP99UserWaitMs: detail['priority-aging-1s'].p99UserWaitMs.median,
    agedMaxInitialWaitMs: detail['priority-aging-1s'].maxInitialWaitMs.median,
    initialWaitPriorityOverFifo,
    detail,
  };
}
