/**
 * The CellSet controller as a long-running process (`pnpm demo --controller`, or `KUBECONFIG=… pnpm
 * demo`): it makes sure the CRD is served (installing it when its identity may), competes for a
 * Lease (warm standby until it leads), serves `/metrics`, `/healthz` and `/readyz` on one port,
 * prints every decision, and stops gracefully on SIGTERM/SIGINT. It fails loudly: a missing CRD it
 * may not install, a Role missing a verb, an unreachable cluster each print the apiserver's answer.
 *
 * Exit codes: 0 after a clean stop; 1 when it could not start or a source failed for good.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { LeaderElector, LeaseLock } from '@reconcile-loop/leader-election';
import {
  LoopStoppedError,
  describeError,
  healthHandler,
  systemClock,
  type Clock,
  type Logger,
  type StopReport,
} from '@reconcile-loop/loop';
import { metricsHandler, rateLimiterMetrics } from '@reconcile-loop/metrics';
import { Registry } from 'prom-client';
import { createCellSetController, DEFAULT_WORKERS, type CellSetController, type Decision } from '../src/controller.js';
import { CrdUnavailableError, ensureCellSetCrd } from './install.js';
import { tappedClient } from './tap.js';

/** Options of {@link runController}. */
export interface RunOptions {
  /** Path to a kubeconfig; default `KUBECONFIG` / `~/.kube/config` / the pod's service account. */
  readonly kubeconfig?: string | undefined;
  /** A kubeconfig's YAML text; takes precedence over `kubeconfig`. */
  readonly kubeconfigYaml?: string | undefined;
  readonly namespace: string;
  /** The Lease the replicas compete for (in `namespace`). Default `cellset-controller`. */
  readonly leaseName?: string | undefined;
  /** Lease timings (client-go's 15 / 10 / 2 s by default). */
  readonly leaseDurationMs?: number | undefined;
  readonly renewDeadlineMs?: number | undefined;
  readonly retryPeriodMs?: number | undefined;
  /** Rebuild budget delays (default 0/1/5/30 s). */
  readonly rebuildDelaysMs?: readonly number[] | undefined;
  /** Serve `/metrics`, `/healthz`, `/readyz` on this port (0: any free port); undefined: none. */
  readonly metricsPort?: number | undefined;
  readonly metricsHost?: string | undefined;
  readonly syncTimeoutMs?: number | undefined;
  /** The stop's whole budget after SIGTERM (default 15 s): the loop, the Lease release, then the Events for the time left. */
  readonly shutdownGraceMs?: number | undefined;
  /** Reconciles running at once (default {@link DEFAULT_WORKERS}). */
  readonly workers?: number | undefined;
  /** The reconcile writes' client-side limit: token bucket rate and size (default {@link DEFAULT_WRITE_QPS} / {@link DEFAULT_WRITE_BURST}). */
  readonly writeQps?: number | undefined;
  readonly writeBurst?: number | undefined;
  /** Pause (forever, until the signal) right after this many pod creates: a deterministic point for a kill -9 test. */
  readonly pauseAfterCreates?: number | undefined;
  readonly signal: AbortSignal;
  readonly print: (line: string) => void;
  readonly printError: (line: string) => void;
  readonly logger?: Logger | undefined;
  readonly onListening?: ((url: string) => void) | undefined;
}

/**
 * The reconcile writes' rate limit: 20 QPS / burst 30 (controller-runtime's `config.GetConfig` up to
 * v0.20) instead of client-go's 5 / 10. A replaced pod costs about 4 writes (delete, status, create,
 * status): at 5/s, 30 pods failing at once waited 16 s (p50) in the limiter's queue, at 20/s 3 s
 * (BENCHMARKS.md (30)). Events and the Lease have lanes of their own, so this budget is the
 * reconciles' alone.
 */
export const DEFAULT_WRITE_QPS = 20;
export const DEFAULT_WRITE_BURST = 30;

/** A decision as one line of output. */
export function describeDecision(d: Decision): string {
  return `${d.type === 'Warning' ? 'Warning' : 'event'} ${d.reason} ${d.cellSet}${d.pod === undefined ? '' : ` ${d.pod}`}: ${d.note}`;
}

/** A logger printing warnings and errors (with the apiserver's Status: the `err` field) on stderr. */
export function stderrLogger(printError: (line: string) => void, prefix = 'cellset-controller'): Logger {
  const line = (level: string) => (fields: Record<string, unknown>, message: string) => {
    const err = fields['err'];
    const key = typeof fields['parentKey'] === 'string' ? ` ${fields['parentKey']}:` : '';
    printError(`${prefix}: ${level}${key} ${message}${err === undefined ? '' : `: ${describeError(err)}`}`);
  };
  const quiet = (): void => {};
  return { debug: quiet, info: quiet, warn: line('warn'), error: line('error') };
}

/**
 * The process's shutdown budget: half a Deployment's default 30 s termination grace, so the process
 * exits by itself before the kubelet's SIGKILL even with a slow apiserver.
 */
export const DEFAULT_SHUTDOWN_GRACE_MS = 15_000;

/** Options of {@link stopController}. */
export interface StopOptions {
  /** The whole stop's budget. Default {@link DEFAULT_SHUTDOWN_GRACE_MS}. */
  readonly graceMs?: number | undefined;
  /** Runs after the loop stopped and before the Events are flushed, within the budget (the Lease release). */
  readonly beforeFlush?: (() => Promise<unknown>) | undefined;
  /** The clock the budget is measured on (the controller's; a `ManualClock` in tests). Default the system clock. */
  readonly clock?: Clock | undefined;
}

/**
 * Stops a controller within `graceMs` in all: the loop first (its reconciles aborted), then
 * `beforeFlush` (the Lease release: the next leader should not wait on this replica's Events), then
 * the Events still pending for the time left; what the deadline leaves unwritten is dropped with one
 * log line.
 */
export async function stopController(controller: CellSetController, options: StopOptions = {}): Promise<StopReport<string>> {
  const clock = options.clock ?? systemClock;
  const graceMs = options.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const deadline = clock.now() + graceMs;
  const left = (): number => Math.max(0, deadline - clock.now());
  const report = await controller.loop.stop({ graceMs });
  if (options.beforeFlush !== undefined) {
    // Bounded too: a release that hangs costs the Events' time, never the budget.
    let timer: unknown;
    const over = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, left())));
    await Promise.race([options.beforeFlush().catch(() => undefined), over]);
    clock.clearTimeout(timer);
  }
  await controller.events.close({ timeoutMs: left() });
  return report;
}

/** Runs the controller until `signal` aborts or it fails; resolves with the exit code. */
export async function runController(options: RunOptions): Promise<number> {
  const { print, printError, signal, namespace } = options;
  const logger = options.logger ?? stderrLogger(printError);
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kubeConfig = new KubeConfig();
  try {
    if (options.kubeconfigYaml !== undefined) kubeConfig.loadFromString(options.kubeconfigYaml);
    else if (options.kubeconfig !== undefined) kubeConfig.loadFromFile(options.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (error) {
    printError(`cellset-controller: cannot load the kubeconfig: ${describeError(error)}`);
    return 1;
  }
  const registry = new Registry();
  // The limiter's queue wait on /metrics, per lane: the reconcile writes', the Events' and the Lease's.
  const pause = options.pauseAfterCreates;
  // The kill -9 hook reaches the controller from outside, on the wire: the n-th pod create's answer is
  // held (the pod exists, the controller has not heard back) until the process stops or is killed.
  const client = tappedClient(
    kubeConfig,
    {
      afterPodCreate: async (pod, total) => {
        if (pause === undefined || total !== pause) return;
        print(
          `cellset-controller: paused after creating ${total} pods (last ${pod}), mid-reconcile (CELLSET_PAUSE_AFTER_CREATES)`,
        );
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    },
    {
      rateLimit: { qps: options.writeQps ?? DEFAULT_WRITE_QPS, burst: options.writeBurst ?? DEFAULT_WRITE_BURST },
      onRateLimitWait: rateLimiterMetrics({ registry }),
    },
  );
  print(
    `cellset-controller: node ${process.version}, pid ${process.pid}, namespace ${namespace}, cluster ${client.currentServer() ?? '(none)'}`,
  );
  try {
    const crd = await ensureCellSetCrd(client, namespace, { signal });
    print(`cellset-controller: the CellSet CRD is ${crd === 'served' ? 'served' : 'installed now'}`);
  } catch (error) {
    if (signal.aborted) return 0;
    printError(
      `cellset-controller: ${error instanceof CrdUnavailableError ? error.message : `cannot check the CellSet CRD: ${describeError(error)}`}`,
    );
    return 1;
  }

  const identity = `${hostname()}_${randomUUID().slice(0, 8)}`;
  const elector = new LeaderElector({
    lock: new LeaseLock({ client, namespace, name: options.leaseName ?? 'cellset-controller', identity }),
    logger,
    leaseDurationMs: options.leaseDurationMs,
    renewDeadlineMs: options.renewDeadlineMs,
    retryPeriodMs: options.retryPeriodMs,
    onStartedLeading: () => print(`cellset-controller: leading as ${identity}`),
    onStoppedLeading: () => print('cellset-controller: stopped leading'),
  });
  let failure: unknown;
  const stopping = new AbortController();
  const controller = createCellSetController({
    client,
    registry,
    // A lane of its own: Events do not spend the reconcile writes' rate limit (controller-runtime's
    // recorder has its own clientset too); the Lease has its own lane inside LeaseLock.
    // Its limiter is client-go's default 5 / 10, not the writes': Events may wait, decisions may not.
    eventsClient: client.withLane('events'),
    namespace,
    logger,
    leaderGate: elector,
    onDecision: (d) => print(describeDecision(d)),
    rebuildDelaysMs: options.rebuildDelaysMs,
    syncTimeoutMs: options.syncTimeoutMs,
    workers: options.workers,
    onError: (error) => {
      failure = error;
      stopping.abort();
    },
  });
  const { loop } = controller;
  const onAbort = (): void => stopping.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  let server: Server | undefined;
  const electing = elector.run(stopping.signal);
  try {
    if (options.metricsPort !== undefined) {
      const s = createServer(metricsHandler(controller.registry, { next: healthHandler(loop) }));
      server = s;
      await new Promise<void>((resolve, reject) =>
        s.once('error', reject).listen(options.metricsPort, options.metricsHost ?? '127.0.0.1', resolve),
      );
      const url = `http://${options.metricsHost ?? '127.0.0.1'}:${(s.address() as AddressInfo).port}`;
      print(`cellset-controller: /metrics, /healthz and /readyz at ${url}`);
      options.onListening?.(url);
    }
    await loop.start(); // every replica syncs; only the leader reconciles
    print(
      `cellset-controller: synced CellSets and pods in namespace ${namespace}; ${elector.isLeader() ? 'leading' : 'warm standby until it leads'}`,
    );
    await new Promise<void>((resolve) => {
      if (stopping.signal.aborted) resolve();
      stopping.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } catch (error) {
    if (!(error instanceof LoopStoppedError)) failure ??= error;
  } finally {
    signal.removeEventListener('abort', onAbort);
    stopping.abort(); // the elector releases the Lease once the aborted reconciles settled
    const report = await stopController(controller, {
      graceMs: options.shutdownGraceMs,
      beforeFlush: () => electing.catch(() => undefined),
    });
    server?.close();
    if (report.abandoned.length > 0)
      printError(`cellset-controller: stopped after the grace period; abandoned ${report.abandoned.join(', ')}`);
  }
  if (failure !== undefined) {
    printError(`cellset-controller: ${describeError(failure)}`);
    return 1;
  }
  print('cellset-controller: stopped cleanly');
  return 0;
}
