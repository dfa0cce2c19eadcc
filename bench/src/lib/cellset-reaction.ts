/**
 * Event-to-action latency of the CellSet controller as an operator runs it: replicas are child
 * processes of the flagship's own entry (`examples/cellset/demo/main.ts --controller`), competing for
 * a Lease on whatever apiserver `kubeconfig` points at (the embedded one for `pnpm bench -- --only=reaction`,
 * kube-apiserver for `pnpm --filter @reconcile-loop/e2e reaction`). This process marks a pod Failed
 * (PATCH pods/status) and watches the pods; the latency of one failure is from just before that PATCH
 * was sent to the moment this process's watch delivered the replacement (same name, new uid). Both
 * ends are on this process's clock, so replicas' clocks do not matter.
 *
 * Every failure hits a pod that has not failed before, so the rebuild budget's first delay (0 s)
 * applies to each: what is measured is the controller's reaction, not its budget.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { KubeApiClient, Reflector } from '@reconcile-loop/reflector';
import { collectLines, EXAMPLE, terminate } from './cellset-child.js';
import { percentiles } from './stats.js';

const CELLSETS = { group: 'cells.reconcile-loop.dev', version: 'v1', plural: 'cellsets', kind: 'CellSet' } as const;
const SET_LABEL = 'cells.reconcile-loop.dev/cellset';

/** The controller's knobs under test and the Lease timings. */
export interface ControllerKnobs {
  readonly workers?: number | undefined;
  readonly writeQps?: number | undefined;
  readonly writeBurst?: number | undefined;
  readonly leaseDurationS: number;
  readonly renewDeadlineS: number;
  readonly retryPeriodS: number;
  /** `--rebuild-delays` (seconds, comma-separated, 0 first). Default the controller's 0,1,5,30. */
  readonly rebuildDelays?: string | undefined;
}

/** p50 / p99 / max of one phase, ms, and how many failures it measured. */
export interface PhaseLatency {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  count: number;
}

/** One replica: the controller's own node process (no tsx or pnpm in between: signals reach it). */
export class Replica {
  readonly lines: string[] = [];
  readonly exited: Promise<number | string>;
  readonly #child: ChildProcess;

  constructor(
    readonly name: string,
    kubeconfigPath: string,
    namespace: string,
    knobs: ControllerKnobs,
    env: NodeJS.ProcessEnv = {},
  ) {
    const args = [
      '--conditions=@reconcile-loop/source',
      '--import',
      'tsx',
      'demo/main.ts',
      '--controller',
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      namespace,
      '--lease-duration',
      String(knobs.leaseDurationS),
      '--renew-deadline',
      String(knobs.renewDeadlineS),
      '--retry-period',
      String(knobs.retryPeriodS),
      ...(knobs.workers === undefined ? [] : ['--workers', String(knobs.workers)]),
      ...(knobs.writeQps === undefined ? [] : ['--write-qps', String(knobs.writeQps)]),
      ...(knobs.writeBurst === undefined ? [] : ['--write-burst', String(knobs.writeBurst)]),
      ...(knobs.rebuildDelays === undefined ? [] : ['--rebuild-delays', knobs.rebuildDelays]),
    ];
    this.#child = spawn(process.execPath, args, {
      cwd: EXAMPLE,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env, POD_NAME: name },
    });
    collectLines(this.#child, this.lines, () => performance.now().toFixed(1));
    this.exited = new Promise((resolve) => this.#child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get alive(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  has(pattern: RegExp): boolean {
    return this.lines.some((l) => pattern.test(l));
  }

  leading(): boolean {
    const started = this.lines.findLastIndex((l) => / out cellset-controller: leading as /.test(l));
    const stopped = this.lines.findLastIndex((l) => / out cellset-controller: stopped leading/.test(l));
    return started >= 0 && started > stopped && this.alive;
  }

  signal(signal: NodeJS.Signals): void {
    this.#child.kill(signal);
  }
}

/** SIGTERM every replica; one still running after `graceMs` (default 20 s) is SIGKILLed, so the caller's cleanup always ends. */
export async function stopReplicas(replicas: readonly Replica[], graceMs = 20_000): Promise<void> {
  await Promise.all(replicas.map((r) => terminate((signal) => r.signal(signal), r.exited, graceMs)));
}

/** Polls `ok` every 20 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(what: string, ok: () => boolean, timeoutMs: number, detail?: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ok()) {
    if (performance.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${detail === undefined ? '' : `\n${detail()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What the driver sees of the pods (its own watch) and how it injects failures. */
export class PodWatch {
  /** name → uid as last seen. */
  readonly uids = new Map<string, string>();
  /** name → the failed uid and when the failure was sent (performance.now()). */
  readonly #waiting = new Map<string, { uid: string; sentAt: number }>();
  readonly latencies: number[] = [];
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  readonly #pods;
  /** Pods that failed once: never failed again (the budget's first rebuild is immediate). */
  readonly #used = new Set<string>();

  constructor(
    kubeConfig: KubeConfig,
    readonly client: KubeClient,
    readonly namespace: string,
  ) {
    const reflector = new Reflector<Pod>({
      client: new KubeApiClient(kubeConfig, podResource),
      schema: podSchema,
      namespace,
      labelSelector: SET_LABEL,
      name: 'reaction-driver',
    });
    this.#pods = client.resource({ ...podResource, kind: 'Pod' }, podSchema).inNamespace(namespace);
    this.#done = (async () => {
      try {
        for await (const event of reflector.open(this.#abort.signal)) {
          const now = performance.now();
          const seen = event.type === 'upsert' ? [event.object] : event.type === 'replace' ? [...event.objects.values()] : [];
          for (const pod of seen) this.#see(pod, now);
        }
      } catch (error) {
        if (!this.#abort.signal.aborted) throw error;
      }
    })();
  }

  #see(pod: Pod, now: number): void {
    const { name, uid } = pod.metadata;
    if (pod.metadata.deletionTimestamp !== undefined || uid === undefined) return;
    this.uids.set(name, uid);
    const waiting = this.#waiting.get(name);
    if (waiting !== undefined && waiting.uid !== uid) {
      this.#waiting.delete(name);
      this.latencies.push(now - waiting.sentAt);
    }
  }

  /** Replacements still awaited. */
  get pending(): number {
    return this.#waiting.size;
  }

  /** Marks a pod that never failed before as Failed; returns its name (undefined: none left). */
  async fail(random: () => number): Promise<string | undefined> {
    const candidates = [...this.uids.keys()].filter((n) => !this.#used.has(n) && !this.#waiting.has(n));
    if (candidates.length === 0) return undefined;
    const name = candidates[Math.floor(random() * candidates.length)]!;
    this.#used.add(name);
    this.#waiting.set(name, { uid: this.uids.get(name)!, sentAt: performance.now() });
    await this.#pods.patch(name, { type: 'merge', body: { status: { phase: 'Failed' } } }, { subresource: 'status' });
    return name;
  }

  /** Takes the latencies measured so far and starts a new phase. */
  take(): PhaseLatency {
    const p = percentiles(this.latencies.splice(0));
    return { p50Ms: p.p50, p99Ms: p.p99, maxMs: p.max, count: p.count };
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#done.catch(() => undefined);
  }
}

/** A small deterministic RNG (mulberry32): the same run picks the same pods. */
export function rng(start: number): () => number {
  let a = start >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Options of {@link measureReaction}. */
export interface ReactionOptions {
  /** The apiserver's kubeconfig (YAML) with rights to install the CRD and run the controller. */
  readonly kubeconfig: string;
  readonly namespace: string;
  /** Creates the namespace (the driver calls it once, first). */
  readonly createNamespace: () => Promise<void>;
  readonly knobs: ControllerKnobs;
  readonly sets: number;
  readonly replicasPerSet: number;
  /** Failures per phase (steady, handover, kill). */
  readonly failuresPerPhase: number;
  /** Time between two failures in every phase, ms. */
  readonly intervalMs: number;
  /** Pods failed at once in the burst phase (picked at random, as every failure). */
  readonly burst: number;
  /** Which phases run. Default all. */
  readonly phases?: ReadonlySet<'steady' | 'handover' | 'kill' | 'burst'> | undefined;
  readonly log?: ((line: string) => void) | undefined;
  readonly random?: (() => number) | undefined;
}

/** What {@link measureReaction} measured. */
export interface ReactionResult {
  workers: number | 'default';
  writeQps: number | 'default';
  writeBurst: number | 'default';
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  sets: number;
  pods: number;
  intervalMs: number;
  steady?: PhaseLatency;
  /**
   * SIGTERM to the leader a third into the phase; `takeoverMs`: SIGTERM → the standby logs that it
   * leads; `exitMs`: SIGTERM → the old leader's exit seen (an upper bound), `exitCode` its code.
   */
  handover?: PhaseLatency & { takeoverMs: number; exitMs: number; exitCode: number | string };
  /** SIGKILL to the leader a third into the phase; `takeoverMs`: kill → the standby logs that it leads. */
  kill?: PhaseLatency & { takeoverMs: number };
  /** `burst` pods failed at once on a settled controller. */
  burst?: PhaseLatency;
}

/**
 * Two replicas; sets × replicasPerSet pods; then the phases in order. Every wait has a deadline;
 * the replicas are stopped (SIGTERM, then SIGKILL after 20 s) and the CellSets left for the caller's
 * namespace teardown.
 */
export async function measureReaction(options: ReactionOptions): Promise<ReactionResult> {
  const log = options.log ?? (() => {});
  const random = options.random ?? rng(30);
  const phases = options.phases ?? new Set(['steady', 'handover', 'kill', 'burst'] as const);
  const { knobs, namespace } = options;
  const dir = await mkdtemp(join(tmpdir(), 'cellset-reaction-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, options.kubeconfig, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(options.kubeconfig);
  const client = new KubeClient({ kubeConfig, rateLimit: false });
  const replicas: Replica[] = [];
  let serial = 0;
  const startReplica = (): Replica => {
    const r = new Replica(`replica-${serial++}`, kubeconfigPath, namespace, knobs);
    replicas.push(r);
    return r;
  };
  const detail = (): string => replicas.map((r) => `--- ${r.name}\n${r.lines.slice(-15).join('\n')}`).join('\n');
  const leader = (): Replica | undefined => replicas.find((r) => r.leading());
  let watch: PodWatch | undefined;
  const result: ReactionResult = {
    workers: knobs.workers ?? 'default',
    writeQps: knobs.writeQps ?? 'default',
    writeBurst: knobs.writeBurst ?? 'default',
    leaseDurationMs: knobs.leaseDurationS * 1000,
    renewDeadlineMs: knobs.renewDeadlineS * 1000,
    retryPeriodMs: knobs.retryPeriodS * 1000,
    sets: options.sets,
    pods: options.sets * options.replicasPerSet,
    intervalMs: options.intervalMs,
  };
  try {
    await options.createNamespace();
    const first = startReplica();
    await until('the first replica leading and synced', () => first.leading() && first.has(/ synced CellSets/), 60_000, detail);
    const second = startReplica();
    await until('the second replica synced', () => second.has(/ synced CellSets/), 60_000, detail);
    watch = new PodWatch(kubeConfig, client, namespace);
    const sets = client.resource(CELLSETS).inNamespace(namespace);
    for (let i = 0; i < options.sets; i++) {
      await sets.create({
        apiVersion: `${CELLSETS.group}/${CELLSETS.version}`,
        kind: CELLSETS.kind,
        metadata: { name: `r${i}` },
        spec: {
          replicas: options.replicasPerSet,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'engine', image: 'cells/engine:1' }] } },
        },
      });
    }
    const w = watch;
    await until(`${result.pods} pods created`, () => w.uids.size >= result.pods, 120_000, detail);
    // Start from a settled controller: the creates' status writes still queued in the write limiter
    // would otherwise be the first failures' latency (a 1.3 s tail in the steady phase).
    const settled = async (): Promise<boolean> => {
      const items = (await sets.list()).items as Array<{ status?: { replicas?: number } }>;
      return items.length === options.sets && items.every((s) => s.status?.replicas === options.replicasPerSet);
    };
    const settleBy = performance.now() + 60_000;
    while (!(await settled())) {
      if (performance.now() > settleBy) throw new Error(`the sets' status did not settle within 60 s\n${detail()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    log(`reaction: ${options.sets} sets × ${options.replicasPerSet} pods created; ${first.name} leads, ${second.name} stands by`);

    const failSeries = async (onThird?: () => void): Promise<void> => {
      for (let i = 0; i < options.failuresPerPhase; i++) {
        if (i === Math.floor(options.failuresPerPhase / 3)) onThird?.();
        const at = performance.now();
        if ((await w.fail(random)) === undefined) throw new Error('no pod left that never failed: more pods needed');
        const left = options.intervalMs - (performance.now() - at);
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      }
      await until('every failed pod replaced', () => w.pending === 0, 120_000, detail);
    };
    const takeover = (previous: Replica, since: number): Promise<number> =>
      until('a standby leading', () => leader() !== undefined && leader() !== previous, 120_000, detail).then(() => {
        const next = leader()!;
        const line = next.lines.findLast((l) => / out cellset-controller: leading as /.test(l))!;
        return Number(line.split(' ')[0]) - since;
      });

    if (phases.has('steady')) {
      await failSeries();
      result.steady = w.take();
      log(`reaction steady: p50 ${result.steady.p50Ms.toFixed(0)} ms, p99 ${result.steady.p99Ms.toFixed(0)} ms`);
    }
    if (phases.has('handover')) {
      const old = leader()!;
      let sentAt = 0;
      let took: Promise<number> | undefined;
      await failSeries(() => {
        sentAt = performance.now();
        old.signal('SIGTERM');
        took = takeover(old, sentAt);
      });
      const exitCode = await old.exited;
      const exitMs = performance.now() - sentAt; // at most: the exit may have come before the replacements
      result.handover = { ...w.take(), takeoverMs: await took!, exitMs, exitCode };
      log(
        `reaction handover: p50 ${result.handover.p50Ms.toFixed(0)} ms, p99 ${result.handover.p99Ms.toFixed(0)} ms, takeover ${result.handover.takeoverMs.toFixed(0)} ms, exit ${exitCode}`,
      );
      const again = startReplica();
      await until('the restarted replica synced', () => again.has(/ synced CellSets/), 60_000, detail);
    }
    if (phases.has('kill')) {
      const old = leader()!;
      let took: Promise<number> | undefined;
      await failSeries(() => {
        const at = performance.now();
        old.signal('SIGKILL');
        took = takeover(old, at);
      });
      result.kill = { ...w.take(), takeoverMs: await took! };
      log(
        `reaction kill -9: p50 ${result.kill.p50Ms.toFixed(0)} ms, p99 ${result.kill.p99Ms.toFixed(0)} ms, takeover ${result.kill.takeoverMs.toFixed(0)} ms`,
      );
      const again = startReplica();
      await until('the restarted replica synced', () => again.has(/ synced CellSets/), 60_000, detail);
    }
    if (phases.has('burst')) {
      // Let the previous phase's status writes drain first: the burst starts from a settled controller.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await Promise.all(Array.from({ length: options.burst }, () => w.fail(random)));
      await until('every pod of the burst replaced', () => w.pending === 0, 120_000, detail);
      result.burst = w.take();
      log(`reaction burst of ${options.burst}: p50 ${result.burst.p50Ms.toFixed(0)} ms, p99 ${result.burst.p99Ms.toFixed(0)} ms`);
    }
    return result;
  } finally {
    await watch?.close();
    await stopReplicas(replicas);
    await rm(dir, { recursive: true, force: true });
  }
}
