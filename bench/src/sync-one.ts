/**
 * One initial-sync path at one size, by the one memory method (`lib/memory.ts`): the quick probe
 * behind (28c)'s before/after figures, cheaper than `--only=initial-sync`'s four paths.
 *
 *   pnpm --filter @reconcile-loop/bench sync-one -- --path=list --pods=5000 --runs=3 [--container=MiB]
 *
 * `--container` sets the child's memory limit (default `CONTAINER_MB`, 512; 0 for none).
 */
import {
  INITIAL_SYNC_PATHS,
  measurePath,
  type PathRun,
  pathResult,
  type InitialSyncPathName,
} from './benchmarks/initial-sync.js';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { CONTAINER_MB } from './lib/memory.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const names = arg('path', 'list').split(',') as InitialSyncPathName[];
for (const name of names) if (!(name in INITIAL_SYNC_PATHS)) throw new Error(`unknown path: ${name}`);
const pods = Number(arg('pods', '5000'));
const runs = Number(arg('runs', '1'));
const containerMb = Number(arg('container', String(CONTAINER_MB)));

const server = await ApiServerProcess.start(pods + 100);
try {
  await server.seed(pods);
  for (const name of names) {
    const measured: PathRun[] = [];
    for (let r = 0; r < runs; r++) {
      const run = await measurePath(server, pods, INITIAL_SYNC_PATHS[name], containerMb);
      measured.push(run);
      const { held, live } = run;
      const mb = (b: number): string => (b / 1e6).toFixed(1);
      console.log(
        `${name} ${pods} run ${r + 1}: live peak ${mb(live.livePeakBytes ?? Number.NaN)} MB, peak ${mb(held.peakHeapBytes)} MB, ` +
          `store ${mb(held.storeHeapBytes)} MB, live/store ${((live.livePeakBytes ?? Number.NaN) / held.storeHeapBytes).toFixed(2)}, ` +
          `peak/store ${(held.peakHeapBytes / held.storeHeapBytes).toFixed(2)}, peak RSS ${mb(held.peakRssBytes)} MB, gcs ${held.gcs}, ` +
          `young ${mb(held.youngGenerationBytes)} MB, heap limit ${mb(held.heapLimitBytes)} MB, limited by ${held.limitedBy ?? 'none'}, ` +
          `live samples ${live.timerSamples}`,
      );
    }
    const p = pathResult(measured);
    console.log(
      `${name} ${pods} median of ${runs}: live peak/store ${p.livePeakToStoreRatio.toFixed(2)}, peak/store ${p.peakToStoreRatio.toFixed(2)}`,
    );
  }
} finally {
  await server.close();
}
