/**
 * Benchmark: initial sync memory. The peak heap while a reflector syncs N realistic pods and the
 * heap its synced store keeps, for the LIST path (paged by the default 250 and by client-go's 500, and unpaged) and
 * the streaming watch-list path, each against the embedded apiserver in a child process (its heap
 * is not ours). Issue 15's target: peak ≤ 1.5× the final store. Medians of runs alternating the
 * paths after one warm-up of each.
 */
import { DEFAULT_LIST_PAGE_SIZE } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { measureInitialSync, type InitialSyncPath } from '../lib/initial-sync.js';
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
  peakBytes: number;
  storeBytes: number;
  peakToStoreRatio: number;
  peakUsedBytes: number;
  peakRuns: Summary;
}

export interface InitialSyncSizeResult {
  pods: number;
  paths: Record<InitialSyncPathName, InitialSyncPathResult>;
}

export interface InitialSyncResult {
  /** The first size, flattened: `initialSync.list.peakBytes` and so on. */
  list: InitialSyncPathResult;
  list500: InitialSyncPathResult;
  listUnpaged: InitialSyncPathResult;
  watchList: InitialSyncPathResult;
  pods: number;
  sizes: InitialSyncSizeResult[];
}

export async function runInitialSync(ctx: BenchContext): Promise<InitialSyncResult> {
  const sizes = (ctx.smoke ? [200] : [5_000, 20_000]).filter((n) => ctx.pods === undefined || ctx.pods.has(n));
  const names = Object.keys(INITIAL_SYNC_PATHS) as InitialSyncPathName[];
  const out: InitialSyncSizeResult[] = [];
  for (const pods of sizes) {
    const server = await ApiServerProcess.start(pods + 100);
    try {
      await server.seed(pods);
      for (const name of names) await measureInitialSync(server.kubeconfig, pods, INITIAL_SYNC_PATHS[name]); // warm-up
      const samples = Object.fromEntries(names.map((n) => [n, [] as Awaited<ReturnType<typeof measureInitialSync>>[]])) as Record<
        InitialSyncPathName,
        Awaited<ReturnType<typeof measureInitialSync>>[]
      >;
      const runs = ctx.smoke ? 1 : Math.max(3, Math.min(ctx.runs, 5));
      for (let r = 0; r < runs; r++) {
        for (const name of names) {
          samples[name].push(await measureInitialSync(server.kubeconfig, pods, INITIAL_SYNC_PATHS[name]));
          await server.dropWatches();
        }
      }
      const paths = Object.fromEntries(
        names.map((name) => {
          const s = samples[name];
          const peak = summarize(s.map((x) => x.peakBytes));
          const store = summarize(s.map((x) => x.storeBytes)).median;
          return [
            name,
            {
              peakBytes: peak.median,
              storeBytes: store,
              peakToStoreRatio: peak.median / store,
              peakUsedBytes: summarize(s.map((x) => x.peakUsedBytes)).median,
              peakRuns: peak,
            },
          ];
        }),
      ) as Record<InitialSyncPathName, InitialSyncPathResult>;
      out.push({ pods, paths });
      const mb = (b: number): string => (b / 1e6).toFixed(1);
      console.log(`\ninitial sync, ${pods} pods (medians of ${runs}):`);
      console.log('  path          peak MB   store MB   peak/store   before-GC high-water MB');
      for (const name of names) {
        const p = paths[name];
        console.log(
          `  ${name.padEnd(12)}  ${mb(p.peakBytes).padStart(7)}   ${mb(p.storeBytes).padStart(8)}   ${p.peakToStoreRatio.toFixed(2).padStart(10)}   ${mb(p.peakUsedBytes).padStart(8)}`,
        );
      }
    } finally {
      await server.close();
    }
  }
  const first = out[0];
  if (first === undefined) throw new Error('initial-sync: no size selected');
  return { ...first.paths, pods: first.pods, sizes: out };
}
