/**
 * Benchmark `controller-memory`: what `resources.limits.memory` the built CellSet controller needs,
 * read the way the kernel enforces it. The controller is `examples/cellset/dist/main.js --controller`
 * (plain `node`, as `start:prod` and a container run it) in a fresh memory cgroup per run
 * (`lib/container.ts`): 96, 128, 192 and 256 MiB, and a 64 GiB cgroup as the unconstrained reference
 * (Node sizes its heap from the machine there, the cgroup only counts). Each cell runs twice: with
 * the machine's cached node binary (its 143 MiB charged elsewhere) and with an uncached copy whose
 * pages the cgroup pays for, as a pod on a node that never ran the image does (`coldNodeCopy`).
 * The embedded apiserver runs in this process, outside every cgroup. BENCHMARKS.md (32).
 *
 * Sizes: idle (the CRD, no CellSets), then N owned pods (CellSets of {@link REPLICAS} replicas).
 * The pods are made once per size by an unconstrained seeding run of the same controller (its write
 * limit raised so 10,000 creates take seconds, not the default 20 QPS's 8 minutes), then each
 * measured run is a restart onto them: the initial LIST of every CellSet and pod, a status write per
 * set once it leads, then idle. A run reports synced or how it died, the cgroup's peak usage (and its
 * anonymous part), the peak RSS (`VmHWM`), and the heap after it settled (held, and live after forced
 * GCs). The import floor: bare `node` importing each package the controller uses, one child each.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CgroupMemory } from '../lib/container.js';
import {
  coldNodeCopy,
  ContainedNode,
  type ImportReading,
  measureEntryLoad,
  measureImport,
  metricSum,
  type Outcome,
  UNCONSTRAINED_MB,
  waitFor,
} from '../lib/controller-process.js';
import type { BenchContext } from '../lib/context.js';
import type { ProbeReading } from '../lib/memory-probe.js';
import { printTable } from '../lib/stats.js';

/** Pods per CellSet: 1,000 pods are 20 sets, 10,000 are 200 (200 status writes at 20 QPS: 10 s). */
const REPLICAS = 50;
const NAMESPACE = 'cells';
const CELLSETS = { group: 'cells.reconcile-loop.dev', version: 'v1', plural: 'cellsets', kind: 'CellSet' } as const;

/** One measured run: a size under a limit. */
export interface ControllerRun {
  pods: number;
  cellSets: number;
  /** The cgroup limit, MiB; {@link UNCONSTRAINED_MB} for the reference. */
  limitMb: number;
  unconstrained: boolean;
  /** Run from an uncached copy of the node binary, whose pages the cgroup is charged for (`coldNodeCopy`). */
  coldBinary: boolean;
  outcome: Outcome;
  /** Times it lost its Lease to a missed renew deadline (a process thrashing under its limit). */
  leaseLosses: number;
  /** Start → the controller's "synced CellSets and pods" line. */
  syncMs?: number;
  /** The cgroup's high-water usage over the process's life (what the limit is enforced on). */
  cgroupPeakBytes?: number;
  /** After settling: the cgroup's usage and its anonymous and page-cache parts. */
  cgroupUsageBytes?: number;
  cgroupAnonBytes?: number;
  cgroupFileBytes?: number;
  /** The probe after settling (absent when the run died first). */
  peakRssBytes?: number;
  rssBytes?: number;
  heldHeapBytes?: number;
  liveHeapBytes?: number;
  heapLimitBytes?: number;
  /** The last lines the controller printed, for a run that did not sync. */
  tail?: string[];
}

/** One row of the import floor, under one limit. */
export interface ImportRow {
  what: string;
  limitMb: number;
  peakRssBytes: number;
  rssBytes: number;
  liveHeapBytes: number;
  /** The cgroup's high-water usage, read after the child exited. */
  cgroupPeakBytes: number;
}

export interface ControllerMemoryResult {
  method: string;
  loadAverageAtStart: number[];
  runs: ControllerRun[];
  imports: ImportRow[];
}

/**
 * The packages the built entry loads (`examples/cellset/demo/*.ts` and `src/*.ts` import them; the
 * tsup bundle inlines ours, so one child each shows what each costs on its own over bare node).
 */
const IMPORTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['bare node', []],
  ['zod', ['zod']],
  ['prom-client', ['prom-client']],
  ['@kubernetes/client-node', ['@kubernetes/client-node']],
  ['primitives', ['@reconcile-loop/primitives']],
  ['object-store', ['@reconcile-loop/object-store']],
  ['k8s-types', ['@reconcile-loop/k8s-types']],
  ['kube-client', ['@reconcile-loop/kube-client']],
  ['reflector', ['@reconcile-loop/reflector']],
  ['loop', ['@reconcile-loop/loop']],
  ['metrics', ['@reconcile-loop/metrics']],
  ['leader-election', ['@reconcile-loop/leader-election']],
  ['sharding', ['@reconcile-loop/sharding']],
  ['testing (embedded apiserver)', ['@reconcile-loop/testing']],
];
const ALL_BUT_TESTING = IMPORTS.slice(1, -1).flatMap(([, s]) => s);
const ALL = IMPORTS.flatMap(([, s]) => s);

function kubeconfigFile(server: ApiServer): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rl-ctrl-mem-kc-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, server.kubeconfig(), { mode: 0o600 });
  return { path, dir };
}

/** The controller's URL for /metrics, once it printed it. */
function metricsUrl(child: ContainedNode): string | undefined {
  const line = child.lines.find((l) => l.includes('/metrics, /healthz and /readyz at '));
  return line?.slice(line.lastIndexOf(' ') + 1);
}

async function scrape(url: string, metric: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${url}/metrics`);
    return metricSum(await response.text(), metric);
  } catch {
    return undefined;
  }
}

function controllerArgs(kubeconfig: string, extra: readonly string[] = []): string[] {
  return ['dist/main.js', '--controller', '--kubeconfig', kubeconfig, '--namespace', NAMESPACE, '--metrics-port', '0', ...extra];
}

/**
 * Makes the apiserver hold `cellSets` CellSets and their pods: creates the missing sets and runs the
 * controller (unconstrained, writes unthrottled) until every set reports its replicas, then stops it.
 */
async function seed(server: ApiServer, kubeconfig: string, cellSets: number, have: number): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  const client = new KubeClient({ kubeConfig: kc, rateLimit: false });
  const seeder = new ContainedNode(
    UNCONSTRAINED_MB,
    controllerArgs(kubeconfig, ['--write-qps', '2000', '--write-burst', '4000', '--workers', '16']),
    { POD_NAME: 'seeder' },
  );
  try {
    if (
      !(await waitFor(
        () => seeder.has(/ synced CellSets/) && seeder.has(/leading as/),
        () => seeder.alive,
        60_000,
      ))
    )
      throw new Error(`seeding controller did not sync and lead\n${seeder.lines.slice(-15).join('\n')}`);
    const sets = client.resource(CELLSETS).inNamespace(NAMESPACE);
    for (let i = have; i < cellSets; i++) {
      await sets.create({
        apiVersion: `${CELLSETS.group}/${CELLSETS.version}`,
        kind: CELLSETS.kind,
        metadata: { name: `set-${String(i).padStart(4, '0')}` },
        spec: {
          replicas: REPLICAS,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'engine', image: 'cells/engine:1' }] } },
        },
      });
    }
    const settled = async (): Promise<boolean> => {
      const items = (await sets.list()).items as Array<{ status?: { replicas?: number } }>;
      return items.length === cellSets && items.every((s) => s.status?.replicas === REPLICAS);
    };
    if (!(await waitFor(settled, () => seeder.alive, 600_000)))
      throw new Error(`seeding: ${cellSets * REPLICAS} pods not made within 600 s\n${seeder.lines.slice(-15).join('\n')}`);
  } finally {
    await seeder.stop();
  }
}

/**
 * One measured restart of the controller under `limitMb` onto what the apiserver holds: synced
 * (and, once leading, every set reconciled and the reconcile count still for 3 s) or how it died.
 */
async function measureRun(
  kubeconfig: string,
  limitMb: number,
  pods: number,
  cellSets: number,
  coldBinary: boolean,
): Promise<ControllerRun> {
  const cold = coldBinary ? coldNodeCopy() : undefined;
  if (typeof cold === 'string') throw new Error(`controller-memory: ${cold}`);
  const child = new ContainedNode(limitMb, controllerArgs(kubeconfig), {
    POD_NAME: 'controller-memory',
    ...(cold !== undefined && { RL_BENCH_NODE: cold.path }),
  });
  const started = performance.now();
  const base = { pods, cellSets, limitMb, unconstrained: limitMb === UNCONSTRAINED_MB, coldBinary };
  let probe: ProbeReading | undefined;
  let cgroup: CgroupMemory = {};
  let syncMs: number | undefined;
  let stalled = false;
  try {
    if (
      await waitFor(
        () => child.has(/ synced CellSets/),
        () => child.alive,
        180_000,
      )
    ) {
      syncMs = performance.now() - started;
      // Leading (a killed run's Lease lapses after 15 s) and every set reconciled once, then quiet:
      // the reconcile count unchanged over 3 s of scrapes. A warm run settles 3-14 s after its
      // sync (200 status writes at 20 QPS at 10,000 pods); one still unsettled after 60 s is stalled.
      let last = -1;
      let still = 0;
      const settled = await waitFor(
        async () => {
          const url = metricsUrl(child);
          const total = url === undefined ? undefined : await scrape(url, 'controller_runtime_reconcile_total');
          if (total === undefined || !child.has(/leading as/) || total < cellSets) return false;
          still = total === last ? still + 1 : 0;
          last = total;
          return still >= 30;
        },
        () => child.alive,
        60_000,
      );
      // A stalled process is read too: what it holds while it cannot get on. One alive but not
      // answering the probe within 20 s is stalled as well, settled or not (10,000 pods under 96 MiB).
      if (child.alive) probe = await child.probe();
      stalled = (!settled || probe === undefined) && child.alive;
    } else stalled = child.alive;
    cgroup = child.cgroup();
  } finally {
    await child.stop();
    if (typeof cold === 'object') cold.remove();
  }
  const exit = await child.exited;
  const outcome: Outcome = child.oomKilled()
    ? 'oom-killed'
    : stalled
      ? 'stalled'
      : probe !== undefined
        ? 'synced'
        : child.outcome(exit);
  return {
    ...base,
    outcome,
    ...(syncMs !== undefined && { syncMs }),
    ...(cgroup.peakBytes !== undefined && { cgroupPeakBytes: cgroup.peakBytes }),
    ...(cgroup.usageBytes !== undefined && { cgroupUsageBytes: cgroup.usageBytes }),
    ...(cgroup.anonBytes !== undefined && { cgroupAnonBytes: cgroup.anonBytes }),
    ...(cgroup.fileBytes !== undefined && { cgroupFileBytes: cgroup.fileBytes }),
    ...(probe !== undefined && {
      peakRssBytes: probe.peakRssBytes,
      rssBytes: probe.rssBytes,
      heldHeapBytes: probe.heldHeapBytes,
      liveHeapBytes: probe.liveHeapBytes,
      heapLimitBytes: probe.heapLimitBytes,
    }),
    // Leadership lost while running: a process too slow to renew its Lease within 10 s.
    leaseLosses: child.lines.filter((l) => / warn stopped leading: /.test(l)).length,
    ...(outcome !== 'synced' && { tail: child.lines.slice(-8) }),
  };
}

const mb = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(1));
const limitName = (limitMb: number): string => (limitMb === UNCONSTRAINED_MB ? 'none' : `${limitMb} MiB`);

export async function runControllerMemory(ctx: BenchContext): Promise<ControllerMemoryResult> {
  console.log('\ncontroller-memory: the built CellSet controller (dist/main.js) in a memory cgroup per run');
  const loadAverageAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
  // 96 MiB is below the scaffold's 128 MiB: where the edge is, not a recommendation.
  const limits = ctx.smoke ? [128, UNCONSTRAINED_MB] : [96, 128, 192, 256, UNCONSTRAINED_MB];
  // --pods=N,… picks the sizes (idle always runs first: its seeding run installs the CRD).
  const asked = ctx.pods === undefined ? [1_000, 10_000] : [...ctx.pods].filter((n) => n > 0).sort((a, b) => a - b);
  const sizes = ctx.smoke ? [0, 100] : [0, ...asked];

  const imports: ImportRow[] = [];
  const importLimits = ctx.smoke ? [UNCONSTRAINED_MB] : [UNCONSTRAINED_MB, 128];
  const rows: Array<readonly [string, () => Promise<ImportReading>]> = [
    ...IMPORTS.map(([what, specifiers]) => [what, (limit: number) => measureImport(limit, specifiers)] as const),
    ['all the above but testing', (limit: number) => measureImport(limit, ALL_BUT_TESTING)] as const,
    ['all the above', (limit: number) => measureImport(limit, ALL)] as const,
    ['dist/main.js --help (the built entry, loaded)', (limit: number) => measureEntryLoad(limit)] as const,
  ].flatMap(([what, run]) => importLimits.map((limit) => [`${what}@${limit}`, () => run(limit)] as const));
  for (const [key, run] of rows) {
    const at = key.lastIndexOf('@');
    const r = await run();
    imports.push({
      what: key.slice(0, at),
      limitMb: Number(key.slice(at + 1)),
      peakRssBytes: r.probe.peakRssBytes,
      rssBytes: r.probe.rssBytes,
      liveHeapBytes: r.probe.liveHeapBytes,
      cgroupPeakBytes: r.cgroup.peakBytes ?? 0,
    });
  }
  const bare = (limit: number) => imports.find((r) => r.what === 'bare node' && r.limitMb === limit)!;
  printTable(
    'controller-memory: import floor, one bare-node child each, read at exit after forced GCs (MiB; over bare node in parentheses)',
    ['import', 'limit', 'peak RSS', 'cgroup peak', 'live heap'],
    imports.map((r) => {
      const b = bare(r.limitMb);
      const over = (v: number, base: number) => (r.what === 'bare node' ? mb(v) : `${mb(v)} (+${mb(v - base)})`);
      return [
        r.what,
        limitName(r.limitMb),
        over(r.peakRssBytes, b.peakRssBytes),
        over(r.cgroupPeakBytes, b.cgroupPeakBytes),
        over(r.liveHeapBytes, b.liveHeapBytes),
      ];
    }),
  );

  const runs: ControllerRun[] = [];
  const server = await startApiServer({ implicitNamespaces: true });
  const kc = kubeconfigFile(server);
  try {
    server.createNamespace(NAMESPACE);
    let cellSets = 0;
    for (const pods of sizes) {
      const want = Math.ceil(pods / REPLICAS);
      // The idle size is seeded too: the seeding run installs the CRD, so no measured run does.
      if (want > cellSets || runs.length === 0) {
        const seedStart = performance.now();
        await seed(server, kc.path, want, cellSets);
        console.log(
          `  seeded ${want} CellSets × ${REPLICAS} (${pods} pods) in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
        );
        cellSets = want;
      }
      for (const limitMb of limits) {
        for (const coldBinary of ctx.smoke ? [limitMb === UNCONSTRAINED_MB] : [false, true]) {
          const run = await measureRun(kc.path, limitMb, pods, cellSets, coldBinary);
          runs.push(run);
          console.log(
            `  ${pods} pods, limit ${limitName(limitMb)}${coldBinary ? ', uncached node' : ''}: ${run.outcome}, cgroup peak ${mb(run.cgroupPeakBytes)} MiB, peak RSS ${mb(run.peakRssBytes)} MiB`,
          );
          if (run.tail !== undefined) for (const line of run.tail) console.log(`    ${line}`);
        }
      }
    }
  } finally {
    await server.close();
    rmSync(kc.dir, { recursive: true, force: true });
  }
  printTable(
    'controller-memory: the built CellSet controller restarted onto N owned pods, per memory limit (MiB)',
    [
      'pods',
      'limit',
      'outcome',
      'lease lost',
      'sync s',
      'cgroup peak',
      'anon',
      'page cache',
      'peak RSS',
      'heap held',
      'heap live',
      'V8 heap limit',
    ],
    runs.map((r) => [
      r.pods.toLocaleString('en-US'),
      `${limitName(r.limitMb)}${r.coldBinary ? ', uncached node' : ''}`,
      r.outcome,
      String(r.leaseLosses),
      r.syncMs === undefined ? '-' : (r.syncMs / 1000).toFixed(1),
      mb(r.cgroupPeakBytes),
      mb(r.cgroupAnonBytes),
      mb(r.cgroupFileBytes),
      mb(r.peakRssBytes),
      mb(r.heldHeapBytes),
      mb(r.liveHeapBytes),
      mb(r.heapLimitBytes),
    ]),
  );
  return {
    method:
      'examples/cellset/dist/main.js --controller, plain node (+ --expose-gc and the memory probe), one fresh memory cgroup per run; ' +
      `${REPLICAS} pods per CellSet, seeded by an unconstrained run, measured on restart; embedded apiserver outside the cgroup; ` +
      `"none" is a ${UNCONSTRAINED_MB / 1024} GiB cgroup (Node sizes its heap from the machine)`,
    loadAverageAtStart,
    runs,
    imports,
  };
}
