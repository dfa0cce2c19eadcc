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
import { settleHeap } from './lib/heap.js';
import { startOurs } from './lib/pipelines.js';
import { fmt, summarize } from './lib/stats.js';
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
  const modes = ['WebAssembly scanner', 'JavaScript scanner only', 'JSON.parse floor'] as const;
  const samples: Record<string, number[]> = {};
  // One unmeasured round first (warm-up), then `runs` measured rounds.
  for (let round = 0; round <= runs; round++) {
    for (const mode of modes) {
      await settleHeap();
      const start = performance.now();
      if (mode === 'JSON.parse floor') parseFloor(listBody, lines);
      else {
        useWasmScan(mode === 'WebAssembly scanner');
        const pipeline = startOurs({ kubeconfig, frames, watchFrom });
        await pipeline.synced;
        await pipeline.done;
        await pipeline.stop();
      }
      if (round > 0) (samples[mode] ??= []).push(performance.now() - start);
      await server.dropWatches();
    }
  }
  useWasmScan(true);
  const floor = summarize(samples['JSON.parse floor']!).median;
  console.log(`node ${process.version}, ${pods} pods, ${frames} frames, replay; ms, min / median / max of ${runs}`);
  for (const mode of modes) {
    const s = summarize(samples[mode]!);
    console.log(`  ${mode.padEnd(24)} ${fmt(s.min)} / ${fmt(s.median)} / ${fmt(s.max)}  ${(s.median / floor).toFixed(3)}× the floor`);
  }
} finally {
  await server.close();
}
