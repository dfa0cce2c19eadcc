/**
 * kube-client's bare-socket watch against node:http, in one process (issue 15; BENCHMARKS.md (15d)):
 * our whole pipeline (a), alternating runs that read the watch off a bare socket and through
 * node:http (`httpTransport(auth, { watchOnBareSocket: false })`), beside the `JSON.parse` floor (c)
 * of the same bytes. Alternating in one process keeps a noisy machine's drift out of the comparison.
 *
 *   pnpm --filter @reconcile-loop/bench socket-ab -- --via=apiserver --pods=5000 --frames=50000 --runs=5
 */
import { ApiServerProcess } from './lib/apiserver-process.js';
import { alternate } from './lib/alternate.js';
import { startOurs } from './lib/pipelines.js';
import { parseFloor } from './lib/wire.js';
import { prepareWorkload } from './lib/workload.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const pods = Number(arg('pods', '5000'));
const frames = Number(arg('frames', '50000'));
const runs = Number(arg('runs', '5'));
const via = arg('via', 'replay');
if (via !== 'replay' && via !== 'apiserver') throw new Error(`--via must be replay or apiserver, got ${via}`);

const server = await ApiServerProcess.start(pods + frames + 100);
try {
  const { watchFrom, listBody, lines, replayKubeconfig } = await prepareWorkload(server, pods, frames);
  const kubeconfig = via === 'replay' ? replayKubeconfig : server.kubeconfig;
  await alternate(
    server,
    ['bare socket', 'node:http', 'JSON.parse floor'],
    'JSON.parse floor',
    runs,
    async (mode) => {
      if (mode === 'JSON.parse floor') return void parseFloor(listBody, lines);
      const pipeline = startOurs({ kubeconfig, frames, watchFrom, watchOnBareSocket: mode === 'bare socket' });
      await pipeline.synced;
      await pipeline.done;
      await pipeline.stop();
    },
    `node ${process.version}, ${pods} pods, ${frames} frames, via ${via}`,
  );
} finally {
  await server.close();
}
