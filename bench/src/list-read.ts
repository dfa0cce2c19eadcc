/**
 * Reading one unpaged LIST body (the replay serves the apiserver's LIST as one page) three ways,
 * alternating in one process: the byte reader with its WebAssembly scanner (over 4 MiB, the body is
 * loaded a window at a time), the byte reader with the JavaScript scanner only, and `JSON.parse` of
 * the decoded body. Every item must be read by the byte reader itself. BENCHMARKS.md (15e).
 *
 *   pnpm --filter @reconcile-loop/bench list-read -- --pods=5000 --rounds=12
 */
import { parseListPage, podSchema, useWasmScan } from '@reconcile-loop/k8s-types';
import { makePod } from './lib/pods.js';
import { summarize } from './lib/stats.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const pods = Number(arg('pods', '5000'));
const rounds = Number(arg('rounds', '12'));
const warmUp = 2;

const body = Buffer.from(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '999999' }, items: Array.from({ length: pods }, (_, i) => makePod(i)) }));
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc (the pnpm script does)');

const modes = ['WebAssembly scanner', 'JavaScript scanner', 'JSON.parse'] as const;
const times = new Map<string, number[]>(modes.map((m) => [m, []]));
for (let round = 0; round < rounds + warmUp; round++) {
  // Each round starts with another mode, so none always runs after another's garbage.
  for (let k = 0; k < modes.length; k++) {
    const mode = modes[(k + round) % modes.length]!;
    gc();
    const started = performance.now();
    if (mode === 'JSON.parse') JSON.parse(body.toString('utf8'));
    else {
      useWasmScan(mode === 'WebAssembly scanner');
      const page = parseListPage(body, podSchema);
      if (page?.items.length !== pods || page.items.some((item) => item.view === undefined)) throw new Error(`${mode}: the byte reader did not read every item`);
    }
    if (round >= warmUp) times.get(mode)!.push(performance.now() - started);
  }
}
useWasmScan(true);
console.log(`node ${process.version}, unpaged LIST of ${pods} pods, ${(body.length / 1e6).toFixed(1)} MB, ${rounds} rounds after ${warmUp} warm-up (ms, min / median / max)`);
const base = summarize(times.get('JSON.parse')!).median;
for (const mode of modes) {
  const s = summarize(times.get(mode)!);
  console.log(`  ${mode.padEnd(20)} ${s.min.toFixed(1)} / ${s.median.toFixed(1)} / ${s.max.toFixed(1)}   ${(s.median / base).toFixed(2)}× JSON.parse`);
}
