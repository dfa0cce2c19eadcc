/**
 * `scale`: a cold start against 100,000 pods (issue 28, item 6). The embedded apiserver holds them
 * in a child process; each informer syncs them cold in a child process of its own and is measured
 * by the one memory method (`lib/memory.ts`): time to synced, peak heap in use, the heap its store
 * keeps, peak RSS. Ours on its default path (paged LIST, pages of 250) and on the streaming
 * watch-list, and `@kubernetes/client-node`'s informer (`makeInformer`'s `ListWatch`: one unpaged
 * LIST), one after the other against the same server. Every child gets `--max-old-space-size=8192`:
 * client-node's unpaged 100,000-pod LIST (≈ 490 MB of JSON) needs more than some machines' default
 * limit, and the same flag for every informer keeps the comparison the same. Ours gets a 20-minute
 * `listTimeoutMs` so that one listing is measured whole on a loaded machine. One run (it is heavy on
 * a shared machine); `--runs` is not applied.
 */
import { DEFAULT_LIST_PAGE_SIZE } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { measureInChild, type MemoryReading, type SyncJob } from '../lib/memory.js';
import { MEMORY_METHOD } from './initial-sync.js';

/** One informer's figures: ms to synced, bytes. */
export interface ScaleInformerResult {
  readonly syncMs: number;
  readonly heapPerPodBytes: number;
  readonly peakHeapBytes: number;
  readonly storeHeapBytes: number;
  readonly peakHeapToStoreRatio: number;
  readonly peakRssBytes: number;
  readonly peakRssOverBaseBytes: number;
}

export interface ScaleResult extends ScaleInformerResult {
  readonly pods: number;
  readonly method: string;
  /** How long the server child took to create the pods (not an informer figure). */
  readonly seedMs: number;
  readonly watchList: ScaleInformerResult;
  readonly clientNode: ScaleInformerResult;
}

const HEAP_LIMIT_MB = 8192;
/** Ours: one listing may take this long (the reflector's default is 90 s). */
const LIST_TIMEOUT_MS = 1_200_000;

function figures(r: MemoryReading, pods: number): ScaleInformerResult {
  return {
    syncMs: r.syncMs,
    heapPerPodBytes: r.storeHeapBytes / pods,
    peakHeapBytes: r.peakHeapBytes,
    storeHeapBytes: r.storeHeapBytes,
    peakHeapToStoreRatio: r.peakHeapBytes / r.storeHeapBytes,
    peakRssBytes: r.peakRssBytes,
    peakRssOverBaseBytes: r.peakRssOverBaseBytes,
  };
}

export async function runScale(ctx: BenchContext): Promise<ScaleResult> {
  const pods = ctx.smoke ? 2_000 : 100_000;
  const server = await ApiServerProcess.start(pods + 100);
  try {
    const seedStarted = performance.now();
    await server.seed(pods);
    const seedMs = performance.now() - seedStarted;
    const base = { kubeconfig: server.kubeconfig, pods, heapLimitMb: HEAP_LIMIT_MB };
    // One listing, measured whole: the first run (2026-12-02, load average ≈ 50) hit the default 90 s
    // listTimeoutMs on 100,000 pods and relisted, which measures a retry, not a cold start.
    const listing = { listTimeoutMs: LIST_TIMEOUT_MS };
    const measure = async (job: SyncJob): Promise<ScaleInformerResult> => {
      const reading = await measureInChild(job, 1_800_000);
      await server.dropWatches();
      return figures(reading, pods);
    };
    const ours = await measure({
      ...base,
      ...listing,
      kind: 'reflector',
      initialList: 'list',
      listPageSize: DEFAULT_LIST_PAGE_SIZE,
    });
    const watchList = await measure({
      ...base,
      kind: 'reflector',
      initialList: 'watch-list',
      listPageSize: DEFAULT_LIST_PAGE_SIZE,
    });
    const clientNode = await measure({ ...base, kind: 'client-node' });
    const mb = (b: number): string => (b / 1e6).toFixed(0);
    console.log(
      `\nscale: cold start against ${pods} pods (seeded in ${(seedMs / 1000).toFixed(1)} s), one child process per informer:`,
    );
    console.log('  informer                 synced s   peak MB   store MB   peak/store   B/pod   peak RSS MB');
    for (const [label, f] of [
      ['ours (LIST, pages 250)', ours],
      ['ours (watch-list)', watchList],
      ['client-node informer', clientNode],
    ] as const) {
      console.log(
        `  ${label.padEnd(23)}  ${(f.syncMs / 1000).toFixed(1).padStart(8)}   ${mb(f.peakHeapBytes).padStart(7)}   ${mb(f.storeHeapBytes).padStart(8)}   ${f.peakHeapToStoreRatio.toFixed(2).padStart(10)}   ${f.heapPerPodBytes.toFixed(0).padStart(5)}   ${mb(f.peakRssBytes).padStart(11)}`,
      );
    }
    return { pods, method: MEMORY_METHOD, seedMs, ...ours, watchList, clientNode };
  } finally {
    await server.close();
  }
}
