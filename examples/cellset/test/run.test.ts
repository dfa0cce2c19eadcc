/**
 * The controller mode (`pnpm demo --controller`, what a Deployment runs) against the embedded
 * apiserver: it installs the CRD when it may, leads on a Lease, serves /metrics and the probes on one
 * port, prints each decision, and stops cleanly; a CRD it may not install is a clear exit 1.
 */
import { startApiServer } from '@reconcile-loop/testing';
import { describe, expect, it } from 'vitest';
import { runController } from '../demo/run.js';
import { NS, cellSet, get, onCleanup, ref, until } from './helpers.js';

describe('the controller mode', () => {
  it('[cellset: controller mode] installs the missing CRD, leads, serves /metrics, /healthz and /readyz, prints its decisions, and exits 0 on SIGTERM', async () => {
    const server = await startApiServer();
    onCleanup(() => server.close());
    const out: string[] = [];
    const errors: string[] = [];
    let url = '';
    const stop = new AbortController();
    const running = runController({
      kubeconfigYaml: server.kubeconfig(),
      namespace: NS,
      metricsPort: 0,
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      signal: stop.signal,
      print: (l) => out.push(l),
      printError: (l) => errors.push(l),
      onListening: (u) => (url = u),
    });
    try {
      await until(
        'synced and leading',
        () => out.some((l) => l.includes('synced CellSets and pods')) && out.some((l) => l.includes('leading as')),
      );
      expect(out).toContain('cellset-controller: the CellSet CRD is installed now');
      server.createObject(ref, cellSet('web', 2));
      await until('two pods', () => out.filter((l) => l.startsWith('event CreatedPod default/web')).length === 2);
      await until(
        'status',
        () => (server.getObject(ref, NS, 'web')?.['status'] as { replicas?: number } | undefined)?.replicas === 2,
      );
      const metrics = await get(`${url}/metrics`);
      expect(metrics.body).toMatch(/^controller_runtime_reconcile_total\{controller="cellset",result="success"\} [1-9]\d*$/m);
      expect(metrics.body).toContain('cellset_pods_created_total{namespace="default",cellset="web"} 2');
      expect((await get(`${url}/readyz`)).status).toBe(200);
      expect((await get(`${url}/healthz`)).status).toBe(200);
    } finally {
      stop.abort();
    }
    expect(await running).toBe(0);
    expect(out.at(-1)).toBe('cellset-controller: stopped cleanly');
    expect(errors).toEqual([]);
  });

  it("[cellset: workers and write limits] --workers sets the reconciles at once and --write-qps/--write-burst the writes' token bucket", async () => {
    const server = await startApiServer();
    onCleanup(() => server.close());
    const out: string[] = [];
    let url = '';
    const stop = new AbortController();
    const running = runController({
      kubeconfigYaml: server.kubeconfig(),
      namespace: NS,
      metricsPort: 0,
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      workers: 3,
      writeQps: 4,
      writeBurst: 1,
      signal: stop.signal,
      print: (l) => out.push(l),
      printError: () => {},
      onListening: (u) => (url = u),
    });
    try {
      await until('synced and leading', () => out.some((l) => l.includes('leading as')) && out.some((l) => l.includes('synced')));
      server.createObject(ref, cellSet('web', 3));
      await until('three pods', () => out.filter((l) => l.startsWith('event CreatedPod default/web')).length === 3);
      const metrics = (await get(`${url}/metrics`)).body;
      expect(metrics).toMatch(/^controller_runtime_max_concurrent_reconciles\{controller="cellset"\} 3$/m);
      // A bucket of one token refilled 4 times a second: of the finalizer write and three creates at
      // least two waited 250 ms or more for a token (a token bucket never serves earlier).
      const waits = (le: string) =>
        Number(
          new RegExp(
            `^rest_client_rate_limiter_duration_seconds_bucket\\{[^}]*lane="default"[^}]*le="${le}"[^}]*\\} (\\d+)$`,
            'm',
          ).exec(metrics)?.[1] ?? Number.NaN,
        );
      const all = waits('\\+Inf');
      expect(all).toBeGreaterThanOrEqual(4);
      expect(all - waits('0.1')).toBeGreaterThanOrEqual(2);
    } finally {
      stop.abort();
    }
    expect(await running).toBe(0);
  });

  it('[cellset: controller mode] a missing CRD this identity may not install is a clear error and exit 1, before any loop starts', async () => {
    const server = await startApiServer();
    onCleanup(() => server.close());
    server.failNext({ verb: 'create', status: 403 });
    const errors: string[] = [];
    const code = await runController({
      kubeconfigYaml: server.kubeconfig(),
      namespace: NS,
      signal: new AbortController().signal,
      print: () => {},
      printError: (l) => errors.push(l),
    });
    expect(code).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^cellset-controller: the CellSet CRD \(cellsets\.cells\.reconcile-loop\.dev\) is not installed, and this identity may not install it \(403: .*\); install it as a cluster admin: kubectl apply -f examples\/cellset\/deploy\/crd\.yaml$/,
    );
    expect(server.requestCounts().watch).toBe(0);
  });
});
