/**
 * `pnpm bench` (full sizes, several runs) and `pnpm bench:smoke` (tiny sizes, one run: proves every
 * benchmark still runs and returns a well-formed result; never a pass/fail on time).
 *
 * Flags: --smoke, --runs=<n>, --only=<name,...> (throughput, memory, poison, relist, latency, retry, queue, concurrency, initial-sync,
 * indexes, owned-metadata, lease-cadence, priority, reaction, scale, sharding; controller-memory only when named),
 * --pods=<N,...> (only these sizes where a benchmark takes several).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runConcurrency, type ConcurrencyResult } from './benchmarks/concurrency.js';
import { runControllerMemory, type ControllerMemoryResult } from './benchmarks/controller-memory.js';
import { runIndexes } from './benchmarks/indexes.js';
import { runInitialSync } from './benchmarks/initial-sync.js';
import { runLatency, type LatencyResult } from './benchmarks/latency.js';
import { runLeaseCadence } from './benchmarks/lease-cadence.js';
import { runOwnedMetadata } from './benchmarks/owned-metadata.js';
import { runPoison } from './benchmarks/poison.js';
import { runPriority } from './benchmarks/priority.js';
import { runQueue } from './benchmarks/queue.js';
import { runReaction } from './benchmarks/reaction.js';
import { runRelist } from './benchmarks/relist.js';
import { runRetry, type RetryResult } from './benchmarks/retry.js';
import { runScale } from './benchmarks/scale.js';
import { runSharding, type ShardingResult } from './benchmarks/sharding.js';
import { runWatch, type WatchResult } from './benchmarks/watch.js';
import { checkNumber, checkNumbers, type BenchContext } from './lib/context.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const known = ['--smoke', '--runs=', '--only=', '--pods='];
for (const a of args)
  if (!known.some((k) => (k.endsWith('=') ? a.startsWith(k) : a === k))) throw new Error(`unknown flag: ${a}`);
const smoke = args.includes('--smoke');
const runsArg = args.find((a) => a.startsWith('--runs='));
const onlyArg = args.find((a) => a.startsWith('--only='));
const podsArg = args.find((a) => a.startsWith('--pods='));
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',')) : undefined;
const ctx: BenchContext = {
  smoke,
  runs: runsArg ? Number(runsArg.slice('--runs='.length)) : smoke ? 1 : 5,
  ...(podsArg && { pods: new Set(podsArg.slice('--pods='.length).split(',').map(Number)) }),
};
if (!Number.isInteger(ctx.runs) || ctx.runs < 1) throw new Error(`--runs must be a positive integer`);

const benchmarks = {
  throughput: (c: BenchContext) => runWatch(c, { throughput: true, memory: selectedSet.has('memory') }),
  memory: (c: BenchContext) =>
    selectedSet.has('throughput') ? Promise.resolve(undefined) : runWatch(c, { throughput: false, memory: true }),
  poison: runPoison,
  relist: runRelist,
  latency: runLatency,
  retry: runRetry,
  queue: runQueue,
  concurrency: runConcurrency,
  'initial-sync': runInitialSync,
  indexes: runIndexes,
  'owned-metadata': runOwnedMetadata,
  'lease-cadence': runLeaseCadence,
  priority: runPriority,
  reaction: runReaction,
  scale: runScale,
  sharding: runSharding,
  'controller-memory': runControllerMemory,
} as const;
type Name = keyof typeof benchmarks;

/**
 * Run only when named in --only: `controller-memory` needs a memory cgroup (root or a delegated
 * subtree) and about 15 minutes, and `bench:smoke` without --only is CI's bench-n26 cell.
 */
const optIn: ReadonlySet<string> = new Set(['controller-memory']);
const selected = (Object.keys(benchmarks) as Name[]).filter((name) => (only === undefined ? !optIn.has(name) : only.has(name)));
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
console.log(
  `node ${machine.node}, ${machine.cpus} cpus (${machine.cpuModel}), ${machine.memoryGB} GB, load average ${machine.loadAverageAtStart.join(' ')}`,
);

const results: Record<string, unknown> = {};
const failures: string[] = [];
for (const name of selected) {
  const started = performance.now();
  try {
    // A hung benchmark must fail the run, not stall CI.
    const limitMs = smoke ? 180_000 : 3_600_000;
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      benchmarks[name](ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} did not finish within ${limitMs / 1000} s`)), limitMs);
      }),
    ]).finally(() => clearTimeout(timer));
    if (result === undefined) continue; // memory ran inside throughput
    checkNumbers(name, result);
    results[name] = result;
    console.log(`(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    failures.push(`${name} threw`);
    console.error(`\n${name} FAILED:`, error);
  }
}

// The headline numbers (medians at the default size: the first one), then every detail.
const first = <T>(list: readonly T[] | undefined): T | undefined => list?.[0];
const watch = (results['throughput'] as WatchResult | undefined) ?? (results['memory'] as WatchResult | undefined);
const t = watch?.throughput.find((x) => x.via === 'replay');
const tApi = watch?.throughput.find((x) => x.via === 'apiserver');
const m = first(watch?.memory);
const latency = results['latency'] as LatencyResult | undefined;
const retry = results['retry'] as RetryResult | undefined;
const summary = {
  node: machine.node,
  cpus: machine.cpus,
  date: new Date().toISOString(),
  mode: smoke ? 'smoke' : 'full',
  runs: ctx.runs,
  machine: { ...machine, loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100) },
  ...(t && {
    throughput: {
      pods: t.pods,
      frames: t.frames,
      oursMs: t.oursMs.median,
      clientNodeMs: t.clientNodeMs.median,
      floorMs: t.floorMs.median,
      rawHttpMs: t.rawHttpMs.median,
      oursOverFloor: t.oursOverFloor,
      oursOverClientNode: t.oursOverClientNode,
      clientNodeOverFloor: t.clientNodeOverFloor,
      servedBy: 'replay of the embedded apiserver bytes (client-bound); see viaApiserver for the apiserver itself',
      ...(tApi && {
        viaApiserver: {
          oursMs: tApi.oursMs.median,
          clientNodeMs: tApi.clientNodeMs.median,
          floorMs: tApi.floorMs.median,
          rawHttpMs: tApi.rawHttpMs.median,
          oursOverFloor: tApi.oursOverFloor,
          oursOverClientNode: tApi.oursOverClientNode,
        },
      }),
      sizes: watch!.throughput,
    },
  }),
  ...(m && {
    heapPerPodBytes: {
      pods: m.pods,
      ours: m.oursAfterList.median,
      clientNode: m.clientNodeAfterList.median,
      oursAfterWatch: m.oursAfterWatch.median,
      clientNodeAfterWatch: m.clientNodeAfterWatch.median,
      sizes: watch!.memory,
    },
  }),
  ...(latency && {
    latencyMs: { p50: latency.p50Ms.median, p99: latency.p99Ms.median, max: latency.maxMs.median, detail: latency },
  }),
  ...(retry && {
    retryLatenessMs: { p50: retry.latenessP50Ms.median, p99: retry.latenessP99Ms.median, max: retry.latenessMaxMs.median },
    idleWakeupsPerSec: Math.max(retry.idleWakeupsPerSec.scheduler, retry.idleWakeupsPerSec.loop),
    retry,
  }),
  ...(results['poison'] !== undefined && { poison: results['poison'] }),
  ...(results['relist'] !== undefined && { relist: results['relist'] }),
  ...(results['queue'] !== undefined && { queue: results['queue'] }),
  ...(results['initial-sync'] !== undefined && { initialSync: results['initial-sync'] }),
  ...(results['indexes'] !== undefined && { indexes: results['indexes'] }),
  ...(results['owned-metadata'] !== undefined && { ownedMetadata: results['owned-metadata'] }),
  ...(results['priority'] !== undefined && { priority: results['priority'] }),
  ...(results['reaction'] !== undefined && { reaction: results['reaction'] }),
  ...(results['scale'] !== undefined && { scale: results['scale'] }),
  // Issue 27's shape: one row per replica count, server-side filtering; the client-side fallback beside it.
  ...(results['sharding'] !== undefined && {
    sharding: (results['sharding'] as ShardingResult).server,
    shardingClientSide: (results['sharding'] as ShardingResult).clientSide,
    shardingDetail: results['sharding'],
  }),
  ...(results['controller-memory'] !== undefined && {
    controllerMemory: results['controller-memory'] as ControllerMemoryResult,
  }),
  ...(results['concurrency'] !== undefined && {
    concurrency: (results['concurrency'] as ConcurrencyResult).rows,
    concurrencyDetail: results['concurrency'],
  }),
};

// The keys the issue names must be present and numeric whenever their benchmark ran.
/** Whether the sharding benchmark ran this filtering mode (both unless RL_BENCH_SHARDING_MODES picks one). */
const shardingRan = (mode: 'server' | 'clientSide'): boolean =>
  selectedSet.has('sharding') && ((results['sharding'] as ShardingResult | undefined)?.[mode].length ?? 0) > 0;
const required: Array<[string, boolean]> = [
  ['node', true],
  ['cpus', true],
  ['date', true],
  ['throughput.oursMs', selectedSet.has('throughput')],
  ['throughput.clientNodeMs', selectedSet.has('throughput')],
  ['throughput.floorMs', selectedSet.has('throughput')],
  ['heapPerPodBytes.ours', selectedSet.has('memory')],
  ['heapPerPodBytes.clientNode', selectedSet.has('memory')],
  ['latencyMs.p99', selectedSet.has('latency')],
  ['retryLatenessMs.p99', selectedSet.has('retry')],
  ['idleWakeupsPerSec', selectedSet.has('retry')],
  ['concurrency.2.reconcilesPerSec', selectedSet.has('concurrency')],
  ['concurrency.2.p99Ms', selectedSet.has('concurrency')],
  ['ownedMetadata.fullBytesPerPod', selectedSet.has('owned-metadata')],
  ['reaction.defaults.steady.p99Ms', selectedSet.has('reaction')],
  ['reaction.defaults.handover.p99Ms', selectedSet.has('reaction')],
  ['reaction.defaults.kill.p99Ms', selectedSet.has('reaction')],
  ['ownedMetadata.metadataBytesPerPod', selectedSet.has('owned-metadata')],
  ['priority.p99UserWaitMs', selectedSet.has('priority')],
  // A mode left out by RL_BENCH_SHARDING_MODES has no rows to check.
  ['sharding.0.reconcilesPerSec', shardingRan('server')],
  ['sharding.0.heapPerReplicaMB', shardingRan('server')],
  ['sharding.0.bytesReceivedPerReplica', shardingRan('server')],
  ['shardingClientSide.0.reconcilesPerSec', shardingRan('clientSide')],
  ['priority.fifoP99UserWaitMs', selectedSet.has('priority')],
  ['priority.maxInitialWaitMs', selectedSet.has('priority')],
  // The idle controller under no limit always syncs: its first run's peak is present.
  ['controllerMemory.runs.0.cgroupPeakBytes', selectedSet.has('controller-memory')],
  ...(
    ['pods', 'syncMs', 'peakHeapToStoreRatio', 'heapPerPodBytes', 'clientNode.syncMs', 'clientNode.heapPerPodBytes'] as const
  ).map((key): [string, boolean] => [`scale.${key}`, selectedSet.has('scale')]),
  ...(['list', 'watchList'] as const).flatMap((path) =>
    (['peakBytes', 'livePeakBytes', 'storeBytes', 'peakToStoreRatio', 'livePeakToStoreRatio', 'peakRssBytes'] as const).map(
      (key): [string, boolean] => [`initialSync.${path}.${key}`, selectedSet.has('initial-sync')],
    ),
  ),
];
for (const [path, needed] of required) {
  if (!needed) continue;
  const value = path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], summary);
  if (path === 'node' || path === 'date') {
    if (typeof value !== 'string' || value === '') failures.push(`result key ${path} missing`);
  } else {
    try {
      checkNumber(path, value);
    } catch (error) {
      failures.push((error as Error).message);
    }
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'results', smoke ? 'smoke.json' : 'latest.json');
await mkdir(dirname(out), { recursive: true });
// An --only run updates its own keys in latest.json and keeps the rest, so `pnpm bench -- --only=concurrency`
// refreshes `concurrency` without discarding the other benchmarks' last results.
let written: Record<string, unknown> = summary;
if (only && !smoke) {
  const previous = await readFile(out, 'utf8').then(
    (text) => JSON.parse(text) as Record<string, unknown>,
    () => ({}),
  );
  written = { ...previous, ...summary };
}
await writeFile(out, `${JSON.stringify(written, null, 2)}\n`);
console.log(`\nwrote ${out}`);

if (failures.length > 0) {
  console.error(`\nFAILED: ${failures.join('; ')}`);
  process.exitCode = 1;
}

// Exit explicitly: a benchmark that failed may have left a socket or an apiserver child behind.
process.exit(process.exitCode ?? 0);
