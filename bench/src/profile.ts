/**
 * One pipeline run under the profiler, for finding where the time goes:
 *
 *   node --cpu-prof --cpu-prof-dir=bench/results/profiles --expose-gc \
 *     --conditions=@reconcile-loop/source --import tsx bench/src/profile.ts --impl=ours --pods=5000 --frames=20000
 *
 * The apiserver child is not profiled (the flag is stripped from its argv). `--impl` is `ours`,
 * `client-node`, `floor` or `raw`; `--runs` repeats the measured run (the first one warms up).
 */
import { ApiServerProcess } from './lib/apiserver-process.js';
import { settleHeap } from './lib/heap.js';
import { startClientNode, startOurs } from './lib/pipelines.js';
import { fetchList, fetchWatchLines, parseFloor, rawHttpParse } from './lib/wire.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const impl = arg('impl', 'ours');
const pods = Number(arg('pods', '5000'));
const frames = Number(arg('frames', '20000'));
const runs = Number(arg('runs', '2'));

const server = await ApiServerProcess.start(pods + frames + 100);
try {
  await server.seed(pods);
  const watchFrom = String((await server.revision()).revision);
  await server.modify(frames);
  const listBody = await fetchList(server.url);
  const lines = await fetchWatchLines(server.url, watchFrom, frames);
  for (let r = 0; r < runs; r++) {
    await settleHeap();
    const begin = performance.now();
    if (impl === 'floor') {
      parseFloor(listBody, lines);
    } else if (impl === 'raw') {
      await rawHttpParse(server.url, watchFrom, frames);
    } else {
      const start = impl === 'ours' ? startOurs : startClientNode;
      const pipeline = start({ kubeconfig: server.kubeconfig, frames, watchFrom });
      await pipeline.synced;
      const synced = performance.now() - begin;
      await pipeline.done;
      console.log(`${impl}: LIST ${synced.toFixed(0)} ms`);
      await pipeline.stop();
    }
    console.log(`${impl} run ${r}: ${(performance.now() - begin).toFixed(0)} ms`);
    await server.dropWatches();
  }
} finally {
  await server.close();
}
