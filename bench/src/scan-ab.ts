/**
 * The byte reader's WebAssembly scanner, on and off, in one process (issue 15; BENCHMARKS.md (15c)):
 * our whole pipeline (a) against the replay of the apiserver's bytes, alternating runs with
 * `useWasmScan(true)` and `useWasmScan(false)`, beside the `JSON.parse` floor (c) of the same
 * bytes. Alternating in one process keeps a noisy machine's drift out of the comparison.
 *
 *   pnpm --filter @reconcile-loop/bench scan-ab -- --pods=5000 --frames=50000 --runs=7
 */
import { useWasmScan } from '@reconcile-loop/k8s-types';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { alternate } from './lib/alternate.js';
import { startOurs } from './lib/pipelines.js';
import { parseFloor } from './lib/wire.js';
import { prepareWorkload } from './lib/workload.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): number => Number(args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const pods = arg('pods', '5000');
const frames = arg('frames', '50000');
const runs = arg('runs', '7');

const server = await ApiServerProcess.start(pods + frames + 100);
try {
  const { watchFrom, listBody, lines, replayKubeconfig: kubeconfig } = await prepareWorkload(server, pods, frames);
  await alternate(
    server,
    ['WebAssembly scanner', 'JavaScript scanner only', 'JSON.parse floor'],
    'JSON.parse floor',
    runs,
    async (mode) => {
      if (mode === 'JSON.parse floor') return void parseFloor(listBody, lines);
      useWasmScan(mode === 'WebAssembly scanner');
      const pipeline = startOurs({ kubeconfig, frames, watchFrom });
      await pipeline.synced;
      await pipeline.done;
      await pipeline.stop();
    },
    `node ${process.version}, ${pods} pods, ${frames} frames, replay`,
  );
  useWasmScan(true);
} finally {
  await server.close();
}
