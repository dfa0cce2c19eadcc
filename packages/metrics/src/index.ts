/**
 * Prometheus metrics for a `ReconcileLoop` with controller-runtime's and client-go workqueue's
 * names, labels and buckets, plus what they lack (objects cached, quarantined objects,
 * dead-lettered keys, relists by cause, watch reopens, seconds since the last frame), and a
 * `/metrics` handler that composes with the loop's `healthHandler`.
 */
// The observer a loop takes.
export { controllerMetrics, type ControllerMetricsOptions } from './controller-metrics.js';
// The client-side rate limiter's queue wait (kube-client's `onRateLimitWait`).
export { rateLimiterMetrics, type RateLimiterMetricsOptions } from './rate-limiter-metrics.js';
// A sharded replica: its ring share and handovers (a ShardMember's observer), its loops' admissions.
export { shardMetrics, type ShardMetricsOptions, type ShardMetricsObserver, type ShardedLoop } from './shard-metrics.js';
// The /metrics handler (it takes and returns node:http's (request, response) shape).
export { metricsHandler, type MetricsHandlerOptions } from './handler.js';
// The series (names, labels, buckets) are the README's table; their definitions are not exported.
// Errors (all extend primitives' ReconcileLoopError).
export { DuplicateControllerError, ObserverReusedError } from './errors.js';
