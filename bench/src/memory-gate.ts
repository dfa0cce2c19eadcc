/**
 * The memory gate CI runs (issue 15; kube-rs fails its dhat bench above 110 %): a small fixed
 * workload — 2,000 realistic pods from the embedded apiserver in a child process — measured by the
 * benchmarks' one memory method (`lib/memory.ts`: each sync cold in a child process of its own;
 * heap in use = `heapUsed + external`, its peak read at every GC's start and by a 2 ms timer; the
 * store after forced GCs) for the heap the store keeps per cached object and the initial-sync peak
 * of the paged LIST (the default) and of the streaming watch-list. Every child runs under the
 * method's container limit (512 MiB): in a memory cgroup where one can be made, else with V8 flags
 * approximating it, and each has its own baseline (`26` and `26-flags`), since the young
 * generation, and so the held peak, differs between them. Medians of 5 runs are compared with the
 * committed baseline (`bench/memory-baseline.json`, per Node major: heap sizes move with V8) and the
 * gate fails above 110 % of it. Timing is never gated.
 *
 *   pnpm --filter @reconcile-loop/bench memory-gate              # check (exit 1 above 110 %)
 *   pnpm --filter @reconcile-loop/bench memory-gate -- --update  # re-baseline this Node major
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { INITIAL_SYNC_PATHS } from './benchmarks/initial-sync.js';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { CONTAINER_MB, limitOf, measureInChild, type MemoryReading } from './lib/memory.js';
import { summarize } from './lib/stats.js';

const PODS = 2_000;
const RUNS = 5;
/** A measurement above this fraction of its baseline fails the gate. */
export const GATE_RATIO = 1.1;
const WORKLOAD = `${PODS} realistic pods (bench makePod), embedded apiserver in a child process, one cold sync per child process under a ${CONTAINER_MB} MiB memory limit, medians of ${RUNS}; heap in use = heapUsed + external (lib/memory.ts)`;

/** The gated metrics, in bytes. */
interface Metrics {
  /** Heap in use the store keeps per cached pod after a LIST (paged) sync. */
  heapPerObjectBytes: number;
  /** Peak heap in use during the paged LIST sync, over the base. */
  listPeakBytes: number;
  /** Peak heap in use during the watch-list sync, over the base. */
  watchListPeakBytes: number;
}

interface Baselines {
  workload: string;
  readonly ratio: number;
  readonly byNodeMajor: Record<string, Metrics & { node: string; date: string }>;
}

const args = process.argv.slice(2).filter((a) => a !== '--');
for (const a of args) if (a !== '--update') throw new Error(`unknown flag: ${a} (only --update)`);
const update = args.includes('--update');
const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'memory-baseline.json');
const major = process.versions.node.split('.')[0]!;

const server = await ApiServerProcess.start(PODS + 100);
let code = 0;
try {
  await server.seed(PODS);
  const list: MemoryReading[] = [];
  const watchList: MemoryReading[] = [];
  // The paths alternate; every sync is the first of its own process (no warm-up: a cold start is what is measured).
  const job = { kind: 'reflector', kubeconfig: server.kubeconfig, pods: PODS, containerMb: CONTAINER_MB } as const;
  for (let r = 0; r < RUNS; r++) {
    list.push(await measureInChild({ ...job, ...INITIAL_SYNC_PATHS.list }));
    await server.dropWatches();
    watchList.push(await measureInChild({ ...job, ...INITIAL_SYNC_PATHS.watchList }));
    await server.dropWatches();
  }
  const measured: Metrics = {
    heapPerObjectBytes: summarize(list.map((s) => s.storeHeapBytes / PODS)).median,
    listPeakBytes: summarize(list.map((s) => s.peakHeapBytes)).median,
    watchListPeakBytes: summarize(watchList.map((s) => s.peakHeapBytes)).median,
  };
  const limitedBy = limitOf([...list, ...watchList]);
  if (limitedBy === 'mixed') throw new Error('memory gate: children ran under different limits (a cgroup for some, not others)');
  const expectedLimit = CONTAINER_MB * 2 ** 20;
  for (const r of [...list, ...watchList]) {
    // Node must have read the cgroup's limit: else the heap was sized by the machine, not the limit.
    if (limitedBy === 'cgroup' && r.containerLimitBytes !== expectedLimit)
      throw new Error(`memory gate: a child saw a memory limit of ${String(r.containerLimitBytes)} bytes, not ${expectedLimit}`);
  }
  // A cgroup and the flags approximating it size the young generation differently: one baseline each.
  const key = limitedBy === 'cgroup' ? major : `${major}-${limitedBy}`;
  const spread = (xs: number[]): string => `${Math.round(Math.min(...xs))}..${Math.round(Math.max(...xs))}`;
  console.log(
    `memory gate: ${PODS} pods, medians of ${RUNS}, one cold sync per child process, ${CONTAINER_MB} MiB limit by ${limitedBy}, node ${process.version}`,
  );
  console.log(
    `  runs: heap/object ${spread(list.map((s) => s.storeHeapBytes / PODS))} B, LIST peak ${spread(list.map((s) => s.peakHeapBytes))} B, watch-list peak ${spread(watchList.map((s) => s.peakHeapBytes))} B`,
  );
  const baselines: Baselines = await readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as Baselines,
    () => ({ workload: WORKLOAD, ratio: GATE_RATIO, byNodeMajor: {} }),
  );
  if (update) {
    // Baselines taken by another method are not comparable: an update under this method drops them.
    if (baselines.workload !== WORKLOAD) for (const k of Object.keys(baselines.byNodeMajor)) delete baselines.byNodeMajor[k];
    baselines.workload = WORKLOAD;
    baselines.byNodeMajor[key] = { ...measured, node: process.version, date: new Date().toISOString() };
    await writeFile(file, `${JSON.stringify(baselines, null, 2)}\n`);
    console.log(`  baseline ${key} written to ${file}`);
  } else {
    const baseline = baselines.workload === WORKLOAD ? baselines.byNodeMajor[key] : undefined;
    if (baselines.workload !== WORKLOAD) {
      console.error(`  FAIL: ${file} was taken by another method (${baselines.workload}); re-baseline with --update`);
      code = 1;
    } else if (baseline === undefined) {
      console.error(
        `  FAIL: no baseline ${key} in ${file}; create it with: pnpm --filter @reconcile-loop/bench memory-gate -- --update${limitedBy === 'cgroup' ? '' : ` (with RL_BENCH_CONTAINER=${limitedBy})`}`,
      );
      code = 1;
    } else {
      for (const key of Object.keys(measured) as Array<keyof Metrics>) {
        const ratio = measured[key] / baseline[key];
        const verdict = ratio > GATE_RATIO ? 'FAIL' : 'ok';
        console.log(
          `  ${verdict.padEnd(4)} ${key.padEnd(20)} ${Math.round(measured[key]).toString().padStart(10)} B  baseline ${Math.round(baseline[key]).toString().padStart(10)} B  ${(ratio * 100).toFixed(1)} %`,
        );
        if (ratio > GATE_RATIO) code = 1;
      }
      if (code !== 0)
        console.error(
          `  FAIL: above ${Math.round(GATE_RATIO * 100)} % of the baseline. If the growth is intended, re-baseline: pnpm --filter @reconcile-loop/bench memory-gate -- --update`,
        );
    }
  }
} finally {
  await server.close();
}
process.exit(code);
