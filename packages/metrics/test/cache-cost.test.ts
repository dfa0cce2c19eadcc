import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { metricsHarness, metricValue, thing } from './harness.js';

const S = { controller: 'thing-controller', source: 'things' };

describe('cache cost metrics', () => {
  it('[metrics: Cache cost] bytes estimate, memory budget and refused objects per source are the loop’s count of its store, read at scrape time', async () => {
    const { loop, registry, source } = metricsHarness({ body: () => undefined, things: [thing('a')] });
    await loop.start();
    await settle();
    const one = loop.health().sources.things!.cache.bytesEstimate;
    expect(one).toBeGreaterThan(0);
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBe(one);
    expect(await metricValue(registry, 'reconcile_loop_source_refused_objects', S)).toBe(0);
    // No budget, no budget series.
    expect(await metricValue(registry, 'reconcile_loop_source_memory_budget_bytes', S)).toBeUndefined();
    source.upsert(...thing('b'));
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBe(2 * one);
    await loop.stop();
  });

  it('[metrics: Cache cost] with memoryBudgetBytes the budget is exported and an object the budget refuses is counted, the bytes unchanged', async () => {
    const probe = metricsHarness({ body: () => undefined, things: [thing('a')] });
    await probe.loop.start();
    const one = probe.loop.health().sources.things!.cache.bytesEstimate;
    await probe.loop.stop();

    const budget = Math.floor(one * 1.5);
    const { loop, registry, source } = metricsHarness({ body: () => undefined, things: [thing('a')], memoryBudgetBytes: budget });
    await loop.start();
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_source_memory_budget_bytes', S)).toBe(budget);
    source.upsert(...thing('b'));
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_source_refused_objects', S)).toBe(1);
    expect(await metricValue(registry, 'reconcile_loop_source_bytes_estimate', S)).toBe(one);
    expect(await metricValue(registry, 'reconcile_loop_objects_cached', S)).toBe(1);
    await loop.stop();
  });
});
