/**
 * Names, help texts, labels and buckets of every series, as controller-runtime v0.24.1 defines them
 * (`pkg/internal/controller/metrics/metrics.go`, `pkg/internal/metrics/workqueue.go`), so dashboards
 * and alerts written for a Go controller work unchanged; then ours, under `reconcile_loop_`.
 * Invariant: an upstream name here carries upstream's help text, type, label names and buckets
 * exactly (the exposition test compares them with an independent transcription).
 */

/** controller-runtime's `controller_runtime_reconcile_time_seconds` buckets. */
export const RECONCILE_TIME_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5,
  3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
]);

/** client-go / controller-runtime workqueue latency buckets: `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s. */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = Object.freeze(
  Array.from({ length: 12 }, (_, i) => Number(`1e${i - 8}`)),
);

/** One series family. */
export interface MetricDefinition {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly labelNames: readonly string[];
  readonly buckets?: readonly number[] | undefined;
}

const def = (
  type: MetricDefinition['type'],
  name: string,
  labelNames: readonly string[],
  help: string,
  buckets?: readonly number[],
): MetricDefinition =>
  Object.freeze({ name, help, type, labelNames: Object.freeze([...labelNames]), ...(buckets !== undefined && { buckets }) });

const C = ['controller'] as const;
const WQ = ['name', 'controller'] as const;
const SRC = ['controller', 'source'] as const;

/** controller-runtime's controller metrics (v0.24.1), without `reconcile_panics_total` (JS has no panics; see ALIGNMENT). */
export const CONTROLLER_METRICS = Object.freeze({
  reconcileTotal: def(
    'counter',
    'controller_runtime_reconcile_total',
    ['controller', 'result'],
    'Total number of reconciliations per controller',
  ),
  reconcileErrors: def(
    'counter',
    'controller_runtime_reconcile_errors_total',
    C,
    'Total number of reconciliation errors per controller',
  ),
  terminalReconcileErrors: def(
    'counter',
    'controller_runtime_terminal_reconcile_errors_total',
    C,
    'Total number of terminal reconciliation errors per controller',
  ),
  reconcileTime: def(
    'histogram',
    'controller_runtime_reconcile_time_seconds',
    C,
    'Length of time per reconciliation per controller',
    RECONCILE_TIME_BUCKETS,
  ),
  workerCount: def(
    'gauge',
    'controller_runtime_max_concurrent_reconciles',
    C,
    'Maximum number of concurrent reconciles per controller',
  ),
  activeWorkers: def('gauge', 'controller_runtime_active_workers', C, 'Number of currently used workers per controller'),
  reconcileTimeouts: def(
    'counter',
    'controller_runtime_reconcile_timeouts_total',
    C,
    'Total number of reconciliation timeouts per controller',
  ),
});

/** controller-runtime's workqueue metrics (v0.24.1; `name` and `controller` both carry the controller name). */
export const WORKQUEUE_METRICS = Object.freeze({
  depth: def(
    'gauge',
    'workqueue_depth',
    ['name', 'controller', 'priority'],
    'Current depth of workqueue by workqueue and priority',
  ),
  adds: def('counter', 'workqueue_adds_total', WQ, 'Total number of adds handled by workqueue'),
  latency: def(
    'histogram',
    'workqueue_queue_duration_seconds',
    WQ,
    'How long in seconds an item stays in workqueue before being requested',
    WORKQUEUE_DURATION_BUCKETS,
  ),
  workDuration: def(
    'histogram',
    'workqueue_work_duration_seconds',
    WQ,
    'How long in seconds processing an item from workqueue takes.',
    WORKQUEUE_DURATION_BUCKETS,
  ),
  unfinished: def(
    'gauge',
    'workqueue_unfinished_work_seconds',
    WQ,
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
  ),
  longestRunningProcessor: def(
    'gauge',
    'workqueue_longest_running_processor_seconds',
    WQ,
    'How many seconds has the longest running processor for workqueue been running.',
  ),
  retries: def(
    'counter',
    'workqueue_retries_total',
    WQ,
    'Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)',
  ),
});

/** What none of them export (controller-runtime #3182): the cache, quarantine, dead-letter and watch view. */
export const LOOP_METRICS = Object.freeze({
  objectsCached: def(
    'gauge',
    'reconcile_loop_objects_cached',
    SRC,
    'Objects in the store of each source of the controller (quarantined objects excluded)',
  ),
  quarantined: def(
    'gauge',
    'reconcile_loop_quarantined_objects',
    SRC,
    'Objects held out of the store because they failed validation, per source',
  ),
  deadLettered: def(
    'gauge',
    'reconcile_loop_dead_lettered_keys',
    C,
    'Parent keys parked (dead-lettered) after exhausting their retry budget',
  ),
  expectationsPending: def(
    'gauge',
    'reconcile_loop_expectations_pending_keys',
    C,
    'Parent keys held back until the cache observes the writes their reconciles recorded (read your writes)',
  ),
  expectationsOldest: def(
    'gauge',
    'reconcile_loop_expectations_oldest_seconds',
    C,
    'How long the oldest parent key held back by unobserved writes has waited (0 when none)',
  ),
  relists: def(
    'counter',
    'reconcile_loop_relists_total',
    ['controller', 'source', 'cause'],
    'Relists (LISTs after the first of a stream) per source by cause: heal after a skipped frame, or rejected (expired or unusable resourceVersion, too-large frame)',
  ),
  watchReopens: def('counter', 'reconcile_loop_watch_reopens_total', SRC, 'WATCH calls started after the first, per source'),
  sourceReopens: def(
    'counter',
    'reconcile_loop_source_reopens_total',
    SRC,
    'Source streams the controller reopened after one ended or failed, per source',
  ),
  sinceLastFrame: def(
    'gauge',
    'reconcile_loop_seconds_since_last_watch_frame',
    SRC,
    'Seconds since the last event or frame (bookmarks included) of each source',
  ),
  cacheBytes: def(
    'gauge',
    'reconcile_loop_source_bytes_estimate',
    SRC,
    'Estimated heap bytes held by the objects of each source (a walk over each view as it arrives, kept as a running sum)',
  ),
  cacheBudget: def(
    'gauge',
    'reconcile_loop_source_memory_budget_bytes',
    SRC,
    'The memory budget of each source that has one, in estimated bytes',
  ),
  queueOldest: def(
    'gauge',
    'reconcile_loop_queue_oldest_item_seconds',
    ['controller', 'priority'],
    'Seconds the oldest queued key of each priority has waited (0 when none is queued); priority as in workqueue_depth',
  ),
  listLagRevisions: def(
    'gauge',
    'reconcile_loop_source_resource_version_lag',
    SRC,
    "etcd revisions between the last probe LIST (limit=1, the current revision) and the last resourceVersion the source's stream delivered, 0 once caught up; counts writes to every kind, so a quiet kind reads behind until its next bookmark (sources with a list-lag probe, numeric resourceVersions only)",
  ),
  secondsBehindList: def(
    'gauge',
    'reconcile_loop_source_seconds_behind_list',
    SRC,
    "Seconds since the newest probe LIST the source's stream has caught up with was taken: an upper bound on how stale its cache is (sources with a list-lag probe, once one was reached)",
  ),
  cacheRefused: def(
    'gauge',
    'reconcile_loop_source_refused_objects',
    SRC,
    'Objects of each source not cached because its memory budget was full (above 0 the cache is incomplete)',
  ),
});
