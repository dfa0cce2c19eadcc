/**
 * The poison-object variant of benchmark 1: the same LIST and M MODIFIED frames, replayed at socket
 * speed, once clean and once with one frame's pod failing the schema (quarantined by the reflector:
 * a delete, an error log line, a quarantine entry, lifted by the pod's next valid frame). The issue's
 * claim is that a poison object costs nothing measurable on throughput; this measures it.
 */
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { settleHeap } from '../lib/heap.js';
import { startOurs, type PipelineOptions } from '../lib/pipelines.js';
import { fmt, fmtSummary, printTable, summarize, type Summary } from '../lib/stats.js';

/** One size. */
export interface PoisonSizeResult {
  pods: number;
  frames: number;
  /** Start to last frame applied and enqueued, ms. */
  cleanMs: Summary;
  poisonedMs: Summary;
  /** Ratio of medians, poisoned / clean. */
  poisonedOverClean: number;
}

export interface PoisonResult {
  sizes: PoisonSizeResult[];
}

/** One timed run of our pipeline; checks the cache and, when poisoned, that exactly one object was quarantined and later lifted. */
async function timeRun(options: PipelineOptions, pods: number, poisoned: boolean): Promise<number> {
  const begin = performance.now();
  const pipeline = startOurs(options);
  try {
    await pipeline.synced;
    await pipeline.done;
    const ms = performance.now() - begin;
    if (pipeline.cacheSize() !== pods) throw new Error(`cache holds ${pipeline.cacheSize()} pods, expected ${pods}`);
    const { invalidObjects } = pipeline.reflector.stats;
    if (invalidObjects !== (poisoned ? 1 : 0)) throw new Error(`${invalidObjects} invalid objects seen, expected ${poisoned ? 1 : 0}`);
    if (pipeline.reflector.health().quarantined.length !== 0) throw new Error('the poisoned pod was not lifted by its next valid frame');
    return ms;
  } finally {
    await pipeline.stop();
  }
}

/** Clean vs poisoned throughput, alternating runs so neither always follows the other's garbage. */
export async function runPoison(ctx: BenchContext): Promise<PoisonResult> {
  const sizes = (ctx.smoke ? [{ pods: 200, frames: 2_000 }] : [{ pods: 2_000, frames: 20_000 }, { pods: 5_000, frames: 50_000 }]).filter(
    (s) => ctx.pods === undefined || ctx.pods.has(s.pods),
  );
  const results: PoisonSizeResult[] = [];
  for (const { pods, frames } of sizes) {
    const server = await ApiServerProcess.start(pods + frames + 100);
    try {
      await server.seed(pods);
      const { revision } = await server.revision();
      await server.modify(frames);
      const watchFrom = String(revision);
      // Frames modify pods round robin, so the poisoned pod's next frame (poisonAt + pods) lifts it.
      const poisonAt = Math.floor(frames / 2);
      if (poisonAt + pods >= frames) throw new Error('poison benchmark needs frames >= 2 * pods');
      const run = async (poisoned: boolean): Promise<number> => {
        const replay = await server.startReplay(watchFrom, frames, poisoned ? poisonAt : undefined);
        const options: PipelineOptions = { kubeconfig: server.kubeconfig.replace(server.url, replay.url), frames, watchFrom };
        const ms = await timeRun(options, pods, poisoned);
        await server.dropWatches();
        await settleHeap();
        return ms;
      };
      await run(false); // warm-up
      await run(true);
      const clean: number[] = [];
      const poisoned: number[] = [];
      for (let r = 0; r < ctx.runs; r++) {
        const first = r % 2 === 0;
        (first ? clean : poisoned).push(await run(!first));
        (first ? poisoned : clean).push(await run(first));
      }
      const cleanMs = summarize(clean);
      const poisonedMs = summarize(poisoned);
      results.push({ pods, frames, cleanMs, poisonedMs, poisonedOverClean: poisonedMs.median / cleanMs.median });
    } finally {
      await server.close();
    }
  }
  printTable(
    `1p. Watch pipeline throughput with one poison object among the frames (ours, replay; ms, min / median / max of ${ctx.runs})`,
    ['N', 'M', 'clean', 'one poison frame', 'poisoned / clean'],
    results.map((r) => [r.pods.toLocaleString('en-US'), r.frames.toLocaleString('en-US'), fmtSummary(r.cleanMs), fmtSummary(r.poisonedMs), `${fmt(r.poisonedOverClean)}×`]),
  );
  return { sizes: results };
}
