import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { rateLimiterMetrics } from '../src/index.js';

describe("[metrics: Rate limiter wait] client-go's rest_client_rate_limiter_duration_seconds, by verb and lane", () => {
  it('observes each wait in seconds into client-go buckets; one histogram per registry, shared by every client on it', async () => {
    const registry = new Registry();
    const observe = rateLimiterMetrics({ registry });
    expect(rateLimiterMetrics({ registry })).toBe(observe);
    observe(0, { verb: 'update', lane: 'leader-election' });
    observe(0, { verb: 'create', lane: 'default' });
    observe(1_800, { verb: 'create', lane: 'default' });
    const text = await registry.metrics();
    expect(text).toContain('# TYPE rest_client_rate_limiter_duration_seconds histogram');
    expect(text).toContain('rest_client_rate_limiter_duration_seconds_bucket{verb="create",lane="default",le="0.005"} 1');
    expect(text).toContain('rest_client_rate_limiter_duration_seconds_bucket{verb="create",lane="default",le="2"} 2');
    expect(text).toContain('rest_client_rate_limiter_duration_seconds_sum{verb="create",lane="default"} 1.8');
    expect(text).toContain('rest_client_rate_limiter_duration_seconds_count{verb="update",lane="leader-election"} 1');
  });
});
