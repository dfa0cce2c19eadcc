/**
 * Benchmarks 1 (watch pipeline throughput) and 2 (memory held per cached pod). They share one
 * apiserver per size, because setting it up (N pods, then M committed modifications) is the slow part.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { heapAfterGc, settleHeap } from '../lib/heap.js';
import { startClientNode, startOurs, timeRun, type Pipeline, type PipelineOptions } from '../lib/pipelines.js';
import { fmt, fmtSummary, printTable, scaled, summarize, type Summary } from '../lib/stats.js';
import { syncPipeline } from '../lib/ladder.js';
import { fetchList, fetchWatchLines, parseFloor, rawHttpParse } from '../lib/wire.js';

/** Throughput at one size. */
export interface ThroughputSizeResult {
  /** `replay`: the apiserver's bytes served at socket speed (client-bound); `apiserver`: the embedded apiserver itself. */
  via: 'replay' | 'apiserver';
  pods: number;
  frames: number;
  /** Bytes a client reads: the LIST body plus every watch line. */
  listBytes: number;
  watchBytes: number;
  /** Start to last frame applied and enqueued, ms. */
  oursMs: Summary;
  clientNodeMs: Summary;
  /** Bare JSON.parse of the same bytes, ms. */
  floorMs: Summary;
  /** node:http + line split + JSON.parse, nothing else, ms. */
  rawHttpMs: Summary;
  /** (d) plus validation, ObjectStore and WorkQueue, driven synchronously from `data` events, ms. */
  syncMs: Summary;
  /** Ratios of medians. */
  oursOverFloor: number;
  oursOverClientNode: number;
  clientNodeOverFloor: number;
  oursOverRawHttp: number;
}

/** Memory at one size, bytes per cached pod after a forced GC. */
export interface MemorySizeResult {
  pods: number;
  /** After the LIST (sync), watch open and idle. */
  oursAfterList: Summary;
  clientNodeAfterList: Summary;
  /** After the LIST plus M watch frames (every pod replaced by a watch version). */
  oursAfterWatch: Summary;
  clientNodeAfterWatch: Summary;
}

export interface WatchResult {
  throughput: ThroughputSizeResult[];
  memory: MemorySizeResult[];
}

type Start = (options: PipelineOptions) => Pipeline;

/** Heap retained per pod after a forced GC, at sync (idle watch) or after `frames` replayed frames. */
async function memoryRun(
  start: Start,
  options: PipelineOptions,
  pods: number,
  label: string,
  server: ApiServerProcess,
): Promise<number> {
  const base = await heapAfterGc();
  const pipeline = start(options);
  try {
    await pipeline.synced;
    await pipeline.done;
    // The watch is open; let in-flight chunks land before measuring.
    await delay(50);
    const held = await heapAfterGc();
    if (pipeline.cacheSize() !== pods) throw new Error(`${label}: cache holds ${pipeline.cacheSize()} pods, expected ${pods}`);
    return (held - base) / pods;
  } finally {
    await pipeline.stop();
    await server.dropWatches();
  }
}

/** Benchmarks 1 and 2 over every size. */
export async function runWatch(ctx: BenchContext, parts: { throughput: boolean; memory: boolean }): Promise<WatchResult> {
  const sizes = (
    ctx.smoke
      ? [{ pods: 200, frames: 500 }]
      : [
          { pods: 5_000, frames: 50_000 },
          { pods: 20_000, frames: 50_000 },
        ]
  ).filter((s) => ctx.pods === undefined || ctx.pods.has(s.pods));
  const throughput: ThroughputSizeResult[] = [];
  const memory: MemorySizeResult[] = [];
  for (const { pods, frames } of sizes) {
    const setupStarted = performance.now();
    const server = await ApiServerProcess.start(pods + frames + 100);
    try {
      await server.seed(pods);
      const { revision: listedAt } = await server.revision();
      const modified = await server.modify(frames);
      const watchFrom = String(listedAt);
      // The exact bytes a client reads; the watch capture also has the server serialize (and cache)
      // every frame once, so no measured run pays for that.
      const listBody = await fetchList(server.url);
      const lines = await fetchWatchLines(server.url, watchFrom, frames);
      const watchBytes = lines.reduce((n, l) => n + l.length + 1, 0);
      console.log(
        `  [${pods} pods, ${frames} frames] apiserver ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s ` +
          `(${(modified.ms / frames).toFixed(2)} ms per committed write); LIST ${(listBody.length / 1e6).toFixed(1)} MB, ` +
          `watch ${(watchBytes / 1e6).toFixed(1)} MB, ${Math.round(listBody.length / pods)} B per listed pod`,
      );
      const options: PipelineOptions = { kubeconfig: server.kubeconfig, frames, watchFrom };
      if (parts.throughput) {
        const replay = await server.startReplay(watchFrom, frames);
        if (replay.listBytes !== Buffer.byteLength(listBody) || replay.watchBytes !== watchBytes) {
          throw new Error(
            `replay captured ${replay.listBytes} + ${replay.watchBytes} bytes, expected ${Buffer.byteLength(listBody)} + ${watchBytes}`,
          );
        }
        const targets = [
          { via: 'replay' as const, url: replay.url, runs: ctx.runs },
          { via: 'apiserver' as const, url: server.url, runs: ctx.smoke ? 1 : Math.min(ctx.runs, 3) },
        ];
        for (const target of targets) {
          const viaTarget: PipelineOptions = { kubeconfig: server.kubeconfig.replace(server.url, target.url), frames, watchFrom };
          // Warm-up: JIT and connection pools, at full size.
          await timeRun(startOurs, viaTarget, pods, 'ours');
          await timeRun(startClientNode, viaTarget, pods, 'client-node');
          parseFloor(listBody, lines);
          await rawHttpParse(target.url, watchFrom, frames);
          await syncPipeline(target.url, watchFrom, frames, pods);
          await server.dropWatches();
          await settleHeap();
          const ours: number[] = [];
          const clientNode: number[] = [];
          const floor: number[] = [];
          const raw: number[] = [];
          const sync: number[] = [];
          const order = ['ours', 'clientNode', 'floor', 'raw', 'sync'] as const;
          for (let r = 0; r < target.runs; r++) {
            // Rotate the order so no implementation always runs right after another's garbage.
            for (let k = 0; k < order.length; k++) {
              const which = order[(k + r) % order.length]!;
              if (which === 'ours') ours.push(await timeRun(startOurs, viaTarget, pods, 'ours'));
              else if (which === 'clientNode') clientNode.push(await timeRun(startClientNode, viaTarget, pods, 'client-node'));
              else if (which === 'floor') floor.push(parseFloor(listBody, lines));
              else if (which === 'raw') raw.push(await rawHttpParse(target.url, watchFrom, frames));
              else sync.push(await syncPipeline(target.url, watchFrom, frames, pods));
              await server.dropWatches();
              await settleHeap();
            }
          }
          const oursMs = summarize(ours);
          const clientNodeMs = summarize(clientNode);
          const floorMs = summarize(floor);
          const rawHttpMs = summarize(raw);
          throughput.push({
            via: target.via,
            pods,
            frames,
            listBytes: listBody.length,
            watchBytes,
            oursMs,
            clientNodeMs,
            floorMs,
            rawHttpMs,
            syncMs: summarize(sync),
            oursOverFloor: oursMs.median / floorMs.median,
            oursOverClientNode: oursMs.median / clientNodeMs.median,
            clientNodeOverFloor: clientNodeMs.median / floorMs.median,
            oursOverRawHttp: oursMs.median / rawHttpMs.median,
          });
        }
      }

      if (parts.memory) {
        const idle: PipelineOptions = { kubeconfig: server.kubeconfig, frames: 0 };
        const afterList = { ours: [] as number[], clientNode: [] as number[] };
        const afterWatch = { ours: [] as number[], clientNode: [] as number[] };
        await memoryRun(startOurs, idle, pods, 'ours', server); // warm-up
        await memoryRun(startClientNode, idle, pods, 'client-node', server);
        const memoryRuns = Math.max(1, Math.min(ctx.runs, 3));
        for (let r = 0; r < memoryRuns; r++) {
          afterList.ours.push(await memoryRun(startOurs, idle, pods, 'ours', server));
          afterList.clientNode.push(await memoryRun(startClientNode, idle, pods, 'client-node', server));
          afterWatch.ours.push(await memoryRun(startOurs, options, pods, 'ours', server));
          afterWatch.clientNode.push(await memoryRun(startClientNode, options, pods, 'client-node', server));
        }
        memory.push({
          pods,
          oursAfterList: summarize(afterList.ours),
          clientNodeAfterList: summarize(afterList.clientNode),
          oursAfterWatch: summarize(afterWatch.ours),
          clientNodeAfterWatch: summarize(afterWatch.clientNode),
        });
      }
    } finally {
      await server.close();
    }
  }

  if (throughput.length > 0) {
    printTable(
      `1. Watch pipeline throughput: LIST of N pods, then M MODIFIED frames; start → last frame cached and its parent enqueued (ms, min / median / max of ${ctx.runs})`,
      [
        'served by',
        'N',
        'M',
        'MB read',
        '(a) ours',
        '(b) client-node informer',
        '(c) JSON.parse floor',
        '(d) http + split + parse',
        '(e) (d) + validate + store + queue, sync',
        '(a)/(c)',
        '(a)/(b)',
        '(b)/(c)',
        '(d)/(c)',
        '(e)/(c)',
      ],
      throughput.map((t) => [
        t.via,
        t.pods.toLocaleString('en-US'),
        t.frames.toLocaleString('en-US'),
        fmt((t.listBytes + t.watchBytes) / 1e6),
        fmtSummary(t.oursMs),
        fmtSummary(t.clientNodeMs),
        fmtSummary(t.floorMs),
        fmtSummary(t.rawHttpMs),
        fmtSummary(t.syncMs),
        `${fmt(t.oursOverFloor)}×`,
        `${fmt(t.oursOverClientNode)}×`,
        `${fmt(t.clientNodeOverFloor)}×`,
        `${fmt(t.rawHttpMs.median / t.floorMs.median)}×`,
        `${fmt(t.syncMs.median / t.floorMs.median)}×`,
      ]),
    );
  }
  if (memory.length > 0) {
    const kb = (s: Summary): string => fmtSummary(scaled(s, 1024));
    printTable(
      '2. Memory held per cached pod after a forced GC (KB, min / median / max)',
      [
        'N',
        '(a) ours, after LIST',
        '(b) client-node, after LIST',
        '(a) ours, after M frames',
        '(b) client-node, after M frames',
        '(b)/(a) after LIST',
      ],
      memory.map((m) => [
        m.pods.toLocaleString('en-US'),
        kb(m.oursAfterList),
        kb(m.clientNodeAfterList),
        kb(m.oursAfterWatch),
        kb(m.clientNodeAfterWatch),
        `${fmt(m.clientNodeAfterList.median / m.oursAfterList.median)}×`,
      ]),
    );
  }
  return { throughput, memory };
}
