/**
 * The pool tracker demo. Without a cluster it starts the embedded apiserver in-process, points the
 * pod reflector at it through client-node's KubeConfig, and churns a pool of engine and trainer
 * cells through it for `--duration` seconds. `--source in-process` plays the same kind of churn
 * through an `InProcessSource` (no HTTP). With `KUBECONFIG` (or `--kubeconfig`) it tracks the pods of
 * a real cluster until Ctrl-C. Every reconcile prints its pool's view when it changes.
 *
 *   pnpm demo:pool-tracker                      # embedded apiserver, 10 s
 *   pnpm demo:pool-tracker --duration 4         # cut short
 *   pnpm demo:pool-tracker --source in-process  # no HTTP
 *   pnpm demo:pool-tracker --kubeconfig ~/.kube/config --namespace ml --selector pool   # the long-running controller
 *   pnpm demo:pool-tracker --controller [--fault forbidden]     # the same controller against an embedded apiserver
 *   pnpm demo:pool-tracker --replicas 3 [--metrics-port 9090]   # leader election: one leader, a kill, a takeover
 */
import { parseArgs } from 'node:util';
import type { Logger } from '@reconcile-loop/loop';
import { runController } from './controller.js';
import { DEMO_NAMESPACE, startEmbeddedScenario } from './embedded.js';
import { CONTROLLER_NAMESPACE, FAULTS, startFaultyCluster, type Fault } from './faults.js';
import { runReplicas } from './replicas.js';
import { createSimulation } from './simulation.js';
import type { PoolView } from './tracker.js';

const usage = `usage: pnpm demo:pool-tracker [--source embedded|in-process|cluster] [--duration <seconds>]
                 [--kubeconfig <path>] [--namespace <ns>] [--selector <labels>] [--pool-label <label>] [--verbose]
                 [--controller] [--fault ${FAULTS.join('|')}]
                 [--health-port <port>] [--health-host <addr>] [--sync-timeout <seconds>] [--grace <seconds>]
                 [--replicas <n>] [--metrics-port <port>] [--kill-after <seconds>]
  default source: cluster when KUBECONFIG or --kubeconfig is set, embedded otherwise
  cluster: the long-running controller (until SIGTERM/SIGINT; exit 1 when the cluster cannot be tracked)
  --controller without a kubeconfig: that controller against an embedded apiserver, broken by --fault
  --replicas: n in-process replicas behind leader election on a Lease (embedded apiserver, or the cluster
    of the kubeconfig); every replica syncs, the leader reconciles; --kill-after (embedded default 4 s)
    kills the leader and a standby takes over; --metrics-port P serves replica i's probes on P+i`;

const SOURCES = ['embedded', 'in-process', 'cluster'] as const;
type SourceKind = (typeof SOURCES)[number];

class UsageError extends Error {}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function finalPools(views: ReadonlyMap<string, PoolView>): string {
  return (
    [...views.values()].map((v) => `${v.pool} (${v.ready}/${v.cells.length} ready, ${v.restarts} restarts)`).join(', ') || 'none'
  );
}

function consoleLogger(verbose: boolean): Logger {
  const line =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      const err = fields['err'];
      const detail = err instanceof Error ? `: ${err.message}` : '';
      console.log(`          ${level} ${message}${detail}`);
    };
  const quiet = (): void => {};
  return { debug: verbose ? line('.') : quiet, info: verbose ? line('i') : quiet, warn: line('!'), error: line('!') };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      source: { type: 'string' },
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', default: 'default' },
      selector: { type: 'string' },
      'pool-label': { type: 'string', default: 'pool' },
      verbose: { type: 'boolean', default: false },
      controller: { type: 'boolean', default: false },
      fault: { type: 'string', default: 'none' },
      'health-port': { type: 'string' },
      'health-host': { type: 'string', default: '127.0.0.1' },
      'sync-timeout': { type: 'string' },
      grace: { type: 'string' },
      replicas: { type: 'string' },
      'metrics-port': { type: 'string' },
      'kill-after': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const durationS = values.duration === undefined ? undefined : Number(values.duration);
  if (durationS !== undefined && !(Number.isFinite(durationS) && durationS > 0)) {
    console.error(`--duration must be a positive number of seconds\n${usage}`);
    return 2;
  }
  const kubeconfig = values.kubeconfig ?? process.env['KUBECONFIG'];
  const source = (values.source ?? (values.controller || kubeconfig ? 'cluster' : 'embedded')) as SourceKind;
  const fault = values.fault as Fault;
  if (!FAULTS.includes(fault)) {
    console.error(`--fault must be one of ${FAULTS.join(', ')}\n${usage}`);
    return 2;
  }
  /** A number option: positive, or non-negative when `zero`. */
  const seconds = (name: string, text: string | undefined, zero: boolean): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!(Number.isFinite(n) && (zero ? n >= 0 : n > 0)))
      throw new UsageError(`--${name} must be a ${zero ? 'non-negative' : 'positive'} number`);
    return n;
  };
  let healthPort: number | undefined;
  let syncTimeoutS: number | undefined;
  let graceS: number | undefined;
  let replicas: number | undefined;
  let metricsPort: number | undefined;
  let killAfterS: number | undefined;
  try {
    replicas = seconds('replicas', values.replicas, false);
    if (replicas !== undefined && !(Number.isInteger(replicas) && replicas <= 16))
      throw new UsageError('--replicas must be an integer from 1 to 16');
    metricsPort = seconds('metrics-port', values['metrics-port'], true);
    if (metricsPort !== undefined && !(Number.isInteger(metricsPort) && metricsPort + (replicas ?? 1) - 1 <= 65_535))
      throw new UsageError('--metrics-port must be a port number (0 for any free ports)');
    killAfterS = seconds('kill-after', values['kill-after'], true);
    healthPort = seconds('health-port', values['health-port'], true);
    if (healthPort !== undefined && !(Number.isInteger(healthPort) && healthPort <= 65_535))
      throw new UsageError('--health-port must be a port number (0 for any free port)');
    syncTimeoutS = seconds('sync-timeout', values['sync-timeout'], false);
    graceS = seconds('grace', values.grace, true);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}\n${usage}`);
    return 2;
  }
  if (!SOURCES.includes(source)) {
    console.error(`--source must be one of ${SOURCES.join(', ')}\n${usage}`);
    return 2;
  }
  const logger = consoleLogger(values.verbose);
  const print = (line: string): void => console.log(line);

  // Ctrl-C stops the tracker cleanly. A ref'd interval keeps the process alive meanwhile: the
  // loop's own timers are unref'd by design.
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const keepAlive = setInterval(() => {}, 1 << 30);
  try {
    if (replicas !== undefined) {
      return await replicaDemo({
        replicas,
        metricsPort,
        killAfterS,
        durationS,
        kubeconfig,
        values,
        print,
        logger,
        signal: abort.signal,
      });
    }
    if (source === 'cluster') {
      const useEmbedded = values.controller && !kubeconfig;
      const cluster = useEmbedded ? await startFaultyCluster(fault, values.selector ?? values['pool-label']) : undefined;
      // --duration ends the controller like a SIGTERM would (a bounded demo run).
      if (durationS !== undefined) setTimeout(() => abort.abort(), durationS * 1000).unref();
      if (cluster)
        print(
          `embedded apiserver at ${cluster.server.url} with a pool in namespace ${CONTROLLER_NAMESPACE}${fault === 'none' ? '' : `, broken: ${fault}`}`,
        );
      try {
        return await runController({
          ...(cluster
            ? { kubeconfigYaml: cluster.server.kubeconfig() }
            : values.kubeconfig !== undefined
              ? { kubeconfig: values.kubeconfig }
              : {}),
          namespace: cluster ? CONTROLLER_NAMESPACE : values.namespace,
          selector: cluster?.selector ?? values.selector ?? values['pool-label'],
          poolLabel: values['pool-label'],
          ...(healthPort !== undefined && { healthPort, healthHost: values['health-host'] }),
          ...(syncTimeoutS !== undefined && { syncTimeoutMs: syncTimeoutS * 1000 }),
          ...(graceS !== undefined && { graceMs: graceS * 1000 }),
          ...(cluster?.hangReconcile && { beforeReconcile: () => new Promise<void>(() => {}) }),
          signal: abort.signal,
          print,
          printError: (line) => console.error(line),
          logger,
        });
      } finally {
        await cluster?.server.close();
      }
    } else if (source === 'embedded') {
      const durationMs = (durationS ?? 10) * 1000;
      const scenario = await startEmbeddedScenario({ durationMs, print, logger, signal: abort.signal });
      print(
        `embedded apiserver at ${scenario.server.url}: a pool of engine and trainer cells in namespace ${DEMO_NAMESPACE}, ` +
          `tracked for ${durationMs / 1000} s by the pod reflector through client-node's KubeConfig`,
      );
      const { converged } = await scenario.run();
      const counts = scenario.server.requestCounts();
      print(
        `stopped cleanly; the apiserver served ${count(counts.list, 'LIST', 'LISTs')} (${count(scenario.relists.length, 'relist', 'relists')}) and ${count(counts.watch, 'WATCH', 'WATCHes')}; ` +
          `final pools: ${finalPools(scenario.tracker.views)}${abort.signal.aborted ? ' (interrupted)' : converged ? '' : ' (the tracker had not caught up with the apiserver)'}`,
      );
    } else {
      const durationMs = (durationS ?? 10) * 1000;
      print(`in-process pool of engine and trainer cells for ${durationMs / 1000} s (an InProcessSource, no HTTP)`);
      const simulation = createSimulation({ durationMs, print, logger, signal: abort.signal });
      await simulation.run();
      print(`stopped cleanly; final pools: ${finalPools(simulation.tracker.views)}`);
    }
    return 0;
  } finally {
    clearInterval(keepAlive);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `--replicas N`: the embedded apiserver (Leases registered) by default, the kubeconfig's cluster otherwise. */
async function replicaDemo(o: {
  replicas: number;
  metricsPort: number | undefined;
  killAfterS: number | undefined;
  durationS: number | undefined;
  kubeconfig: string | undefined;
  values: { namespace: string; selector?: string | undefined; 'pool-label': string; 'health-host': string };
  print: (line: string) => void;
  logger: Logger;
  signal: AbortSignal;
}): Promise<number> {
  const { print } = o;
  const embedded =
    o.kubeconfig === undefined ? await startFaultyCluster('none', o.values.selector ?? o.values['pool-label']) : undefined;
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  o.signal.addEventListener('abort', onAbort, { once: true });
  const durationMs = o.durationS === undefined ? (embedded ? 12_000 : undefined) : o.durationS * 1000;
  const timer = durationMs === undefined ? undefined : setTimeout(() => stop.abort(), durationMs);
  try {
    if (embedded) {
      // The embedded apiserver serves coordination.k8s.io/v1 Leases with the apiserver's resourceVersion
      // and 409 semantics: real HTTP objects the LeaseLock reads and writes.
      print(`embedded apiserver at ${embedded.server.url}; ${o.replicas} replicas track namespace ${CONTROLLER_NAMESPACE}`);
    } else {
      print(
        `cluster of ${o.kubeconfig}: ${o.replicas} replicas track namespace ${o.values.namespace}; Lease ${o.values.namespace}/pool-tracker`,
      );
    }
    const killAfterMs = o.killAfterS === undefined ? (embedded ? 4_000 : undefined) : o.killAfterS * 1000;
    const report = await runReplicas({
      replicas: o.replicas,
      ...(embedded ? { kubeconfigYaml: embedded.server.kubeconfig() } : { kubeconfig: o.kubeconfig! }),
      namespace: embedded ? CONTROLLER_NAMESPACE : o.values.namespace,
      selector: embedded?.selector ?? o.values.selector ?? o.values['pool-label'],
      poolLabel: o.values['pool-label'],
      // Short timings on the embedded server so the takeover fits the story; client-go's on a cluster.
      ...(embedded && { timings: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 } }),
      ...(o.metricsPort !== undefined && { metricsPort: o.metricsPort, metricsHost: o.values['health-host'] }),
      ...(killAfterMs !== undefined && { killAfterMs }),
      onSynced: () => {
        if (!embedded) return;
        print('a new evaluator pod appears: every replica caches it, only the leader reconciles');
        embedded.server.seedPods(1, { namespace: CONTROLLER_NAMESPACE, labels: { pool: 'evaluators' }, namePrefix: 'evaluator' });
      },
      signal: stop.signal,
      print,
      logger: o.logger,
    });
    print(
      `stopped cleanly; leaders in order: ${report.leaders.map((id) => id.split('_')[1]).join(' → ') || 'none'}` +
        `${report.killed ? ` (${report.killed} was killed)` : ''}; reconciles: ` +
        Object.entries(report.reconciles)
          .map(([name, pools]) => `${name} ${pools.length}`)
          .join(', '),
    );
    return 0;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    o.signal.removeEventListener('abort', onAbort);
    await embedded?.server.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
    process.exitCode = 1;
  },
);
