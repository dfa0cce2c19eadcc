import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { healthHandler } from '@reconcile-loop/loop';
import { settle } from '@reconcile-loop/test-support';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { metricsHandler } from '../src/index.js';
import { metricsHarness } from './harness.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('metricsHandler', () => {
  it('[metrics: /metrics handler] serves the registry on loopback beside /healthz and /readyz on one port', async () => {
    const { loop, registry } = metricsHarness({ body: () => undefined });
    const url = await listen(metricsHandler(registry, { next: healthHandler(loop) }));
    expect((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(500); // not started yet
    await loop.start();
    await settle();
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(registry.contentType);
    const body = await res.text();
    expect(body).toContain('controller_runtime_reconcile_total{controller="thing-controller",result="success"} 1\n');
    expect(body).toContain('# TYPE workqueue_depth gauge\n');
    expect(body).toContain('reconcile_loop_objects_cached{controller="thing-controller",source="things"} 1\n');
    expect((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
    expect((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
    const head = await fetch(`${url}/metrics`, { method: 'HEAD', signal: AbortSignal.timeout(5_000) });
    expect([head.status, await head.text()]).toEqual([200, '']);
    const post = await fetch(`${url}/metrics`, { method: 'POST', signal: AbortSignal.timeout(5_000) });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    await loop.stop();
  });

  it('[metrics: /metrics handler] without next, other paths are 404; a failing collect is a 500 with its message, never a hung request', async () => {
    const registry = new Registry();
    registry.registerMetric({
      name: 'broken',
      get: () => Promise.reject(new Error('collector exploded')),
    } as unknown as Parameters<Registry['registerMetric']>[0]);
    const url = await listen(metricsHandler(registry));
    expect((await fetch(`${url}/nope`, { signal: AbortSignal.timeout(5_000) })).status).toBe(404);
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('collector exploded');
  });
});
