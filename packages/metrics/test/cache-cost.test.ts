import { InProcessSource, type SourceEvent, type SourceHealth } from '@reconcile-loop/loop';
import { healthySource, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { metricsHarness, metricValue, thing, type Thing } from './harness.js';

const S = { controller: 'thing-controller', source: 'things' };

describe('cache cost metrics', () => {
  it('[metrics: Cache cost] bytes estimate, memory budget and refused objects per source are read from the source health().cache at scrape time; a source without it exports none', async () => {
    const inner = new InProcessSource<Thing>('things', [thing('a'), thing('b')]);
    let cache: NonNullable<SourceHealth['cache']> = {
      objects: 2,
      bytesEstimate: 1_234,
      budgetBytes: 4_096,
      refused: 0,
      reason: undefined,
    };
    // A reflector-shaped source: its own health() with a cache cost, read without importing the reflector.
    const source = {
      name: 'things',
      open: (signal: AbortSignal): AsyncIterable<SourceEvent<Thing>> => inner.open(signal),
      health: (): SourceHealth => ({
        ...healthySource(),
        cache,
      }),
    };
    const { loop, registry } = metricsHarness({ body: () => undefined, source });
    await loop.start();
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBe(1_234);
    expect(await metricValue(registry, 'reconcile_loop_source_memory_budget_bytes', S)).toBe(4_096);
    expect(await metricValue(registry, 'reconcile_loop_source_refused_objects', S)).toBe(0);
    cache = { ...cache, bytesEstimate: 4_000, refused: 5, reason: 'memory budget full' };
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBe(4_000);
    expect(await metricValue(registry, 'reconcile_loop_source_refused_objects', S)).toBe(5);
    await loop.stop();
  });

  it('[metrics: Cache cost] a source that reports no cache cost (an in-process source) has no cache series', async () => {
    const source = new InProcessSource<Thing>('things', [thing('a')]);
    const { loop, registry } = metricsHarness({ body: () => undefined, source });
    await loop.start();
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_objects_cached', S)).toBe(1);
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBeUndefined();
    expect(await metricValue(registry, 'reconcile_loop_source_refused_objects', S)).toBeUndefined();
    await loop.stop();
  });
});
