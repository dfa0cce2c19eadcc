/**
 * Reading one unpaged LIST body (the replay serves the apiserver's LIST as one page) three ways,
 * alternating in one process (`alternate`): the byte reader with its WebAssembly scanner (over
 * 4 MiB, the body is loaded a window at a time), the byte reader with the JavaScript scanner only,
 * and `JSON.parse` of the decoded body (the floor). Every item must be read by the byte reader
 * itself. BENCHMARKS.md (15e).
 *
 *   pnpm --filter @reconcile-loop/bench list-read -- --pods=5000 --rounds=12
 */
import { podSchema } from '@reconcile-loop/k8s-types';
import { parseListPage, useWasmScan } from '@reconcile-loop/k8s-types/internal';
import { alternate } from './lib/alternate.js';
import { makePod } from './lib/pods.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const pods = Number(arg('pods', '5000'));
const rounds = Number(arg('rounds', '12'));

const body = Buffer.from(
  JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '999999' },
    items: Array.from({ length: pods }, (_, i) => makePod(i)),
  }),
);
const floor = 'JSON.parse';

/** One read of the body in `mode`: its ms. */
function readOnce(mode: string): number {
  const started = performance.now();
  if (mode === floor) JSON.parse(body.toString('utf8'));
  else {
    useWasmScan(mode === 'WebAssembly scanner');
    const page = parseListPage(body, podSchema);
    if (page?.items.length !== pods || page.items.some((item) => item.view === undefined))
      throw new Error(`${mode}: the byte reader did not read every item`);
  }
  return performance.now() - started;
}

try {
  await alternate(
    undefined,
    ['WebAssembly scanner', 'JavaScript scanner', floor],
    floor,
    rounds,
    readOnce,
    `node ${process.version}, unpaged LIST of ${pods} pods, ${(body.length / 1e6).toFixed(1)} MB`,
  );
} finally {
  useWasmScan(true);
}
