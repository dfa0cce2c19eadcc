/**
 * One initial-sync path at one size, by the one memory method (`lib/memory.ts`): the quick probe
 * behind (28c)'s before/after figures, cheaper than `--only=initial-sync`'s four paths.
 *
 *   pnpm --filter @reconcile-loop/bench sync-one -- --path=list --pods=5000 --runs=3
 */
import { INITIAL_SYNC_PATHS, pathResult, type InitialSyncPathName } from './benchmarks/initial-sync.js';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { measureInChild, type MemoryReading } from './lib/memory.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const names = arg('path', 'list').split(',') as InitialSyncPathName[];
for (const name of names) if (!(name in INITIAL_SYNC_PATHS)) throw new Error(`unknown path: ${name}`);
const pods = Number(arg('pods', '5000'));
const runs = Number(arg('runs', '1'));

const server = await ApiServerProcess.start(pods + 100);
try {
  await server.seed(pods);
  for (const name of names) {
    const readings: MemoryReading[] = [];
    for (let r = 0; r < runs; r++) {
      const reading = await measureInChild({
        kind: 'reflector',
        kubeconfig: server.kubeconfig,
        pods,
        ...INITIAL_SYNC_PATHS[name],
      });
      readings.push(reading);
      await server.dropWatches();
      const mb = (b: number): string => (b / 1e6).toFixed(1);
      console.log(
        `${name} ${pods} run ${r + 1}: peak ${mb(reading.peakHeapBytes)} MB, store ${mb(reading.storeHeapBytes)} MB, ` +
          `ratio ${(reading.peakHeapBytes / reading.storeHeapBytes).toFixed(2)}, peak RSS ${mb(reading.peakRssBytes)} MB, gcs ${reading.gcs}`,
      );
    }
    const p = pathResult(readings);
    console.log(`${name} ${pods} median of ${runs}: peak/store ${p.peakToStoreRatio.toFixed(2)}`);
  }
} finally {
  await server.close();
}
