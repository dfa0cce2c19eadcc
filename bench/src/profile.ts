/**
 * Measured runs of one pipeline under the V8 profiler, for finding where the time goes. Only the
 * measured runs are profiled (set-up and the apiserver child are not), one `.cpuprofile` per run:
 *
 *   node --expose-gc --max-old-space-size=8192 --conditions=@reconcile-loop/source --import tsx \
 *     bench/src/profile.ts --impl=ours --pods=5000 --frames=30000
 *   node --import tsx bench/src/profile-summary.ts bench/results/profile-ours-replay-1.cpuprofile.json
 *
 * `--impl`: one or more (comma-separated) of `ours`, `client-node`, `floor`, `raw`, `sync` (rung (e)); `--via`: `replay` (default) or `apiserver`;
 * `--runs`: measured runs after one unprofiled warm-up (default 2).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { settleHeap } from './lib/heap.js';
import { startClientNode, startOurs } from './lib/pipelines.js';
import { syncPipeline } from './lib/ladder.js';
import { parseFloor, rawHttpParse } from './lib/wire.js';
import { prepareWorkload } from './lib/workload.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const impls = arg('impl', 'ours').split(',');
const pods = Number(arg('pods', '5000'));
const frames = Number(arg('frames', '30000'));
const runs = Number(arg('runs', '2'));
const via = arg('via', 'replay');
// bench/results/*.json is gitignored, hence the .cpuprofile.json name (DevTools loads it as a profile).
const outDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });

const server = await ApiServerProcess.start(pods + frames + 100);
try {
  const { watchFrom, listBody, lines, replayUrl } = await prepareWorkload(server, pods, frames);
  const url = via === 'replay' ? replayUrl : server.url;
  const kubeconfig = server.kubeconfig.replace(server.url, url);
  await mkdir(outDir, { recursive: true });
  for (const impl of impls)
    for (let r = 0; r <= runs; r++) {
      await settleHeap();
      const profiled = r > 0;
      if (profiled) await session.post('Profiler.start');
      const begin = performance.now();
      let listMs = Number.NaN;
      if (impl === 'floor') {
        parseFloor(listBody, lines);
      } else if (impl === 'raw') {
        await rawHttpParse(url, watchFrom, frames);
      } else if (impl === 'sync') {
        await syncPipeline(url, watchFrom, frames, pods);
      } else {
        const start = impl === 'ours' ? startOurs : startClientNode;
        const pipeline = start({ kubeconfig, frames, watchFrom });
        await pipeline.synced;
        listMs = performance.now() - begin;
        await pipeline.done;
        await pipeline.stop();
      }
      const ms = performance.now() - begin;
      if (profiled) {
        const { profile } = await session.post('Profiler.stop');
        const file = join(outDir, `profile-${impl}-${via}-${r}.cpuprofile.json`);
        await writeFile(file, JSON.stringify(profile));
        console.log(`${impl} via ${via}, run ${r}: ${ms.toFixed(0)} ms (LIST ${listMs.toFixed(0)} ms) → ${file}`);
      } else {
        console.log(`${impl} via ${via}, warm-up: ${ms.toFixed(0)} ms`);
      }
      await server.dropWatches();
    }
} finally {
  await server.close();
  session.disconnect();
}
