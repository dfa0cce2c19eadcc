/**
 * `--replicas N`: N in-process replicas of the pool tracker behind leader election on one
 * `coordination.k8s.io/v1` Lease, each with its own identity, its own pod reflector (warm: every
 * replica lists and watches) and its own probe server. Only the leader reconciles. After
 * `killAfterMs` the leader is killed the hard way (its requests stop reaching the apiserver, so it
 * cannot release the Lease); a standby takes over once the Lease expires and re-drives every pool.
 *
 * The embedded apiserver serves Leases with the apiserver's resourceVersion/409 semantics; against a
 * real cluster they are native. Each replica has its own Prometheus registry, served as `/metrics`
 * beside `/healthz` and `/readyz` (controller-runtime's names, from `@reconcile-loop/metrics`).
 */
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { LeaderElector, LeaseLock, type LeaderElectionRecord, type ResourceLock } from '@reconcile-loop/leader-election';
import { healthHandler, ReconcileLoop, silentLogger, type Logger } from '@reconcile-loop/loop';
import { controllerMetrics, metricsHandler } from '@reconcile-loop/metrics';
import { Registry } from 'prom-client';
import { openClusterSource } from './cluster.js';
import type { PodView } from './pod-view.js';
import { describePool, poolView } from './tracker.js';

/** Options for {@link runReplicas}. */
export interface ReplicasOptions {
  replicas: number;
  /** The embedded apiserver's kubeconfig YAML, or undefined for `kubeconfig`/`KUBECONFIG`. */
  kubeconfigYaml?: string;
  kubeconfig?: string;
  namespace: string;
  selector: string;
  poolLabel?: string;
  /** Lease name. Default `pool-tracker`. */
  leaseName?: string;
  /** Lease timings; default client-go's (15 s / 10 s / 2 s). The embedded demo shortens them so a takeover is quick. */
  timings?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  /** Replica i serves `/healthz` and `/readyz` and `/metrics` on `metricsPort + i`. */
  metricsPort?: number;
  metricsHost?: string;
  /** Kill the leader this long after every replica synced; undefined: never. */
  killAfterMs?: number;
  /** Ends the run (gracefully: the leader releases its Lease). */
  signal: AbortSignal;
  print: (line: string) => void;
  logger?: Logger;
  /** Called once every replica synced (the embedded demo then changes a pool: only the leader reacts). */
  onSynced?: () => void;
  /** Called once every probe server listens, with their base URLs by replica index. */
  onListening?: (urls: string[]) => void;
}

/** What happened, for the caller's summary (and the tests). */
export interface ReplicasReport {
  /** Identities that started leading, in order. */
  readonly leaders: string[];
  /** Reconciles per replica name. */
  readonly reconciles: Record<string, string[]>;
  /** The killed replica, if any. */
  readonly killed: string | undefined;
}

/** A lock whose requests fail once the replica is "killed": a dead process cannot release. */
function killable(lock: ResourceLock): ResourceLock & { kill(): void } {
  let dead = false;
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      dead ? Promise.reject(new Error('replica killed: its requests never reach the apiserver')) : fn(...args);
  return {
    identity: lock.identity,
    describe: () => lock.describe(),
    get: guard((o?: Parameters<ResourceLock['get']>[0]) => lock.get(o)),
    create: guard((r: LeaderElectionRecord, o?: Parameters<ResourceLock['create']>[1]) => lock.create(r, o)),
    update: guard((r: LeaderElectionRecord, o?: Parameters<ResourceLock['update']>[1]) => lock.update(r, o)),
    kill: () => (dead = true),
  };
}

/** The probe and metrics server of one replica: `/metrics` from its registry, everything else to the health handler. */
async function probeServer(
  loop: ReconcileLoop<PodView, string>,
  registry: Registry,
  port: number,
  host: string,
): Promise<{ server: Server; url: string }> {
  const server = createServer(metricsHandler(registry, { next: healthHandler(loop) }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return { server, url: `http://${host}:${(server.address() as AddressInfo).port}` };
}

/** Runs the replicas until `signal` aborts; resolves with what happened. */
export async function runReplicas(options: ReplicasOptions): Promise<ReplicasReport> {
  const { print, signal } = options;
  const logger = options.logger ?? silentLogger;
  const poolLabel = options.poolLabel ?? 'pool';
  const [{ KubeConfig }, { KubeClient }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('@reconcile-loop/kube-client'),
  ]);
  const kubeConfig = new KubeConfig();
  if (options.kubeconfigYaml !== undefined) kubeConfig.loadFromString(options.kubeconfigYaml);
  else if (options.kubeconfig !== undefined) kubeConfig.loadFromFile(options.kubeconfig);
  else kubeConfig.loadFromDefault();
  const report: ReplicasReport & { killed: string | undefined } = { leaders: [], reconciles: {}, killed: undefined };
  let killedAt: number | undefined;
  const replicas = Array.from({ length: options.replicas }, (_, i) => {
    const name = `replica-${i}`;
    const identity = `${hostname()}_${name}_${randomUUID().slice(0, 8)}`;
    const lock = killable(
      new LeaseLock({
        client: new KubeClient({ kubeConfig }),
        namespace: options.namespace,
        name: options.leaseName ?? 'pool-tracker',
        identity,
      }),
    );
    const elector = new LeaderElector({
      lock,
      ...options.timings,
      onStartedLeading: () => {
        report.leaders.push(identity);
        const after = killedAt === undefined ? '' : `, ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill`;
        print(`[${name}] started leading (${identity}${after}): re-driving every pool`);
      },
      onStoppedLeading: () => print(`[${name}] stopped leading`),
    });
    report.reconciles[name] = [];
    return {
      name,
      identity,
      lock,
      elector,
      registry: new Registry(),
      stop: new AbortController(),
      run: undefined as Promise<void> | undefined,
      loop: undefined as ReconcileLoop<PodView, string> | undefined,
      server: undefined as Server | undefined,
    };
  });

  const servers: string[] = [];
  try {
    for (const [i, replica] of replicas.entries()) {
      const source = await openClusterSource({
        ...(options.kubeconfigYaml !== undefined
          ? { kubeconfigYaml: options.kubeconfigYaml }
          : options.kubeconfig !== undefined
            ? { kubeconfig: options.kubeconfig }
            : {}),
        namespace: options.namespace,
        selector: options.selector,
        logger,
      });
      replica.loop = new ReconcileLoop<PodView, string>({
        source,
        keyMap: (pod) => {
          const pool = pod.metadata.labels[poolLabel];
          return pool ? `${pod.metadata.namespace ?? ''}/${pool}` : undefined;
        },
        leadership: { gate: replica.elector },
        controller: { name: 'pool-tracker' },

        observer: controllerMetrics({ registry: replica.registry, controller: 'pool-tracker' }),
        logger,
        reconcile: (pool, context) => {
          report.reconciles[replica.name]!.push(pool);
          print(`[${replica.name}] ${describePool(poolView(pool, context.members.values()))}`);
        },
      });
      if (options.metricsPort !== undefined) {
        const { server, url } = await probeServer(
          replica.loop,
          replica.registry,
          options.metricsPort === 0 ? 0 : options.metricsPort + i,
          options.metricsHost ?? '127.0.0.1',
        );
        replica.server = server;
        servers.push(url);
      }
      replica.run = replica.elector.run(replica.stop.signal);
      // The first replica leads before the others compete: it is the one on the first port.
      if (i === 0) {
        try {
          await replica.elector.waitForLeadership(signal, (options.timings?.leaseDurationMs ?? 15_000) + 30_000);
        } catch (error) {
          if (signal.aborted) return report;
          throw error;
        }
      }
    }
    if (servers.length > 0) {
      print(
        `probes: ${servers.map((u, i) => `${replicas[i]!.name} ${u}/readyz`).join(', ')} (/metrics and /healthz beside them)`,
      );
      options.onListening?.(servers);
    }
    // Every replica syncs, leader or not (warm standby).
    await Promise.all(replicas.map((r) => r.loop!.start()));
    print(
      `${replicas.length} replicas synced; ${
        replicas
          .filter((r) => r.loop!.health().leader)
          .map((r) => r.name)
          .join(', ') || 'none'
      } leads, the others are warm standbys`,
    );
    options.onSynced?.();

    const ended = new Promise<void>((resolve) =>
      signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    if (options.killAfterMs !== undefined) {
      const killAt = new Promise<boolean>((resolve) => {
        const handle = setTimeout(() => resolve(true), options.killAfterMs);
        signal.addEventListener('abort', () => (clearTimeout(handle), resolve(false)), { once: true });
      });
      if (await killAt) {
        const leader = replicas.find((r) => r.elector.isLeader());
        if (leader !== undefined) {
          report.killed = leader.name;
          killedAt = performance.now();
          print(`killing ${leader.name} (the leader) without a release: a standby takes over once the Lease expires`);
          leader.lock.kill();
          leader.stop.abort();
          await leader.loop!.stop({ graceMs: 1_000 });
          if (leader.server !== undefined) await new Promise((resolve) => leader.server!.close(resolve));
          leader.server = undefined;
        }
      }
    }
    await ended;
  } finally {
    // Graceful end: each loop stops; each elector ends its term and the leader releases the Lease.
    await Promise.all(replicas.map((r) => r.loop?.stop()));
    for (const r of replicas) r.stop.abort();
    await Promise.all(replicas.map((r) => r.run));
    await Promise.all(replicas.map((r) => r.server && new Promise((resolve) => r.server!.close(resolve))));
  }
  return report;
}
