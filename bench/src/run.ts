/**
 * `pnpm bench` (full sizes, several runs) and `pnpm bench:smoke` (tiny sizes, one run: proves every
 * benchmark still runs and returns a well-formed result; never a pass/fail on time).
 *
 * Flags: --smoke, --runs=<n>, --only=<name,...> (throughput, memory, relist, latency, retry, queue).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runQueue } from './benchmarks/queue.js';
import { runRelist } from './benchmarks/relist.js';
import { runRetry } from './benchmarks/retry.js';
import { runWatch } from './benchmarks/watch.js';
import { checkNumber, checkNumbers, type BenchContext } from './lib/context.js';

const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const runsArg = args.find((a) => a.startsWith('--runs='));
const onlyArg = args.find((a) => a.startsWith('--only='));
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',')) : undefined;
const ctx: BenchContext = { smoke, runs: runsArg ? Number(runsArg.slice('--runs='.length)) : smoke ? 1 : 5 };
if (!Number.isInteger(ctx.runs) || ctx.runs < 1) throw new Error(`--runs must be a positive integer`);

const benchmarks = {
  throughput: (c: BenchContext) => runWatch(c, { throughput: true, memory: selectedSet.has('memory') }),
  memory: (c: BenchContext) => (selectedSet.has('throughput') ? Promise.resolve(undefined) : runWatch(c, { throughput: false, memory: true })),
  relist: runRelist,
  retry: runRetry,
  queue: runQueue,
} as const;
type Name = keyof typeof benchmarks;

const selected = (Object.keys(benchmarks) as Name[]).filter((name) => only === undefined || only.has(name));
const selectedSet = new Set<string>(selected);
if (only !== undefined) for (const name of only) if (!(name in benchmarks)) throw new Error(`unknown benchmark: ${name}`);

const machine = {
  node: process.version,
  v8: process.versions.v8,
  platform: `${process.platform}-${process.arch}`,
  cpus: availableParallelism(),
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGB: Math.round(totalmem() / 1024 ** 3),
  loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
};
console.log(`reconcile-loop benchmarks (${smoke ? 'smoke: tiny sizes, 1 run, timings meaningless' : `${ctx.runs} runs each`})`);
console.log(`node ${machine.node}, ${machine.cpus} cpus (${machine.cpuModel}), ${machine.memoryGB} GB, load average ${machine.loadAverageAtStart.join(' ')}`);

const results: Record<string, unknown> = {};
const failures: string[] = [];
for (const name of selected) {
  const started = performance.now();
  try {
    const result = await benchmarks[name](ctx);
    checkNumbers(name, result);
    results[name] = result;
    console.log(`(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    failures.push(name);
    console.error(`\n${name} FAILED:`, error);
  }
}

const summary = {
  ...machine,
  date: new Date().toISOString(),
  mode: smoke ? 'smoke' : 'full',
  runs: ctx.runs,
  loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
  ...results,
};

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'results', smoke ? 'smoke.json' : only ? `partial-${[...selected].join('-')}.json` : 'latest.json');
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify(summary, null, 2)}\n`);
console.log(`\nwrote ${out}`);
checkNumber('cpus', summary.cpus);

if (failures.length > 0) {
  console.error(`\n${failures.length} benchmark(s) failed: ${failures.join(', ')}`);
  process.exitCode = 1;
}
