/** A real ReconcileLoop over in-process sources and the fake clock, with metrics on a fresh registry. */
import {
  InProcessSource,
  ManualClock,
  ReconcileLoop,
  type ReconcileContext,
  type ReconcileLoopOptions,
  type ReconcileResult,
} from '@reconcile-loop/loop';
import { Registry } from 'prom-client';
import { controllerMetrics } from '../src/index.js';

export interface Thing {
  metadata: { name: string; namespace: string; generation?: number };
}

export const thing = (name: string, generation = 1): [string, Thing] => [
  `ns/${name}`,
  { metadata: { name, namespace: 'ns', generation } },
];

export type Body = (
  key: string,
  ctx: ReconcileContext<Thing, string>,
) => void | ReconcileResult | Promise<void | ReconcileResult>;

export function metricsHarness(
  options: { body: Body; things?: Array<[string, Thing]> } & Partial<ReconcileLoopOptions<Thing, string>>,
) {
  const { body, things = [thing('a')], ...rest } = options;
  const clock = new ManualClock();
  const registry = new Registry();
  const source = new InProcessSource<Thing>('things', things);
  const observer = controllerMetrics<string>({ registry });
  const loop = new ReconcileLoop<Thing, string>({
    source,
    keyMap: (_, key) => key,
    reconcile: (key, ctx) => body(key, ctx),
    clock,
    observer,
    ...rest,
    controller: { name: 'thing-controller', ...rest.controller },
    sources: { resyncPeriodMs: 0, ...rest.sources },
  });
  return { loop, clock, registry, source, observer };
}

/** The value of one series (undefined when absent). */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metrics = await registry.getMetricsAsJSON();
  const family = metrics.find((m) => m.name === name || name.startsWith(`${m.name}_`));
  const series = (family?.values ?? []) as Array<{ value: number; labels: Record<string, unknown>; metricName?: string }>;
  const hit = series.find(
    (v) => (v.metricName ?? family?.name) === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
  );
  return hit?.value;
}
