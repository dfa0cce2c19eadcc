/**
 * The pool tracker demo. Without a cluster it starts the embedded apiserver in-process, points the
 * pod reflector at it through client-node's KubeConfig, and churns a pool of engine and trainer
 * cells through it for `--duration` seconds. `--source in-process` plays the same kind of churn
 * through an `InProcessSource` (no HTTP). With `KUBECONFIG` (or `--kubeconfig`) it tracks the pods of
 * a real cluster until Ctrl-C. Every reconcile prints its pool's view when it changes.
 *
 *   pnpm demo                      # embedded apiserver, 10 s
 *   pnpm demo --duration 4         # cut short
 *   pnpm demo --source in-process  # no HTTP
 *   pnpm demo --kubeconfig ~/.kube/config --namespace ml --selector pool   # the long-running controller
 *   pnpm demo --controller [--fault forbidden]     # the same controller against an embedded apiserver
 */
import { parseArgs } from 'node:util';
import type { Logger } from '@reconcile-loop/loop';
import { runController } from './controller.js';
import { DEMO_NAMESPACE, startEmbeddedScenario } from './embedded.js';
import { CONTROLLER_NAMESPACE, FAULTS, startFaultyCluster, type Fault } from './faults.js';
import { createSimulation } from './simulation.js';
import type { PoolView } from './tracker.js';

const usage = `usage: pnpm demo [--source embedded|in-process|cluster] [--duration <seconds>]
                 [--kubeconfig <path>] [--namespace <ns>] [--selector <labels>] [--pool-label <label>] [--verbose]
                 [--controller] [--fault ${FAULTS.join('|')}]
                 [--health-port <port>] [--health-host <addr>] [--sync-timeout <seconds>] [--grace <seconds>]
  default source: cluster when KUBECONFIG or --kubeconfig is set, embedded otherwise
  cluster: the long-running controller (until SIGTERM/SIGINT; exit 1 when the cluster cannot be tracked)
  --controller without a kubeconfig: that controller against an embedded apiserver, broken by --fault`;

const SOURCES = ['embedded', 'in-process', 'cluster'] as const;
type SourceKind = (typeof SOURCES)[number];

class UsageError extends Error {}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function finalPools(views: ReadonlyMap<string, PoolView>): string {
  return [...views.values()].map((v) => `${v.pool} (${v.ready}/${v.cells.length} ready, ${v.restarts} restarts)`).join(', ') || 'none';
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
    if (!(Number.isFinite(n) && (zero ? n >= 0 : n > 0))) throw new UsageError(`--${name} must be a ${zero ? 'non-negative' : 'positive'} number`);
    return n;
  };
  let healthPort: number | undefined;
  let syncTimeoutS: number | undefined;
  let graceS: number | undefined;
  try {
    healthPort = seconds('health-port', values['health-port'], true);
    if (healthPort !== undefined && !(Number.isInteger(healthPort) && healthPort <= 65_535)) throw new UsageError('--health-port must be a port number (0 for any free port)');
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
    if (source === 'cluster') {
      const useEmbedded = values.controller && !kubeconfig;
      const cluster = useEmbedded ? await startFaultyCluster(fault, values.selector ?? values['pool-label']) : undefined;
      // --duration ends the controller like a SIGTERM would (a bounded demo run).
      if (durationS !== undefined) setTimeout(() => abort.abort(), durationS * 1000).unref();
      if (cluster) print(`embedded apiserver at ${cluster.server.url} with a pool in namespace ${CONTROLLER_NAMESPACE}${fault === 'none' ? '' : `, broken: ${fault}`}`);
      try {
        return await runController({
          ...(cluster ? { kubeconfigYaml: cluster.server.kubeconfig() } : values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
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

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
    process.exitCode = 1;
  },
);
