/**
 * Prometheus metrics for a `ReconcileLoop` with controller-runtime's and client-go workqueue's
 * names, labels and buckets, plus what they lack (objects cached, quarantined objects,
 * dead-lettered keys, relists by cause, watch reopens, seconds since the last frame), and a
 * `/metrics` handler that composes with the loop's `healthHandler`.
 */
// The observer a loop takes.
export { controllerMetrics, type ControllerMetricsObserver, type ControllerMetricsOptions } from './controller-metrics.js';
// The /metrics handler.
export {
  metricsHandler,
  type MetricsHandlerOptions,
  type MetricsRequest,
  type MetricsResponse,
  type RequestHandler,
} from './handler.js';
// The series' definitions (names, labels, buckets).
export {
  CONTROLLER_METRICS,
  WORKQUEUE_METRICS,
  LOOP_METRICS,
  RECONCILE_TIME_BUCKETS,
  WORKQUEUE_DURATION_BUCKETS,
  type MetricDefinition,
} from './definitions.js';
// Errors (all extend primitives' ReconcileLoopError).
export { DuplicateControllerError, ObserverReusedError } from './errors.js';
