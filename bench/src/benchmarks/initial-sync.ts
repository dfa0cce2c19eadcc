/**
 * Benchmark: initial sync memory, by the one method of `lib/memory.ts`. Each path — the LIST
 * paged by the default 250 and by client-go's 500, one unpaged LIST, and the streaming watch-list —
 * syncs N realistic pods cold in a child process of its own, against the embedded apiserver in
 * another child; per run: peak heap in use (`heapUsed + external`), peak RSS (the kernel's
 * high-water mark) and the store's heap after forced GCs. Issue 15's and 28's target: peak ≤ 1.5×
 * the store. Medians of runs, paths alternated within each run.
 */
import { DEFAULT_LIST_PAGE_SIZE } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import type { InitialSyncPath } from '../lib/initial-sync.js';
import { CONTAINER_MB, limitOf, measureInChild, type MemoryReading } from '../lib/memory.js';
import { summarize, type Summary } from '../lib/stats.js';

/** The paths measured, by the key they get in `latest.json` (`initialSync.<key>.*`). */
export const INITIAL_SYNC_PATHS = {
  /** The default: pages of `DEFAULT_LIST_PAGE_SIZE` (250). */
  list: { initialList: 'list', listPageSize: DEFAULT_LIST_PAGE_SIZE },
  /** client-go's page size. */
  list500: { initialList: 'list', listPageSize: 500 },
  listUnpaged: { initialList: 'list', listPageSize: 0 },
  watchList: { initialList: 'watch-list', listPageSize: DEFAULT_LIST_PAGE_SIZE },
} as const satisfies Record<string, InitialSyncPath>;

export type InitialSyncPathName = keyof typeof INITIAL_SYNC_PATHS;

/** One path at one size: medians, in bytes (and the ratio of the medians). */
export interface InitialSyncPathResult {
  /** Peak heap in use during the sync over the base (`heapUsed + external`), garbage included. */
  peakBytes: number;
  /** Peak live heap, from the live child (a full GC every 2 ms of its sync: `lib/memory.ts`), over its base. */
  livePeakBytes: number;
  /** `livePeakBytes / storeBytes`: what the ≤ 1.5× target is judged on. */
  livePeakToStoreRatio: number;
  /** The largest young generation (new space) V8 had during the sync. */
  youngGenerationBytes: number;
  /** Heap in use the synced store keeps, over the base. */
  storeBytes: number;
  peakToStoreRatio: number;
  /** Kernel high-water RSS of the measuring process (absolute) and over its RSS before the sync. */
  peakRssBytes: number;
  peakRssOverBaseBytes: number;
  syncMs: number;
  peakRuns: Summary;
}

export interface InitialSyncSizeResult {
  pods: number;
  paths: Record<InitialSyncPathName, InitialSyncPathResult>;
}

export interface InitialSyncResult {
  /** How the figures were read (one line; BENCHMARKS.md (28c), (28f) have the method). */
  method: string;
  /** The memory limit every measuring child ran under, MiB, and how: a cgroup, or V8 flags approximating one. */
  containerMb: number;
  limitedBy: ReturnType<typeof limitOf>;
  /** The first size, flattened: `initialSync.list.peakBytes` and so on. */
  list: InitialSyncPathResult;
  list500: InitialSyncPathResult;
  listUnpaged: InitialSyncPathResult;
  watchList: InitialSyncPathResult;
  pods: number;
  sizes: InitialSyncSizeResult[];
}

/** How `scale` and each path's held child read memory (one line; BENCHMARKS.md (28c), (28f)). */
export const MEMORY_METHOD =
  'one cold sync per child process, under a memory limit (containerMb: a cgroup, or V8 flags approximating one); peak = max heapUsed+external (every GC start, 2 ms timer) over the settled base; store = heapUsed+external after forced GCs; peak RSS = VmHWM reset at sync start';

/** What initial-sync adds: the live peak, judged against the store. */
const LIVE_PEAK_METHOD =
  'live peak = max heapUsed+external right after a forced full GC every 2 ms (and after every other GC) in a second child per run, over its settled base; the ≤ 1.5× target is livePeakToStoreRatio';

/** One run of a path: the held child's reading and the live child's (`lib/memory.ts`). */
export interface PathRun {
  readonly held: MemoryReading;
  readonly live: MemoryReading;
}

/** Measures one run of `path`: the held child, then the live child, each cold in its own process. */
export async function measurePath(
  server: Pick<ApiServerProcess, 'kubeconfig' | 'dropWatches'>,
  pods: number,
  path: InitialSyncPath,
  containerMb = CONTAINER_MB,
): Promise<PathRun> {
  const job = { kind: 'reflector', kubeconfig: server.kubeconfig, pods, ...path, containerMb } as const;
  const held = await measureInChild(job);
  await server.dropWatches();
  const live = await measureInChild({ ...job, live: true });
  await server.dropWatches();
  return { held, live };
}

/** Medians of `runs` as one path's result. */
export function pathResult(runs: readonly PathRun[]): InitialSyncPathResult {
  const readings = runs.map((r) => r.held);
  const peak = summarize(readings.map((x) => x.peakHeapBytes));
  const store = summarize(readings.map((x) => x.storeHeapBytes)).median;
  const live = summarize(runs.map((r) => r.live.livePeakBytes ?? Number.NaN)).median;
  return {
    peakBytes: peak.median,
    livePeakBytes: live,
    livePeakToStoreRatio: live / store,
    youngGenerationBytes: summarize(readings.map((x) => x.youngGenerationBytes)).median,
    storeBytes: store,
    peakToStoreRatio: peak.median / store,
    peakRssBytes: summarize(readings.map((x) => x.peakRssBytes)).median,
    peakRssOverBaseBytes: summarize(readings.map((x) => x.peakRssOverBaseBytes)).median,
    syncMs: summarize(readings.map((x) => x.syncMs)).median,
    peakRuns: peak,
  };
}

export async function runInitialSync(ctx: BenchContext): Promise<InitialSyncResult> {
  const sizes = (ctx.smoke ? [200] : [5_000, 20_000]).filter((n) => ctx.pods === undefined || ctx.pods.has(n));
  const names = Object.keys(INITIAL_SYNC_PATHS) as InitialSyncPathName[];
  const out: InitialSyncSizeResult[] = [];
  const readings: MemoryReading[] = [];
  for (const pods of sizes) {
    const server = await ApiServerProcess.start(pods + 100);
    try {
      await server.seed(pods);
      const samples = Object.fromEntries(names.map((n) => [n, [] as PathRun[]])) as Record<InitialSyncPathName, PathRun[]>;
      const runs = ctx.smoke ? 1 : Math.max(3, Math.min(ctx.runs, 5));
      for (let r = 0; r < runs; r++) {
        for (const name of names) {
          samples[name].push(await measurePath(server, pods, INITIAL_SYNC_PATHS[name]));
        }
      }
      const paths = Object.fromEntries(names.map((name) => [name, pathResult(samples[name])])) as Record<
        InitialSyncPathName,
        InitialSyncPathResult
      >;
      out.push({ pods, paths });
      const mb = (b: number): string => (b / 1e6).toFixed(1);
      const sized = names.flatMap((n) => samples[n].flatMap((r) => [r.held, r.live]));
      readings.push(...sized);
      const limit = limitOf(sized);
      console.log(
        `\ninitial sync, ${pods} pods (medians of ${runs}, one cold child process per sync, ${CONTAINER_MB} MiB memory limit by ${limit}):`,
      );
      console.log(
        '  path          live MB   peak MB   store MB   live/store   peak/store   young MB   peak RSS MB (over base)   sync ms',
      );
      for (const name of names) {
        const p = paths[name];
        console.log(
          `  ${name.padEnd(12)}  ${mb(p.livePeakBytes).padStart(7)}   ${mb(p.peakBytes).padStart(7)}   ${mb(p.storeBytes).padStart(8)}   ${p.livePeakToStoreRatio.toFixed(2).padStart(10)}   ${p.peakToStoreRatio.toFixed(2).padStart(10)}   ${mb(p.youngGenerationBytes).padStart(8)}   ${mb(p.peakRssBytes).padStart(11)} (${mb(p.peakRssOverBaseBytes)})   ${p.syncMs.toFixed(0).padStart(7)}`,
        );
      }
    } finally {
      await server.close();
    }
  }
  const first = out[0];
  if (first === undefined) throw new Error('initial-sync: no size selected');
  return {
    method: `${MEMORY_METHOD}; ${LIVE_PEAK_METHOD}`,
    containerMb: CONTAINER_MB,
    limitedBy: limitOf(readings),
    ...first.paths,
    pods: first.pods,
    sizes: out,
  };
}
