/**
 * The long-running controller (README's example): tracks the pods of a cluster by pool until
 * SIGTERM/SIGINT, serves `/healthz` and `/readyz` for the Deployment's probes, stops gracefully,
 * and fails loudly: a cluster it cannot track prints a clear error and exits non-zero.
 *
 * Exit codes: 0 after a clean stop; 1 when the loop could not start (a permanent error such as a
 * 400 on a bad selector, or the sync timeout with the source's last error, e.g. a 403), when a
 * source failed permanently after start, or when the stop's grace ran out with work abandoned.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  LoopStoppedError,
  ReconcileLoop,
  describeError,
  healthHandler,
  silentLogger,
  type Logger,
  type ReconcileContext,
  type Source,
} from '@reconcile-loop/loop';
import { ClusterSourceUnavailableError, openClusterSource } from './cluster.js';
import type { PodView } from './pod-view.js';
import { describePool, poolView } from './tracker.js';

/** Options for {@link runController}. */
export interface ControllerOptions {
  /** Path to a kubeconfig; default `KUBECONFIG` / `~/.kube/config`. */
  kubeconfig?: string;
  /** A kubeconfig's YAML text (the embedded apiserver's); takes precedence over `kubeconfig`. */
  kubeconfigYaml?: string;
  namespace: string;
  /** Label selector of the tracked pods. */
  selector: string;
  /** Label naming a pod's pool. Default `pool`. */
  poolLabel?: string;
  /** Serve the probes on this port (0: any free port); undefined: no probe server. */
  healthPort?: number;
  /** Address the probe server binds. Default `127.0.0.1`; a pod's probes need `0.0.0.0`. */
  healthHost?: string;
  /** `start()` gives up after this long. Default: the loop's (2 min). */
  syncTimeoutMs?: number | undefined;
  /** `stop()` waits this long for running work. Default: the loop's (30 s). */
  graceMs?: number | undefined;
  /** Aborted by SIGTERM/SIGINT: the controller then stops gracefully. */
  signal: AbortSignal;
  /** Standard output, one line per call. */
  print: (line: string) => void;
  /** Standard error, one line per call. */
  printError: (line: string) => void;
  logger?: Logger | undefined;
  /** The source to track instead of a pod reflector from the kubeconfig (tests). */
  source?: Source<PodView>;
  /** Called before each pool report; a test or a fault injection can make it slow. */
  beforeReconcile?: (pool: string, context: ReconcileContext<PodView, string>) => Promise<void> | void;
  /** Called once the probe server listens, with its base URL. */
  onListening?: (url: string) => void;
}

const NAME = 'pool-tracker';

/** Runs the controller until `signal` aborts or it fails; resolves with the process exit code. */
export async function runController(options: ControllerOptions): Promise<number> {
  const { print, printError, signal } = options;
  const poolLabel = options.poolLabel ?? 'pool';
  let source: Source<PodView>;
  try {
    source =
      options.source ??
      (await openClusterSource({
        kubeconfigYaml: options.kubeconfigYaml,
        kubeconfig: options.kubeconfig,
        namespace: options.namespace,
        selector: options.selector,
        logger: options.logger ?? silentLogger,
      }));
  } catch (error) {
    if (!(error instanceof ClusterSourceUnavailableError)) throw error;
    printError(`${NAME}: ${error.message}`);
    return 1;
  }

  // A failure after start() resolved arrives here; it also wakes the wait below.
  let fatal: unknown;
  const failed = new AbortController();
  const loop = new ReconcileLoop<PodView, string>({
    source,
    keyMap: (pod) => {
      const pool = pod.metadata.labels[poolLabel];
      return pool ? `${pod.metadata.namespace ?? ''}/${pool}` : undefined;
    },
    reconcile: async (pool, context) => {
      await options.beforeReconcile?.(pool, context);
      print(describePool(poolView(pool, context.members.values())));
    },
    sources: { syncTimeoutMs: options.syncTimeoutMs },
    shutdown: { timeoutMs: options.graceMs },

    logger: options.logger,
    onError: (error) => {
      fatal = error;
      failed.abort();
    },
  });

  let server: Server | undefined;
  if (options.healthPort !== undefined) {
    server = createServer(healthHandler(loop));
    const host = options.healthHost ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(options.healthPort, host, resolve);
    });
    const url = `http://${host}:${(server.address() as AddressInfo).port}`;
    print(`${NAME}: probes at ${url}/healthz and ${url}/readyz`);
    options.onListening?.(url);
  }
  // SIGTERM during start() stops the loop, which rejects the start with LoopStoppedError.
  const onSignal = (): void => void loop.stop();
  signal.addEventListener('abort', onSignal, { once: true });
  try {
    print(`${NAME}: tracking pods in namespace ${options.namespace} matching "${options.selector}" (source ${source.name})`);
    try {
      await loop.start();
    } catch (error) {
      if (error instanceof LoopStoppedError) {
        print(`${NAME}: stopped before the first sync`);
        return 0;
      }
      printError(`${NAME}: cannot start: ${describeError(error)}`);
      return 1;
    }
    print(`${NAME}: synced ${loop.store.size} pods in ${loop.store.parents().length} pools; running until SIGTERM/SIGINT`);
    await new Promise<void>((resolve) => {
      if (signal.aborted || failed.signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      failed.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    const report = await loop.stop();
    if (fatal !== undefined) {
      printError(`${NAME}: stopped: ${describeError(fatal)}`);
      return 1;
    }
    if (report.abandoned.length > 0 || report.abandonedSources.length > 0) {
      printError(
        `${NAME}: stopped after the grace period; abandoned reconciles of ${report.abandoned.join(', ') || 'none'}` +
          `${report.abandonedSources.length > 0 ? ` and sources ${report.abandonedSources.join(', ')}` : ''}`,
      );
      return 1;
    }
    print(`${NAME}: stopped cleanly`);
    return 0;
  } finally {
    signal.removeEventListener('abort', onSignal);
    await loop.stop();
    if (server !== undefined) await new Promise((resolve) => server!.close(resolve));
  }
}
