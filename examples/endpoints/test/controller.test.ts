/**
 * The endpoints controller on the embedded apiserver over loopback HTTP, run by a manager exactly as
 * `main.ts` wires it (probes and /metrics on a free port, no signals): Ready toggles, a relabel away
 * from a Service created after the pod's last event, a selector change, deletes, a lost watch.
 */
import { isDeepStrictEqual } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { kinds } from '@reconcile-loop/k8s-types';
import { Manager, type ManagerExit } from '@reconcile-loop/manager';
import { controllerMetrics, metricsHandler } from '@reconcile-loop/metrics';
import { within } from '@reconcile-loop/test-support';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { endpointsController, type EndpointsLoop } from '../src/controller.js';

const NS = 'shop';
const services = kinds.Service.resource;
const configMaps = kinds.ConfigMap.resource;
const running: { manager: Manager; exit: Promise<ManagerExit>; server: ApiServer }[] = [];

afterEach(async () => {
  for (const { manager, exit, server } of running.splice(0)) {
    manager.stop();
    expect((await within(exit, 'the manager to stop', 10_000)).code).toBe(0);
    await server.close();
  }
});

async function setup() {
  const server = await startApiServer();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const registry = new Registry();
  const manager = new Manager({
    kubeConfig,
    signals: false,
    probes: { port: 0, host: '127.0.0.1' },
    metrics: metricsHandler(registry),
  });
  const loop = endpointsController(manager, { namespace: NS, observer: controllerMetrics({ registry }) });
  const start = () => {
    running.push({ manager, exit: manager.run(), server });
  };
  return { server, manager, loop, start };
}

/** A pod `name` labelled `labels`, bound, Running and Ready with `ip`. */
function readyPod(server: ApiServer, name: string, labels: Record<string, string>, ip: string): void {
  server.createPod({ metadata: { name, namespace: NS, labels }, spec: { containers: [{ name: 'c', image: 'x' }] } });
  server.kubelet.bind(NS, name, 'node-a');
  server.kubelet.setRunningReady(NS, name, { podIP: ip });
}

const createService = (server: ApiServer, name: string, selector: Record<string, string> | undefined) =>
  server.createObject(services, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: NS },
    spec: { selector, ports: [{ port: 80 }] },
  });

const dataOf = (server: ApiServer, name: string) =>
  server.getObject(configMaps, NS, `${name}-endpoints`)?.['data'] as Record<string, string> | undefined;

/** Polls until the ConfigMap of `service` holds `want` (undefined: no ConfigMap); fails naming what it holds. */
async function converges(
  server: ApiServer,
  service: string,
  want: Record<string, string> | undefined,
  ms = 5_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const data =
      server.getObject(configMaps, NS, `${service}-endpoints`) === undefined ? undefined : (dataOf(server, service) ?? {});
    if (isDeepStrictEqual(data, want)) return;
    if (Date.now() > deadline) throw new Error(`${service}-endpoints is ${JSON.stringify(data)}, wanted ${JSON.stringify(want)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Polls until the loop's ConfigMap cache holds the version of `service`'s ConfigMap the server holds.
 * A write is seen by the server at once but by the cache only when its watch event arrives; until
 * then a reconcile compares against the older version and writes the same data again.
 */
async function cacheCaughtUp(server: ApiServer, loop: EndpointsLoop, service: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const want = server.getObject(configMaps, NS, `${service}-endpoints`)?.metadata.resourceVersion;
    const cached = loop.stores.configmaps.get(`${NS}/${service}-endpoints`)?.metadata.resourceVersion;
    if (cached === want) return;
    if (Date.now() > deadline) throw new Error(`the cache holds ${service}-endpoints at ${cached}, the server at ${want}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function synced(loop: EndpointsLoop): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (loop.state !== 'running') {
    if (Date.now() > deadline) throw new Error(`the loop is ${loop.state}, not running`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('[endpoints: embedded converge] the ConfigMap follows Ready toggles, a selector change and deletes', () => {
  it('keeps web-endpoints equal to the Ready pods the selector picks, with the Service as controller', async () => {
    const { server, manager, loop, start } = await setup();
    readyPod(server, 'web-0', { app: 'web' }, '10.1.0.10');
    readyPod(server, 'web-1', { app: 'web', track: 'canary' }, '10.1.0.11');
    readyPod(server, 'db-0', { app: 'db' }, '10.1.0.20');
    const svc = createService(server, 'web', { app: 'web' });
    start();
    await converges(server, 'web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' });
    const cm = server.getObject(configMaps, NS, 'web-endpoints')!;
    expect(cm.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Service', name: 'web', uid: svc.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);

    server.kubelet.setRunningReady(NS, 'web-0', { ready: false });
    await converges(server, 'web', { 'web-1': '10.1.0.11' });
    server.kubelet.setRunningReady(NS, 'web-0', { ready: true });
    await converges(server, 'web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' });

    // Nothing to write, nothing written: a Service update that changes no endpoint (reconciled, the
    // cached ConfigMap already equal) and a container restart that keeps the address (filtered).
    await cacheCaughtUp(server, loop, 'web');
    server.resetRequestCounts();
    server.updateObject(services, NS, 'web', (s) => void (s.metadata.annotations = { note: 'unrelated' }));
    server.kubelet.bumpRestartCount(NS, 'web-1');
    // The fence: a Service event after the annotation's on the same watch, queued behind it: one write,
    // its own. The restart's pod event may reach the loop after the fence is cached and then maps to it
    // as well (a membership change, never filtered); the creation expectation keeps that to one write.
    createService(server, 'fence', { app: 'web' });
    await converges(server, 'fence', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' });
    expect(server.requestCounts().patch).toBe(1);

    // A selector change on the Service: narrowed to the canary, then moved to another app.
    server.updateObject(
      services,
      NS,
      'web',
      (s) => void ((s['spec'] as { selector: unknown }).selector = { app: 'web', track: 'canary' }),
    );
    await converges(server, 'web', { 'web-1': '10.1.0.11' });
    server.updateObject(services, NS, 'web', (s) => void ((s['spec'] as { selector: unknown }).selector = { app: 'db' }));
    await converges(server, 'web', { 'db-0': '10.1.0.20' });

    server.deletePod(NS, 'db-0', { gracePeriodSeconds: 0 });
    await converges(server, 'web', {});

    // Probes and metrics on the manager's one port.
    const ready = await fetch(`${manager.probesUrl}/readyz?verbose`, { signal: AbortSignal.timeout(5_000) });
    expect(ready.status).toBe(200);
    expect(await ready.text()).toContain('[+]endpoints/source:pods ok');
    const metrics = await (await fetch(`${manager.probesUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    expect(metrics).toMatch(/controller_runtime_reconcile_total\{controller="endpoints",result="success"\} [1-9]/);
    expect(loop.health().ready.ok).toBe(true);
  });

  it('a Service whose selector is removed loses its ConfigMap; one deleted by hand comes back', async () => {
    const { server, start } = await setup();
    readyPod(server, 'web-0', { app: 'web' }, '10.1.0.10');
    createService(server, 'web', { app: 'web' });
    start();
    await converges(server, 'web', { 'web-0': '10.1.0.10' });
    server.deleteObject(configMaps, NS, 'web-endpoints'); // an owned secondary: its delete re-drives the Service
    await converges(server, 'web', { 'web-0': '10.1.0.10' });
    server.updateObject(services, NS, 'web', (s) => void delete (s['spec'] as { selector?: unknown }).selector);
    await converges(server, 'web', undefined);
  });
});

describe('[endpoints: relabel after a later Service] a pod relabelled away from a Service created after its last event', () => {
  it('extra-endpoints becomes {} (the map runs on the old pod against the Services cached now)', async () => {
    const { server, loop, start } = await setup();
    readyPod(server, 'web-2', { app: 'extra' }, '10.1.0.122');
    createService(server, 'web', { app: 'web' });
    start();
    await synced(loop);
    await converges(server, 'web', {});
    // The pod's last event is behind it; the Service arrives now and selects it.
    createService(server, 'extra', { app: 'extra' });
    await converges(server, 'extra', { 'web-2': '10.1.0.122' });
    server.updatePod(NS, 'web-2', (p) => void (p.metadata.labels = { app: 'web' }));
    await converges(server, 'extra', {});
    await converges(server, 'web', { 'web-2': '10.1.0.122' });
  });
});

describe("[endpoints: Service delete] the ConfigMap is the garbage collector's: owner reference, no write after the Service is gone", () => {
  it('the embedded apiserver has no garbage collector: the ConfigMap stays until it is deleted, and is not recreated', async () => {
    const { server, loop, start } = await setup();
    readyPod(server, 'web-0', { app: 'web' }, '10.1.0.10');
    const svc = createService(server, 'web', { app: 'web' });
    start();
    await converges(server, 'web', { 'web-0': '10.1.0.10' });
    server.deleteObject(services, NS, 'web');
    const deadline = Date.now() + 5_000;
    while (loop.store.has(`${NS}/web`)) {
      if (Date.now() > deadline) throw new Error('the Service never left the cache');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Checked: no GC here (the testing README: ownerReferences have no effect) — the reference is what a cluster's GC reads.
    const orphan = server.getObject(configMaps, NS, 'web-endpoints')!;
    expect(orphan.metadata.ownerReferences).toMatchObject([{ kind: 'Service', uid: svc.metadata.uid }]);
    server.deleteObject(configMaps, NS, 'web-endpoints'); // the test plays the garbage collector
    server.kubelet.setRunningReady(NS, 'web-0', { ready: false }); // pod events that would have re-driven the Service
    server.kubelet.setRunningReady(NS, 'web-0', { ready: true });
    // A fence: a Service created after those events converges only once they were handled.
    createService(server, 'after', { app: 'web' });
    await converges(server, 'after', { 'web-0': '10.1.0.10' });
    expect(server.getObject(configMaps, NS, 'web-endpoints')).toBeUndefined();
  });
});

describe('[endpoints: lost watch] changes missed by a stalled, dropped watch past compaction converge at the relist', () => {
  it('a relabel and a delete hidden from the watch both leave web-endpoints', async () => {
    const { server, loop, start } = await setup();
    readyPod(server, 'web-0', { app: 'web' }, '10.1.0.10');
    readyPod(server, 'web-1', { app: 'web' }, '10.1.0.11');
    readyPod(server, 'web-2', { app: 'web' }, '10.1.0.12');
    createService(server, 'web', { app: 'web' });
    start();
    await converges(server, 'web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11', 'web-2': '10.1.0.12' });
    const lists = server.requestCounts().list;
    server.stallWatches(); // the frames below are held back...
    server.updatePod(NS, 'web-1', (p) => void (p.metadata.labels = { app: 'gone' }));
    server.deletePod(NS, 'web-2', { gracePeriodSeconds: 0 });
    server.compact(); // ...the cursors fall out of history...
    server.dropWatches(); // ...and the held-back frames are lost with the connections.
    server.unstallWatches();
    expect(loop.stores.pods.get(`${NS}/web-2`)).toBeDefined(); // the ghost, until the relist
    await converges(server, 'web', { 'web-0': '10.1.0.10' });
    expect(server.requestCounts().list).toBeGreaterThan(lists); // it took a relist
  });
});
