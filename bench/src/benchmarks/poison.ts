/**
 * The poison-object variant of benchmark 1: the same LIST and M MODIFIED frames, replayed at socket
 * speed, once clean and once with one frame's pod failing the schema (quarantined by the reflector:
 * no event — the store keeps the pod's last good version —, an error log line and a quarantine entry,
 * lifted by the pod's next valid frame). The issue's
 * claim is that a poison object costs nothing measurable on throughput; this measures it.
 */
import { podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { Reflector, type ListWatchClient } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { settleHeap } from '../lib/heap.js';
import { startOurs, type PipelineOptions } from '../lib/pipelines.js';
import { makePod, modifyPod, NAMESPACE } from '../lib/pods.js';
import { fmt, fmtSummary, printTable, summarize, type Summary } from '../lib/stats.js';

/** One size. */
export interface PoisonSizeResult {
  pods: number;
  frames: number;
  /** Start to last frame applied and enqueued, wall ms. */
  cleanMs: Summary;
  poisonedMs: Summary;
  /** Ratio of medians, poisoned / clean. */
  poisonedOverClean: number;
  /** CPU time (user + system) this process spent over the same runs, ms: robust to other load on the machine. */
  cleanCpuMs: Summary;
  poisonedCpuMs: Summary;
  poisonedOverCleanCpu: number;
  /** The reflector alone, in this process: pre-built lines from a fake client, no HTTP, no store; CPU ms. */
  reflectorCleanCpuMs: Summary;
  reflectorPoisonedCpuMs: Summary;
  reflectorPoisonedOverClean: number;
}

/** Wall and CPU (user + system of this process) ms of `work`. */
async function measure(work: () => Promise<void>): Promise<{ wall: number; cpu: number }> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await work();
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000 };
}

export interface PoisonResult {
  sizes: PoisonSizeResult[];
}

/**
 * The reflector alone: a fake client yields `frames` (each frame's UTF-8 bytes as a Buffer, as
 * kube-client hands them over) after a listing whose body is `listing` (its bytes, handed to the
 * reflector's reader through `listPage` as `KubeApiClient` does); the time is open → the last
 * frame's event consumed. Isolates the reflector's per-frame work (parse, validate, quarantine) from
 * HTTP and the child process.
 */
async function reflectorRun(
  listing: Uint8Array,
  frames: readonly Uint8Array[],
  poisoned: boolean,
): Promise<{ wall: number; cpu: number }> {
  const client: ListWatchClient = {
    list: async () => {
      throw new Error('the bench client lists through listPage');
    },
    listPage: async (_request, read) => {
      const page = read(listing);
      if (page === undefined) throw new Error('the byte reader refused the bench listing');
      return { kind: 'read', page };
    },
    watch: ({ signal }) =>
      (async function* () {
        yield* frames;
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      })(),
  };
  const reflector = new Reflector<Pod>({ client, schema: podSchema, namespace: NAMESPACE, name: 'bench-poison' });
  const controller = new AbortController();
  const ms = await measure(async () => {
    let events = 0;
    // The listing, then one event per frame except a quarantined one (it emits nothing).
    const last = frames.length + 1 - (poisoned ? 1 : 0);
    for await (const _ of reflector.open(controller.signal)) if (++events === last) break;
  });
  controller.abort();
  return ms;
}

/** One timed run of our pipeline; checks the cache and, when poisoned, that exactly one object was quarantined and later lifted. */
async function timeRun(options: PipelineOptions, pods: number, poisoned: boolean): Promise<{ wall: number; cpu: number }> {
  let pipeline: ReturnType<typeof startOurs> | undefined;
  try {
    const ms = await measure(async () => {
      pipeline = startOurs(options);
      await pipeline.synced;
      await pipeline.done;
    });
    if (pipeline === undefined) throw new Error('pipeline not started');
    if (pipeline.cacheSize() !== pods) throw new Error(`cache holds ${pipeline.cacheSize()} pods, expected ${pods}`);
    const { invalidObjects } = pipeline.reflector.stats;
    if (invalidObjects !== (poisoned ? 1 : 0))
      throw new Error(`${invalidObjects} invalid objects seen, expected ${poisoned ? 1 : 0}`);
    if (pipeline.reflector.health().quarantined.length !== 0)
      throw new Error('the poisoned pod was not lifted by its next valid frame');
    return ms;
  } finally {
    await pipeline?.stop();
  }
}

/** Clean vs poisoned throughput, alternating runs so neither always follows the other's garbage. */
export async function runPoison(ctx: BenchContext): Promise<PoisonResult> {
  const sizes = (
    ctx.smoke
      ? [{ pods: 200, frames: 2_000 }]
      : [
          { pods: 2_000, frames: 20_000 },
          { pods: 5_000, frames: 50_000 },
        ]
  ).filter((s) => ctx.pods === undefined || ctx.pods.has(s.pods));
  const results: PoisonSizeResult[] = [];
  for (const { pods, frames } of sizes) {
    const server = await ApiServerProcess.start(pods + frames + 100);
    try {
      await server.seed(pods);
      const { revision } = await server.revision();
      const listedRv = revision + 1;
      await server.modify(frames);
      const watchFrom = String(revision);
      // Frames modify pods round robin, so the poisoned pod's next frame (poisonAt + pods) lifts it.
      const poisonAt = Math.floor(frames / 2);
      if (poisonAt + pods >= frames) throw new Error('poison benchmark needs frames >= 2 * pods');
      const run = async (poisoned: boolean): Promise<{ wall: number; cpu: number }> => {
        const replay = await server.startReplay(watchFrom, frames, poisoned ? poisonAt : undefined);
        // A quarantined frame emits no event, so a poisoned run ends one event sooner.
        const options: PipelineOptions = {
          kubeconfig: server.kubeconfig.replace(server.url, replay.url),
          frames: poisoned ? frames - 1 : frames,
          watchFrom,
        };
        const ms = await timeRun(options, pods, poisoned);
        await server.dropWatches();
        await settleHeap();
        return ms;
      };
      await run(false); // warm-up
      await run(true);
      const clean: Array<{ wall: number; cpu: number }> = [];
      const poisoned: Array<{ wall: number; cpu: number }> = [];
      for (let r = 0; r < ctx.runs; r++) {
        const first = r % 2 === 0;
        (first ? clean : poisoned).push(await run(!first));
        (first ? poisoned : clean).push(await run(first));
      }
      const cleanMs = summarize(clean.map((m) => m.wall));
      const poisonedMs = summarize(poisoned.map((m) => m.wall));
      const cleanCpuMs = summarize(clean.map((m) => m.cpu));
      const poisonedCpuMs = summarize(poisoned.map((m) => m.cpu));

      // The same shape of work in this process, reflector only.
      const listing = Array.from({ length: pods }, (_, i) => makePod(i));
      const cleanLines = Array.from({ length: frames }, (_, k) => {
        const pod = modifyPod(listing[k % pods]!, k);
        pod.metadata.resourceVersion = String(listedRv + k);
        return JSON.stringify({ type: 'MODIFIED', object: pod });
      });
      const poisonedLines = [...cleanLines];
      const frame = JSON.parse(cleanLines[poisonAt]!) as { object: { status: Record<string, unknown> } };
      frame.object.status['phase'] = 7;
      poisonedLines[poisonAt] = JSON.stringify(frame);
      const listingBody = Buffer.from(
        JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: listing }),
      );
      const cleanFrames = cleanLines.map((line) => Buffer.from(line));
      const poisonedFrames = poisonedLines.map((line) => Buffer.from(line));
      await reflectorRun(listingBody, cleanFrames, false);
      await reflectorRun(listingBody, poisonedFrames, true);
      const reflectorClean: Array<{ wall: number; cpu: number }> = [];
      const reflectorPoisoned: Array<{ wall: number; cpu: number }> = [];
      for (let r = 0; r < ctx.runs * 2; r++) {
        const first = r % 2 === 0;
        (first ? reflectorClean : reflectorPoisoned).push(
          await reflectorRun(listingBody, first ? cleanFrames : poisonedFrames, !first),
        );
        (first ? reflectorPoisoned : reflectorClean).push(
          await reflectorRun(listingBody, first ? poisonedFrames : cleanFrames, first),
        );
        await settleHeap();
      }
      const reflectorCleanCpuMs = summarize(reflectorClean.map((m) => m.cpu));
      const reflectorPoisonedCpuMs = summarize(reflectorPoisoned.map((m) => m.cpu));
      results.push({
        pods,
        frames,
        cleanMs,
        poisonedMs,
        poisonedOverClean: poisonedMs.median / cleanMs.median,
        cleanCpuMs,
        poisonedCpuMs,
        poisonedOverCleanCpu: poisonedCpuMs.median / cleanCpuMs.median,
        reflectorCleanCpuMs,
        reflectorPoisonedCpuMs,
        reflectorPoisonedOverClean: reflectorPoisonedCpuMs.median / reflectorCleanCpuMs.median,
      });
    } finally {
      await server.close();
    }
  }
  printTable(
    `1p. One poison object among M frames (ms, min / median / max): the whole pipeline over the replay, wall and CPU of this process (${ctx.runs} runs each); the reflector alone in-process, CPU (${ctx.runs * 2} runs each)`,
    [
      'N',
      'M',
      'pipeline wall: clean',
      'poisoned',
      'ratio',
      'pipeline CPU: clean',
      'poisoned',
      'ratio',
      'reflector CPU: clean',
      'poisoned',
      'ratio',
    ],
    results.map((r) => [
      r.pods.toLocaleString('en-US'),
      r.frames.toLocaleString('en-US'),
      fmtSummary(r.cleanMs),
      fmtSummary(r.poisonedMs),
      `${fmt(r.poisonedOverClean)}×`,
      fmtSummary(r.cleanCpuMs),
      fmtSummary(r.poisonedCpuMs),
      `${fmt(r.poisonedOverCleanCpu)}×`,
      fmtSummary(r.reflectorCleanCpuMs),
      fmtSummary(r.reflectorPoisonedCpuMs),
      `${fmt(r.reflectorPoisonedOverClean)}×`,
    ]),
  );
  return { sizes: results };
}
