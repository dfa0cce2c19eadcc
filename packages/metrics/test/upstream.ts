/**
 * Transcribed by hand from controller-runtime v0.24.1 — NOT imported from src — so the exposition
 * test compares our registrations with upstream's and not with themselves:
 *   - pkg/internal/controller/metrics/metrics.go (controller_runtime_*)
 *   - pkg/internal/metrics/workqueue.go (workqueue_*; keys from pkg/metrics/workqueue.go), where
 *     latency buckets are prometheus.ExponentialBuckets(10e-9, 10, 12).
 * https://github.com/kubernetes-sigs/controller-runtime/tree/v0.24.1
 * `controller_runtime_reconcile_panics_total` is upstream but deliberately not ours (JS has no
 * panics; see ALIGNMENT.md `metrics: No panics`).
 */
export interface UpstreamMetric {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  labels: string[];
  buckets?: number[];
}

const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5,
  3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
const workqueueBuckets = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

export const UPSTREAM: UpstreamMetric[] = [
  {
    name: 'controller_runtime_reconcile_total',
    type: 'counter',
    help: 'Total number of reconciliations per controller',
    labels: ['controller', 'result'],
  },
  {
    name: 'controller_runtime_reconcile_errors_total',
    type: 'counter',
    help: 'Total number of reconciliation errors per controller',
    labels: ['controller'],
  },
  {
    name: 'controller_runtime_terminal_reconcile_errors_total',
    type: 'counter',
    help: 'Total number of terminal reconciliation errors per controller',
    labels: ['controller'],
  },
  {
    name: 'controller_runtime_reconcile_time_seconds',
    type: 'histogram',
    help: 'Length of time per reconciliation per controller',
    labels: ['controller'],
    buckets: reconcileBuckets,
  },
  {
    name: 'controller_runtime_max_concurrent_reconciles',
    type: 'gauge',
    help: 'Maximum number of concurrent reconciles per controller',
    labels: ['controller'],
  },
  {
    name: 'controller_runtime_active_workers',
    type: 'gauge',
    help: 'Number of currently used workers per controller',
    labels: ['controller'],
  },
  {
    name: 'controller_runtime_reconcile_timeouts_total',
    type: 'counter',
    help: 'Total number of reconciliation timeouts per controller',
    labels: ['controller'],
  },
  {
    name: 'workqueue_depth',
    type: 'gauge',
    help: 'Current depth of workqueue by workqueue and priority',
    labels: ['name', 'controller', 'priority'],
  },
  {
    name: 'workqueue_adds_total',
    type: 'counter',
    help: 'Total number of adds handled by workqueue',
    labels: ['name', 'controller'],
  },
  {
    name: 'workqueue_queue_duration_seconds',
    type: 'histogram',
    help: 'How long in seconds an item stays in workqueue before being requested',
    labels: ['name', 'controller'],
    buckets: workqueueBuckets,
  },
  {
    name: 'workqueue_work_duration_seconds',
    type: 'histogram',
    help: 'How long in seconds processing an item from workqueue takes.',
    labels: ['name', 'controller'],
    buckets: workqueueBuckets,
  },
  {
    name: 'workqueue_unfinished_work_seconds',
    type: 'gauge',
    help:
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. " +
      'One can deduce the number of stuck threads by observing the rate at which this increases.',
    labels: ['name', 'controller'],
  },
  {
    name: 'workqueue_longest_running_processor_seconds',
    type: 'gauge',
    help: 'How many seconds has the longest running processor for workqueue been running.',
    labels: ['name', 'controller'],
  },
  {
    name: 'workqueue_retries_total',
    type: 'counter',
    help: 'Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)',
    labels: ['name', 'controller'],
  },
];
