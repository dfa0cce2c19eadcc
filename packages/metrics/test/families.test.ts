import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterFamily, HistogramFamily } from '../src/families.js';

const def = { name: 'h_seconds', help: 'h', type: 'histogram' as const, labelNames: ['a'], buckets: [0.1, 1] };

describe('families', () => {
  it('[metrics: Cheap hot path] histogram buckets are cumulative with inclusive upper bounds; a value above every bound is only in +Inf; reset and remove work through the registry', async () => {
    const registry = new Registry();
    const h = new HistogramFamily(def);
    registry.registerMetric(h as unknown as Parameters<Registry['registerMetric']>[0]);
    const s = h.series({ a: 'x' });
    for (const v of [0.1, 0.5, 1, 7]) s.observe(v);
    const text = await registry.metrics();
    expect(text).toContain(
      [
        '# HELP h_seconds h',
        '# TYPE h_seconds histogram',
        'h_seconds_bucket{a="x",le="0.1"} 1',
        'h_seconds_bucket{a="x",le="1"} 3',
        'h_seconds_bucket{a="x",le="+Inf"} 4',
        'h_seconds_sum{a="x"} 8.6',
        'h_seconds_count{a="x"} 4',
      ].join('\n'),
    );
    registry.resetMetrics();
    expect(await registry.metrics()).toContain('h_seconds_count{a="x"} 0');
    h.remove({ a: 'x' });
    expect(await registry.metrics()).not.toContain('h_seconds_count');
  });

  it('[metrics: Cheap hot path] a counter series starts at 0, counts each inc, and one label set is one series', async () => {
    const registry = new Registry();
    const c = new CounterFamily({ name: 'c_total', help: 'c', type: 'counter', labelNames: ['a'] });
    registry.registerMetric(c as unknown as Parameters<Registry['registerMetric']>[0]);
    const one = c.series({ a: 'x' });
    const same = c.series({ a: 'x' });
    one.inc();
    same.inc();
    c.series({ a: 'y' });
    expect(await registry.metrics()).toBe('# HELP c_total c\n# TYPE c_total counter\nc_total{a="x"} 2\nc_total{a="y"} 0\n');
  });
});
