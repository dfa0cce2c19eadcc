/**
 * The CellSet controller: ONE `ReconcileLoop` with two sources — the CellSets (primary, `For`) and
 * the pods they own (secondary, `Owns`, mapped back by controller owner reference) — whose reconcile
 * is `reconcileCellSet`. Reads come from the reflectors' caches, writes go through one `KubeClient`
 * (rate-limited, typed errors), decisions become `events.k8s.io/v1` Events, and the loop's and the
 * controller's series go to one prom-client registry. Leader election plugs in as `leaderGate`.
 *
 * ```ts
 * const client = new KubeClient({ kubeConfig });
 * const controller = createCellSetController({ client, namespace: 'default' });
 * await controller.loop.start();          // both caches synced; reconciles run
 * // ...
 * await controller.stop();                // loop stopped, pending Events written (15 s in all at most)
 * ```
 */
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { EventRecorder, type KubeClient } from '@reconcile-loop/kube-client';
import {
  ReconcileLoop,
  silentLogger,
  systemClock,
  type Clock,
  type LeaderGate,
  type Logger,
  type StopReport,
  type UpdateFilter,
  type BackoffPolicy,
} from '@reconcile-loop/loop';
import { controllerMetrics } from '@reconcile-loop/metrics';
import { kubeReflector } from '@reconcile-loop/reflector';
import { Registry } from 'prom-client';
import { API_VERSION, CELLSET_LABEL, KIND, cellSetResource, cellSetSchema, type CellSet } from './api.js';
import { cellSetMetrics, DecisionLog, type CellSetMetrics, type Decision } from './decisions.js';
import { DEFAULT_REBUILD_DELAYS_MS } from './rebuild.js';
import { reconcileCellSet, type ReconcileDeps, type ReconcileHooks } from './reconcile.js';

/** The controller's name: the `controller` label of its metrics, the Events' reporting controller. */
export const CONTROLLER_NAME = 'cellset';
/** `reportingController` of the Events. */
export const REPORTING_CONTROLLER = 'cells.reconcile-loop.dev/cellset-controller';

/** Options of {@link createCellSetController}. */
export interface CellSetControllerOptions {
  /** Every read and write goes through it (the reflectors too). */
  readonly client: KubeClient;
  /** The namespace whose CellSets (and pods) this controller manages (a namespaced Role suffices). */
  readonly namespace: string;
  /** Rebuild delays per slot, 0 first; the next need after the last dead-letters the slot. Default 0/1/5/30 s. */
  readonly rebuildDelaysMs?: readonly number[] | undefined;
  /** The loop's and the reflectors' clock (a `ManualClock` in tests). Default the system clock. */
  readonly clock?: Clock | undefined;
  /** Wall time for the rebuild history and condition times. Default `Date.now`. */
  readonly wallClock?: (() => number) | undefined;
  readonly logger?: Logger | undefined;
  /** Where the loop's and the controller's series go. Default a fresh registry (`controller.registry`). */
  readonly registry?: Registry | undefined;
  /** Reconcile only while leading (a `LeaderElector` from `@reconcile-loop/leader-election`). Default: always. */
  readonly leaderGate?: LeaderGate | undefined;
  /** Each decision, after it was recorded (the demo narrates them). */
  readonly onDecision?: ((decision: Decision) => void) | undefined;
  /**
   * The client Events are written through. Default `client`; give a second one so Events do not
   * spend the writes' rate limit (controller-runtime's recorder has its own clientset too).
   */
  readonly eventsClient?: KubeClient | undefined;
  /** Record Events (default true). */
  readonly events?: boolean | undefined;
  /** `reportingInstance` of the Events. Default kube-client's `defaultReportingInstance()`: `POD_NAME` (or the hostname) and the pid. */
  readonly reportingInstance?: string | undefined;
  readonly hooks?: ReconcileHooks | undefined;
  /** How the reflectors retry a failed LIST or watch (default 1 s doubling to 30 s; the demo and tests shrink it). */
  readonly sourceRetry?: BackoffPolicy | undefined;
  /** A failure that ended the running loop (a source failed for good): the loop's `onError`. */
  readonly onError?: ((error: unknown) => void) | undefined;
  /** The loop's `syncTimeoutMs` (default 2 min). */
  readonly syncTimeoutMs?: number | undefined;
  /** Reconciles running at once (the loop's `controller.concurrency`). Default {@link DEFAULT_WORKERS}. */
  readonly workers?: number | undefined;
}

/**
 * Reconciles running at once. A reconcile of this controller spends its time waiting for writes
 * (a create, a delete, a status update), not computing, so more workers than CellSets changing at
 * the same time buys nothing and fewer makes a backlog wait in line: after a takeover the new
 * leader re-drives every set at once. 4 was measured against 1, 2 and 8 (BENCHMARKS.md (30)).
 */
export const DEFAULT_WORKERS = 4;

/** A built controller: start `loop`, stop with `stop()`. */
export interface CellSetController {
  readonly loop: ReconcileLoop<CellSet, string, { pods: Pod }>;
  readonly registry: Registry;
  readonly metrics: CellSetMetrics;
  /** `undefined` when `events: false`. */
  readonly events: EventRecorder | undefined;
  /**
   * Stops within `graceMs` in all (default {@link DEFAULT_SHUTDOWN_GRACE_MS}): the loop first (its
   * reconciles aborted), then `beforeFlush` (the Lease release: the next leader should not wait on
   * this replica's Events), then the Events still pending for the time left; what the deadline
   * leaves unwritten is dropped with one log line.
   */
  stop(options?: CellSetStopOptions): Promise<StopReport<string>>;
}

/** Options of {@link CellSetController.stop}. */
export interface CellSetStopOptions {
  /** The whole stop's budget. Default {@link DEFAULT_SHUTDOWN_GRACE_MS}. */
  readonly graceMs?: number | undefined;
  /** Runs after the loop stopped and before the Events are flushed, within the budget (the Lease release). */
  readonly beforeFlush?: (() => Promise<unknown>) | undefined;
}

/**
 * The flagship's shutdown budget: half a Deployment's default 30 s termination grace, so the
 * process exits by itself before the kubelet's SIGKILL even with a slow apiserver.
 */
export const DEFAULT_SHUTDOWN_GRACE_MS = 15_000;

/**
 * Primary updates that matter: a spec change (generation) or the start of deletion. Status, label
 * and annotation writes — most of them the controller's own — are skipped, so a status write does
 * not re-trigger the reconcile that made it (controller-runtime's `GenerationChangedPredicate`,
 * widened to deletion, which a CRD marks with a generation bump too, but a filter must not rely on).
 */
export const specOrDeletionChanged: UpdateFilter<CellSet> = (previous, next) =>
  previous.metadata.generation !== next.metadata.generation ||
  previous.metadata.deletionTimestamp !== next.metadata.deletionTimestamp;

/** Builds the controller (nothing runs until `loop.start()`). */
export function createCellSetController(options: CellSetControllerOptions): CellSetController {
  const { client, namespace } = options;
  const delays = options.rebuildDelaysMs ?? DEFAULT_REBUILD_DELAYS_MS;
  if (delays.length === 0 || delays[0] !== 0 || delays.some((ms) => !(Number.isFinite(ms) && ms >= 0))) {
    throw new RangeError(`rebuildDelaysMs must start with 0 and hold finite non-negative delays, got ${JSON.stringify(delays)}`);
  }
  const logger = options.logger ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const metrics = cellSetMetrics(registry);
  const events =
    options.events === false
      ? undefined
      : new EventRecorder({
          client: options.eventsClient ?? client,
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: options.reportingInstance,
          logger,
          wallClock: options.wallClock,
        });
  const timing = {
    clock: options.clock,
    retry: options.sourceRetry,
    logger,
  };
  const deps: ReconcileDeps = {
    cells: client.resource(cellSetResource, cellSetSchema).inNamespace(namespace),
    pods: client.resource({ ...podResource, kind: 'Pod' }, podSchema).inNamespace(namespace),
    rebuildDelaysMs: delays,
    wallClock: options.wallClock ?? Date.now,
    decisions: new DecisionLog(events, options.onDecision),
    metrics,
    logger,
    hooks: options.hooks ?? {},
    histories: new Map(),
    announced: new Map(),
    creates: 0,
  };
  const loop = new ReconcileLoop<CellSet, string, { pods: Pod }>({
    controller: { name: CONTROLLER_NAME, concurrency: options.workers ?? DEFAULT_WORKERS },
    leadership: options.leaderGate && { gate: options.leaderGate },
    sources: { syncTimeoutMs: options.syncTimeoutMs },
    source: kubeReflector({
      name: 'cellsets',
      kubeClient: client,
      namespace,
      resource: cellSetResource,
      schema: cellSetSchema,
      ...timing,
    }),
    keyMap: (_set, key) => key, // a CellSet is its own parent: key `namespace/name`
    updateFilter: specOrDeletionChanged,
    secondary: {
      pods: {
        // Only this controller's pods: the label every pod it creates carries.
        source: kubeReflector({
          name: 'pods',
          kubeClient: client,
          namespace,
          labelSelector: CELLSET_LABEL,
          resource: podResource,
          schema: podSchema,
          ...timing,
        }),
        owner: { kind: KIND, apiVersion: API_VERSION }, // by controller reference
      },
    },

    reconcile: (key, ctx) => reconcileCellSet(key, ctx, deps),
    observer: controllerMetrics({ registry, controller: CONTROLLER_NAME }),
    logger,
    clock: options.clock,

    onError: options.onError,
  });
  return {
    loop,
    registry,
    metrics,
    events,
    async stop(stopOptions = {}) {
      const clock = options.clock ?? systemClock;
      const graceMs = stopOptions.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
      const deadline = clock.now() + graceMs;
      const left = (): number => Math.max(0, deadline - clock.now());
      const report = await loop.stop({ graceMs });
      if (stopOptions.beforeFlush !== undefined) {
        // Bounded too: a release that hangs costs the Events' time, never the budget.
        let timer: unknown;
        const over = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, left())));
        await Promise.race([stopOptions.beforeFlush().catch(() => undefined), over]);
        clock.clearTimeout(timer);
      }
      await events?.close({ timeoutMs: left() });
      return report;
    },
  };
}
