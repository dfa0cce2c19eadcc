/**
 * `scale`: a cold start against 100,000 pods (issue 28, item 6). The embedded apiserver holds them
 * in a child process; each informer syncs them cold in a child process of its own and is measured
 * by the one memory method (`lib/memory.ts`): time to synced, peak heap in use, the heap its store
 * keeps, peak RSS. Ours on its default path (paged LIST, pages of 250) and on the streaming
 * watch-list, and `@kubernetes/client-node`'s informer (`makeInformer`'s `ListWatch`: one unpaged
 * LIST), one after the other against the same server. Ours gets a 20-minute
 * `listTimeoutMs` on both paths (the watch-list's initial phase is bounded by the same option) so
 * that one listing is measured whole on a loaded machine. The pods are created in chunks and every
 * informer's line is printed as soon as it is measured, so a run stopped part-way still says how
 * far it got. One run (it is heavy on a shared machine); `--runs` is not applied.
 *
 * Each informer runs in a memory-limited container (`lib/container.ts`): ours in the method's
 * default 512 MiB, client-node's in 8 GiB: its unpaged 100,000-pod LIST (≈ 490 MB of JSON) peaks
 * at 2.7 GB RSS and 2.5 GB of heap, and Node gives a container about half its limit as heap.
 */
import { loadavg } from 'node:os';
import { DEFAULT_LIST_PAGE_SIZE } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { CONTAINER_MB, measureInChild, type MemoryReading, type SyncJob } from '../lib/memory.js';
import { get, podsPath } from '../lib/wire.js';
import { MEMORY_METHOD } from './initial-sync.js';

/** One informer's figures: ms to synced, bytes. */
export interface ScaleInformerResult {
  readonly syncMs: number;
  readonly heapPerPodBytes: number;
  readonly peakHeapBytes: number;
  readonly storeHeapBytes: number;
  readonly peakHeapToStoreRatio: number;
  /** The container memory limit it ran under (MiB), and how it was applied. */
  readonly containerMb: number;
  readonly limitedBy: MemoryReading['limitedBy'];
  readonly peakRssBytes: number;
  readonly peakRssOverBaseBytes: number;
  /** The server child's CPU time (ms) while this informer synced: what it cost the server. */
  readonly serverCpuMs: number;
}

export interface ScaleResult extends ScaleInformerResult {
  readonly pods: number;
  readonly method: string;
  /** How long the server child took to create the pods (not an informer figure). */
  readonly seedMs: number;
  readonly watchList: ScaleInformerResult;
  readonly clientNode: ScaleInformerResult;
}

/** client-node's container (MiB): see the module's comment. */
const CLIENT_NODE_CONTAINER_MB = 8192;
/** Ours: one listing may take this long (the reflector's default is 90 s). */
const LIST_TIMEOUT_MS = 1_200_000;
/** Pods created per request to the server child: progress is printed after each. */
const SEED_CHUNK = 10_000;

/** The 1-minute load average, for the progress lines (every time figure is read beside the load). */
function load(): string {
  return loadavg()[0]!.toFixed(1);
}

/**
 * Reads every pod once, as a LIST item and as a watch frame, before any informer is measured, and
 * discards the bytes. The embedded apiserver encodes a stored object on first use and keeps the
 * bytes (one cache for LIST items, one for watch frames), so without this the first informer of
 * each representation would also wait for the server to encode 100,000 pods: the paged LIST
 * (measured first) paid it, and client-node's unpaged LIST (last) read the same cached items.
 */
async function warmServer(url: string, pods: number): Promise<void> {
  const list = await get(podsPath(url));
  for await (const _ of list) {
    // drained: only the server's encoding is wanted
  }
  const controller = new AbortController();
  const watchList = await get(
    `${podsPath(url)}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3600`,
    controller.signal,
  );
  let lines = 0;
  try {
    for await (const chunk of watchList as AsyncIterable<Buffer>) {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      if (lines >= pods) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    controller.abort();
    watchList.destroy();
  }
  if (lines < pods) throw new Error(`scale: the warming watch-list ended after ${lines} of ${pods} initial events`);
}

function figures(r: MemoryReading, pods: number, serverCpuMs: number, containerMb: number): ScaleInformerResult {
  return {
    containerMb,
    limitedBy: r.limitedBy,
    syncMs: r.syncMs,
    heapPerPodBytes: r.storeHeapBytes / pods,
    peakHeapBytes: r.peakHeapBytes,
    storeHeapBytes: r.storeHeapBytes,
    peakHeapToStoreRatio: r.peakHeapBytes / r.storeHeapBytes,
    peakRssBytes: r.peakRssBytes,
    peakRssOverBaseBytes: r.peakRssOverBaseBytes,
    serverCpuMs,
  };
}

export async function runScale(ctx: BenchContext): Promise<ScaleResult> {
  const pods = ctx.smoke ? 2_000 : 100_000;
  const server = await ApiServerProcess.start(pods + 100);
  try {
    const seedStarted = performance.now();
    for (let seeded = 0; seeded < pods; ) {
      const chunk = Math.min(SEED_CHUNK, pods - seeded);
      await server.seed(chunk);
      seeded += chunk;
      if (!ctx.smoke)
        console.log(
          `scale: ${seeded} of ${pods} pods created, ${((performance.now() - seedStarted) / 1000).toFixed(1)} s (load average ${load()})`,
        );
    }
    const seedMs = performance.now() - seedStarted;
    const warmStarted = performance.now();
    await warmServer(server.url, pods);
    await server.dropWatches();
    if (!ctx.smoke)
      console.log(
        `scale: every pod encoded once by the server (LIST item, watch frame), ${((performance.now() - warmStarted) / 1000).toFixed(1)} s (load average ${load()})`,
      );
    const base = { kubeconfig: server.kubeconfig, pods, containerMb: CONTAINER_MB };
    // One listing, measured whole: the first run (2026-12-02, load average ≈ 50) hit the default 90 s
    // listTimeoutMs on 100,000 pods and relisted, which measures a retry, not a cold start. The
    // watch-list's initial phase has the same deadline (the reflector's `listTimeoutMs`), so both paths get it.
    const listing = { listTimeoutMs: LIST_TIMEOUT_MS };
    const mb = (b: number): string => (b / 1e6).toFixed(0);
    const line = (label: string, f: ScaleInformerResult): string =>
      `  ${label.padEnd(23)}  ${String(f.containerMb).padStart(9)}  ${(f.syncMs / 1000).toFixed(1).padStart(8)}   ${mb(f.peakHeapBytes).padStart(7)}   ${mb(f.storeHeapBytes).padStart(8)}   ${f.peakHeapToStoreRatio.toFixed(3).padStart(10)}   ${f.heapPerPodBytes.toFixed(0).padStart(5)}   ${mb(f.peakRssBytes).padStart(11)}   ${(f.serverCpuMs / 1000).toFixed(1).padStart(12)}`;
    const header =
      '  informer                 limit MiB  synced s   peak MB   store MB   peak/store   B/pod   peak RSS MB   server CPU s';
    const measure = async (label: string, job: SyncJob): Promise<ScaleInformerResult> => {
      if (!ctx.smoke) console.log(`scale: ${label} syncing (load average ${load()})`);
      const cpuBefore = await server.cpuMs();
      const reading = await measureInChild(job, 1_800_000);
      const serverCpuMs = (await server.cpuMs()) - cpuBefore;
      await server.dropWatches();
      const f = figures(reading, pods, serverCpuMs, job.containerMb ?? 0);
      if (!ctx.smoke) console.log(`${header}\n${line(label, f)}   (load average ${load()})`);
      return f;
    };
    const rows: Array<readonly [string, SyncJob]> = [
      [
        'ours (LIST, pages 250)',
        { ...base, ...listing, kind: 'reflector', initialList: 'list', listPageSize: DEFAULT_LIST_PAGE_SIZE },
      ],
      [
        'ours (watch-list)',
        { ...base, ...listing, kind: 'reflector', initialList: 'watch-list', listPageSize: DEFAULT_LIST_PAGE_SIZE },
      ],
      ['client-node informer', { ...base, kind: 'client-node', containerMb: CLIENT_NODE_CONTAINER_MB }],
    ];
    const measured: ScaleInformerResult[] = [];
    for (const [label, job] of rows) measured.push(await measure(label, job));
    const [ours, watchList, clientNode] = measured as [ScaleInformerResult, ScaleInformerResult, ScaleInformerResult];
    console.log(
      `\nscale: cold start against ${pods} pods (seeded in ${(seedMs / 1000).toFixed(1)} s), one child process per informer:`,
    );
    console.log(header);
    for (const [i, [label]] of rows.entries()) console.log(line(label, measured[i]!));
    return { pods, method: MEMORY_METHOD, seedMs, ...ours, watchList, clientNode };
  } finally {
    await server.close();
  }
}
