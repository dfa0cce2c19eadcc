import { InProcessSource, type SourceEvent, type SourceHealth } from '@reconcile-loop/loop';
import { healthySource, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { metricsHarness, metricValue, thing, type Thing } from './harness.js';

const S = { controller: 'thing-controller', source: 'things' };

describe('list lag metrics', () => {
  it('[metrics: List lag] revisions behind the probe LIST and seconds since the newest probe the stream caught up with are read from the source health().listLag at scrape time, on the loop clock', async () => {
    const inner = new InProcessSource<Thing>('things', [thing('a')]);
    let listLag: SourceHealth['listLag'];
    // A reflector-shaped source: its own health() with a list lag, read without importing the reflector.
    const source = {
      name: 'things',
      open: (signal: AbortSignal): AsyncIterable<SourceEvent<Thing>> => inner.open(signal),
      health: (): SourceHealth => ({ ...healthySource(), listLag }),
    };
    const { loop, registry, clock } = metricsHarness({ body: () => undefined, source });
    await loop.start();
    await settle();
    // No probe answered yet: no series.
    expect(await metricValue(registry, 'reconcile_loop_source_resource_version_lag', S)).toBeUndefined();
    expect(await metricValue(registry, 'reconcile_loop_source_seconds_behind_list', S)).toBeUndefined();

    const t0 = clock.now();
    listLag = { listResourceVersion: '120', probedAt: t0, streamResourceVersion: '100', revisions: 20, caughtUpAt: undefined };
    expect(await metricValue(registry, 'reconcile_loop_source_resource_version_lag', S)).toBe(20);
    expect(await metricValue(registry, 'reconcile_loop_source_seconds_behind_list', S)).toBeUndefined();

    listLag = { ...listLag, streamResourceVersion: '120', revisions: 0, caughtUpAt: t0 };
    clock.advance(7_500);
    expect(await metricValue(registry, 'reconcile_loop_source_resource_version_lag', S)).toBe(0);
    expect(await metricValue(registry, 'reconcile_loop_source_seconds_behind_list', S)).toBe(7.5);

    // Opaque resourceVersions: no revisions series, the staleness bound stays.
    listLag = { ...listLag, revisions: undefined };
    expect(await metricValue(registry, 'reconcile_loop_source_resource_version_lag', S)).toBeUndefined();
    await loop.stop();
  });
});
