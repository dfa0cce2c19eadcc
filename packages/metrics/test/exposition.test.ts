import { InProcessSource, ReconcileLoop } from '@reconcile-loop/loop';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { OptionsError } from '@reconcile-loop/primitives';
import { controllerMetrics } from '../src/index.js';
import { LOOP_METRICS } from '../src/definitions.js';
import { UPSTREAM } from './upstream.js';

async function exposed() {
  const registry = new Registry();
  new ReconcileLoop<{ id: string }, string>({
    controller: { name: 'pods' },
    source: new InProcessSource('src', [['k', { id: 'k' }]]),
    keyMap: (_, key) => key,
    reconcile: () => undefined,
    observer: controllerMetrics({ registry }),
  });
  return { registry, json: await registry.getMetricsAsJSON(), text: await registry.metrics() };
}

describe('exposition', () => {
  it('[metrics: Upstream names] every controller-runtime v0.24.1 series is exposed with its help, type, label names and buckets', async () => {
    const { json, text } = await exposed();
    for (const want of UPSTREAM) {
      const got = json.find((m) => m.name === want.name);
      expect(got, want.name).toBeDefined();
      expect({ name: got!.name, type: got!.type, help: got!.help }).toEqual({
        name: want.name,
        type: want.type,
        help: want.help,
      });
      expect(text).toContain(`# HELP ${want.name} ${want.help.replace(/\\/g, '\\\\')}\n# TYPE ${want.name} ${want.type}\n`);
      const values = got!.values as Array<{ labels: Record<string, string | number>; metricName?: string }>;
      expect(values.length, `${want.name} has a series from the start`).toBeGreaterThan(0);
      for (const v of values) {
        const names = Object.keys(v.labels).filter((l) => l !== 'le');
        expect(names.sort(), want.name).toEqual([...want.labels].sort());
      }
      if (want.buckets !== undefined) {
        const les = values.filter((v) => v.metricName === `${want.name}_bucket`).map((v) => v.labels.le);
        expect(les).toEqual([...want.buckets, '+Inf']);
      }
    }
  });

  it("[metrics: Upstream names] label values: controller and workqueue name are the loop name, result has the four upstream values, priority is controller-runtime's 0 and -100", async () => {
    const { json } = await exposed();
    const results = (
      json.find((m) => m.name === 'controller_runtime_reconcile_total')!.values as Array<{ labels: Record<string, string> }>
    ).map((v) => v.labels);
    expect(results).toEqual(['success', 'error', 'requeue', 'requeue_after'].map((result) => ({ controller: 'pods', result })));
    const depth = json.find((m) => m.name === 'workqueue_depth')!.values as Array<{ labels: Record<string, string> }>;
    expect(depth.map((v) => v.labels)).toEqual([
      { name: 'pods', controller: 'pods', priority: '0' },
      { name: 'pods', controller: 'pods', priority: '-100' },
    ]);
  });

  it('[metrics: No panics] controller_runtime_reconcile_panics_total is not exported; everything else we add is under reconcile_loop_', async () => {
    const { json } = await exposed();
    const names = json.map((m) => m.name);
    expect(names).not.toContain('controller_runtime_reconcile_panics_total');
    const upstream = new Set(UPSTREAM.map((m) => m.name));
    const ours = names.filter((n) => !upstream.has(n));
    expect(ours.every((n) => n.startsWith('reconcile_loop_'))).toBe(true);
    expect(ours.sort()).toEqual(
      Object.values(LOOP_METRICS)
        .map((d) => d.name)
        .sort(),
    );
  });

  it('[metrics: One loop per name] a second loop with the same controller name on a registry, or one observer on two loops, is a typed error', () => {
    const registry = new Registry();
    const make = (observer: ReturnType<typeof controllerMetrics<string>>, name = 'same') =>
      new ReconcileLoop<{ id: string }, string>({
        controller: { name },
        source: new InProcessSource('s'),
        keyMap: (_, k) => k,
        reconcile: () => undefined,
        observer,
      });
    const first = controllerMetrics<string>({ registry });
    make(first);
    expect(() => make(controllerMetrics<string>({ registry }))).toThrow(
      expect.objectContaining({ code: 'RL_METRICS_DUPLICATE_CONTROLLER' }),
    );
    expect(() => make(first, 'other')).toThrow(expect.objectContaining({ code: 'RL_METRICS_OBSERVER_REUSED' }));
    // Another registry is another namespace; unregister() frees the name.
    make(controllerMetrics<string>({ registry: new Registry() }));
    first.unregister();
    expect(() => make(controllerMetrics<string>({ registry }))).not.toThrow();
    expect(() => controllerMetrics({ registry: {} as Registry })).toThrow(OptionsError);
    expect(() => controllerMetrics({ controller: '' })).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
  });
});

describe('loop options', () => {
  it('[metrics: Loop observer option] the loop rejects an empty name and a non-object observer with its typed options error', () => {
    const base = { source: new InProcessSource('s'), keyMap: (_: unknown, k: string) => k, reconcile: () => undefined };
    expect(() => new ReconcileLoop({ ...base, controller: { name: '' } })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => new ReconcileLoop({ ...base, observer: 'x' as never })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
  });
});
