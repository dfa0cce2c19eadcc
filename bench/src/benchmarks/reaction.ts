/**
 * Benchmark `reaction` (issue 30): the CellSet controller's event-to-action latency on the embedded
 * apiserver, from a pod marked Failed to its replacement created — steady, across a graceful leader
 * handover (SIGTERM, Lease released), across a kill -9 of the leader, and a burst of failures at
 * once under the old knobs (2 workers, client-go's 5 QPS / burst 10) and the new defaults. The
 * replicas are child processes of the flagship's entry; see `lib/cellset-reaction.ts` for the
 * method. kube-apiserver: `pnpm --filter @reconcile-loop/e2e reaction` runs the same driver there.
 */
import { startApiServer } from '@reconcile-loop/testing';
import { measureReaction, type ControllerKnobs, type ReactionResult } from '../lib/cellset-reaction.js';
import type { BenchContext } from '../lib/context.js';
import { fmt, printTable } from '../lib/stats.js';

/** Lease timings of the handover and kill phases: the e2e layer's 3 s / 2 s / 0.5 s. */
export const REACTION_LEASE = { leaseDurationS: 3, renewDeadlineS: 2, retryPeriodS: 0.5 } as const;

/** What `reaction` records in latest.json. */
export interface ReactionBenchResult {
  server: string;
  /** The new defaults (workers 4, 20 QPS / burst 30): steady, handover, kill, burst. */
  defaults: ReactionResult;
  /** Bursts only, per knob setting (the measurement behind the defaults). */
  knobs: ReactionResult[];
}

async function onEmbedded(
  knobs: ControllerKnobs,
  ctx: BenchContext,
  phases: ReadonlySet<'steady' | 'handover' | 'kill' | 'burst'>,
) {
  const server = await startApiServer({ implicitNamespaces: true });
  try {
    return await measureReaction({
      kubeconfig: server.kubeconfig(),
      namespace: 'reaction',
      createNamespace: async () => {
        server.createNamespace('reaction');
      },
      knobs,
      sets: ctx.smoke ? 4 : 20,
      replicasPerSet: ctx.smoke ? 5 : 10,
      failuresPerPhase: ctx.smoke ? 6 : 30,
      // One failure every 500 ms: each costs about 4 writes (delete, status, create, status), so
      // 2 failures/s stay well inside 20 writes/s; 100 ms measured the limiter's queue, not the reaction.
      intervalMs: 500,
      burst: ctx.smoke ? 4 : 30,
      phases,
      log: (line) => console.log(`  ${line}`),
    });
  } finally {
    await server.close();
  }
}

export async function runReaction(ctx: BenchContext): Promise<ReactionBenchResult> {
  console.log(
    '\nreaction: pod marked Failed → its replacement created (CellSet, two replicas as child processes, embedded apiserver)',
  );
  const defaults = await onEmbedded({ ...REACTION_LEASE }, ctx, new Set(['steady', 'handover', 'kill', 'burst']));
  const settings: ControllerKnobs[] = ctx.smoke
    ? []
    : [
        { ...REACTION_LEASE, workers: 2, writeQps: 5, writeBurst: 10 },
        { ...REACTION_LEASE, workers: 2, writeQps: 20, writeBurst: 30 },
        { ...REACTION_LEASE, workers: 8, writeQps: 20, writeBurst: 30 },
        { ...REACTION_LEASE, workers: 4, writeQps: 50, writeBurst: 100 },
      ];
  const knobs: ReactionResult[] = [];
  for (const k of settings) knobs.push(await onEmbedded(k, ctx, new Set(['burst'])));
  const row = (name: string, p: { p50Ms: number; p99Ms: number; maxMs: number; count: number } | undefined, extra = '') =>
    p === undefined
      ? [name, '-', '-', '-', '-', extra]
      : [name, fmt(p.p50Ms), fmt(p.p99Ms), fmt(p.maxMs), String(p.count), extra];
  printTable(
    'reaction (ms), defaults: workers 4, writes 20 QPS / burst 30; Lease 3 s / 2 s / 0.5 s',
    ['phase', 'p50', 'p99', 'max', 'n', ''],
    [
      row('steady', defaults.steady),
      row('graceful handover', defaults.handover, defaults.handover && `takeover ${fmt(defaults.handover.takeoverMs)} ms`),
      row('kill -9', defaults.kill, defaults.kill && `takeover ${fmt(defaults.kill.takeoverMs)} ms`),
      row(`burst of ${defaults.burst?.count ?? 0}`, defaults.burst),
      ...knobs.map((k) => row(`burst, workers ${k.workers}, ${k.writeQps}/${k.writeBurst}`, k.burst)),
    ],
  );
  return { server: 'embedded (@reconcile-loop/testing, in the measuring process)', defaults, knobs };
}
