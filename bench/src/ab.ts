/**
 * One of issue 15's levers on and off, in one process: our whole pipeline (a), alternating runs with
 * the lever on and off, beside the `JSON.parse` floor (c) of the same bytes. Alternating in one
 * process keeps a noisy machine's drift out of the comparison.
 *
 *   --lever=scanner  the byte reader's WebAssembly scanner against `useWasmScan(false)`, served by
 *                    the replay (BENCHMARKS.md (15c));  `pnpm --filter @reconcile-loop/bench scan-ab`
 *   --lever=socket   kube-client's bare-socket watch against node:http (`watchOnBareSocket: false`),
 *                    `--via=replay` (default) or `--via=apiserver` (BENCHMARKS.md (15d));
 *                    `pnpm --filter @reconcile-loop/bench socket-ab`
 *   --lever=backlog  the bare socket's reads growing to 1 MiB under a backlog against staying at 128 KiB
 *                    (`watchBacklogReadBytes`), `--via` as above (BENCHMARKS.md (15e));
 *                    `pnpm --filter @reconcile-loop/bench backlog-ab`
 *   --lever=list-ahead  the reflector requesting the next LIST page as soon as a page's body has arrived,
 *                    against only once it has been read (client-go's pager); `--via` as above
 *                    (BENCHMARKS.md (15e)); `pnpm --filter @reconcile-loop/bench list-ahead-ab -- --via=apiserver`
 *
 *   pnpm --filter @reconcile-loop/bench socket-ab -- --via=apiserver --pods=5000 --frames=50000 --runs=5
 */
import { useWasmScan } from '@reconcile-loop/k8s-types/internal';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { alternate } from './lib/alternate.js';
import { startOurs, timeRun, type PipelineOptions } from './lib/pipelines.js';
import { parseFloor } from './lib/wire.js';
import { prepareWorkload } from './lib/workload.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const lever = arg('lever', '');
const pods = Number(arg('pods', '5000'));
const frames = Number(arg('frames', '50000'));
const runs = Number(arg('runs', lever === 'socket' ? '5' : '7'));
const via = arg('via', 'replay');

/** A lever's two settings: its mode names, and how each changes the pipeline's options or the process. */
interface Lever {
  readonly on: string;
  readonly off: string;
  set(on: boolean, options: PipelineOptions): PipelineOptions;
}
const levers: Record<string, Lever> = {
  scanner: {
    on: 'WebAssembly scanner',
    off: 'JavaScript scanner only',
    set: (on, options) => {
      useWasmScan(on);
      return options;
    },
  },
  socket: { on: 'bare socket', off: 'node:http', set: (on, options) => ({ ...options, watchOnBareSocket: on }) },
  backlog: {
    on: 'reads grow to 1 MiB',
    off: 'reads stay 128 KiB',
    set: (on, options) => ({ ...options, watchBacklogReadBytes: on ? 1024 * 1024 : 128 * 1024 }),
  },
  'list-ahead': {
    on: 'next page requested ahead',
    off: 'next page after the read',
    set: (on, options) => ({ ...options, listAhead: on }),
  },
};
const settings = Object.hasOwn(levers, lever) ? levers[lever]! : undefined;
if (settings === undefined)
  throw new Error(`--lever must be one of ${Object.keys(levers).join(', ')}, got ${JSON.stringify(lever)}`);
if (via !== 'replay' && via !== 'apiserver') throw new Error(`--via must be replay or apiserver, got ${via}`);
const floor = 'JSON.parse floor';

const server = await ApiServerProcess.start(pods + frames + 100);
try {
  const { watchFrom, listBody, lines, replayKubeconfig } = await prepareWorkload(server, pods, frames);
  const kubeconfig = via === 'replay' ? replayKubeconfig : server.kubeconfig;
  await alternate(
    server,
    [settings.on, settings.off, floor],
    floor,
    runs,
    (mode) =>
      mode === floor
        ? parseFloor(listBody, lines)
        : timeRun(startOurs, settings.set(mode === settings.on, { kubeconfig, frames, watchFrom }), pods, mode),
    `node ${process.version}, ${pods} pods, ${frames} frames, via ${via}`,
  );
} finally {
  useWasmScan(true);
  await server.close();
}
