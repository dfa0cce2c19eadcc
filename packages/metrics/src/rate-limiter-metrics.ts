/**
 * The client-side rate limiter's queue wait as client-go's `rest_client_rate_limiter_duration_seconds`
 * histogram (its buckets; `lane` in place of `host`: which limiter waited — the reconcile writes'
 * or leader election's own). kube-client's `onRateLimitWait` hook feeds it; this package does not
 * depend on kube-client, the hook's shape is structural.
 */
import { register, type Registry } from 'prom-client';
import type { MetricDefinition } from './definitions.js';
import { HistogramFamily, type HistogramSeries } from './families.js';

/** client-go `component-base/metrics/prometheus/restclient` `rateLimiterLatency`, labels `verb` and `lane`. */
export const RATE_LIMITER_DURATION: MetricDefinition = Object.freeze({
  name: 'rest_client_rate_limiter_duration_seconds',
  help: 'Client side rate limiter latency in seconds, by verb and limiter lane.',
  type: 'histogram',
  labelNames: Object.freeze(['verb', 'lane']),
  buckets: Object.freeze([0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60]),
});

/** Options of {@link rateLimiterMetrics}. */
export interface RateLimiterMetricsOptions {
  /** Where the histogram is registered. Default prom-client's global `register`. */
  readonly registry?: Registry | undefined;
}

/** What {@link rateLimiterMetrics} returns: pass it as `KubeClientOptions.onRateLimitWait`. */
export type RateLimitWaitObserver = (waitMs: number, wait: { readonly verb: string; readonly lane: string }) => void;

const byRegistry = new WeakMap<Registry, RateLimitWaitObserver>();

/**
 * The observer for a client's rate limiter waits. One histogram per registry: a second call with
 * the same registry returns the same observer, so several clients (and their lanes) share it.
 */
export function rateLimiterMetrics(options: RateLimiterMetricsOptions = {}): RateLimitWaitObserver {
  const registry = options.registry ?? register;
  const existing = byRegistry.get(registry);
  if (existing !== undefined) return existing;
  const family = new HistogramFamily(RATE_LIMITER_DURATION);
  registry.registerMetric(family as unknown as Parameters<Registry['registerMetric']>[0]);
  const series = new Map<string, HistogramSeries>();
  const observer: RateLimitWaitObserver = (waitMs, { verb, lane }) => {
    const key = `${verb}\u0000${lane}`;
    let s = series.get(key);
    if (s === undefined) series.set(key, (s = family.series({ verb, lane })));
    s.observe(waitMs / 1000);
  };
  byRegistry.set(registry, observer);
  return observer;
}
