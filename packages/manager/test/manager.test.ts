/** The manager over the embedded apiserver (real HTTP on loopback): sharing, health, shutdown, exit codes. */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { objectSchema, podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { KubeClient, type RateLimiter } from '@reconcile-loop/kube-client';
import { LoopStoppedError } from '@reconcile-loop/loop';
import { OptionsError } from '@reconcile-loop/primitives';
import { httpGet, recordingLogger, within } from '@reconcile-loop/test-support';
import type { ApiServer } from '@reconcile-loop/testing';
import { Manager, ManagerAlreadyStartedError, type ManagerExit } from '../src/index.js';
import { apiServer, FAST_LEASE, getJson, until } from './helpers.js';

const servers: ApiServer[] = [];
const managers: { manager: Manager; running: Promise<ManagerExit> }[] = [];
afterEach(async () => {
  for (const { manager, running } of managers.splice(0)) {
    manager.stop();
    await within(running, 'the manager to stop', 10_000);
  }
  for (const server of servers.splice(0)) await server.close();
});

async function setup(): Promise<Awaited<ReturnType<typeof apiServer>>> {
  const s = await apiServer();
  servers.push(s.server);
  s.server.seedPods(3, { namespace: 'ml', labels: { pool: 'engines', team: 'red' }, namePrefix: 'engine' });
  s.server.seedPods(2, { namespace: 'ml', labels: { pool: 'trainers', team: 'blue' }, namePrefix: 'trainer' });
  return s;
}

function start(manager: Manager): Promise<ManagerExit> {
  const running = manager.run();
  managers.push({ manager, running });
  return running;
}

/** Two controllers over the same pods: one keyed by pool, one by team; both record what they reconciled. */
function twoControllers(manager: Manager, selector = 'pool') {
  const seen = { pools: new Map<string, number>(), teams: new Map<string, number>() };
  const pools = manager.controller<Pod, string>({
    controller: { name: 'by-pool' },
    source: manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: selector, name: 'pods' }),
    keyMap: (pod) => pod.metadata.labels['pool'],
    reconcile: (pool, { members }) => void seen.pools.set(pool, members.size),
  });
  const teams = manager.controller<Pod, string>({
    controller: { name: 'by-team' },
    source: manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: selector, name: 'pods' }),
    keyMap: (pod) => pod.metadata.labels['team'],
    reconcile: (team, { members }) => void seen.teams.set(team, members.size),
  });
  return { pools, teams, seen };
}

describe('[manager: One watch per kind] two controllers watching pods open ONE LIST and ONE WATCH', () => {
  it('both sync from one reflector, both see a new pod, and the watch closes with the last controller', async () => {
    const { server, kubeConfig } = await setup();
    const manager = new Manager({ kubeConfig, signals: false });
    const { pools, teams, seen } = twoControllers(manager);
    server.resetRequestCounts();
    const running = start(manager);
    await until(() => pools.synced && teams.synced, 'both controllers to sync');
    await server.waitForWatches(1);
    await until(() => seen.pools.get('engines') === 3 && seen.teams.get('blue') === 2, 'both to reconcile the listing');
    expect(server.requestCounts().list).toBe(1);
    expect(server.requestCounts().watch).toBe(1);
    expect(server.openWatchCount).toBe(1);
    server.createPod({ metadata: { name: 'engine-x', namespace: 'ml', labels: { pool: 'engines', team: 'blue' } } });
    await until(() => seen.pools.get('engines') === 4 && seen.teams.get('blue') === 3, 'both to see the new pod');
    expect(pools.store.get('ml/engine-x')).toBe(teams.store.get('ml/engine-x')); // one object for both stores
    expect(server.requestCounts().watch).toBe(1);
    manager.stop();
    expect(await within(running, 'run() to resolve', 10_000)).toEqual({ code: 0, error: undefined, controller: undefined });
    await server.waitForWatches((open) => open === 0);
  });

  it("one pod watch serves one controller's primary source and another's secondary (Services selecting pods)", async () => {
    const { server, kubeConfig } = await setup();
    const manager = new Manager({ kubeConfig, signals: false });
    const serviceResource = { group: '', version: 'v1', plural: 'services', kind: 'Service' };
    const serviceSchema = objectSchema({ spec: z.object({ selector: z.record(z.string(), z.string()).optional() }).optional() });
    const pods = () => manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'pool' });
    const endpoints = new Map<string, number>();
    const counted = manager.controller<Pod, string>({
      controller: { name: 'pools' },
      source: pods(),
      keyMap: (pod) => pod.metadata.labels['pool'],
      reconcile: () => {},
    });
    const services = manager.controller({
      controller: { name: 'endpoints' },
      source: manager.source({ resource: serviceResource, schema: serviceSchema, namespace: 'ml' }),
      keyMap: (_service, key) => key,
      secondary: {
        pods: {
          source: pods(),
          // A Service's key is its parent key: the Services whose selector matches the pod.
          keyMap: (pod: Pod, _key: string, caches) => [
            ...caches.store
              .list((service) => {
                const selector = service.spec?.selector;
                return selector !== undefined && Object.entries(selector).every(([k, v]) => pod.metadata.labels[k] === v);
              })
              .keys(),
          ],
        },
      },
      reconcile: (key, { parent, stores }) => {
        const selector = parent?.spec?.selector;
        if (selector === undefined) return;
        const selected = stores.pods.list((pod) => Object.entries(selector).every(([k, v]) => pod.metadata.labels[k] === v));
        endpoints.set(key, selected.size);
      },
    });
    server.resetRequestCounts();
    const running = start(manager);
    await until(() => counted.synced && services.synced, 'both controllers to sync');
    await manager.client
      .resource(serviceResource)
      .inNamespace('ml')
      .create({ metadata: { name: 'web' }, spec: { selector: { pool: 'engines' }, ports: [{ port: 80 }] } });
    await until(() => endpoints.get('ml/web') === 3, 'the Service to see its three pods');
    server.createPod({ metadata: { name: 'engine-y', namespace: 'ml', labels: { pool: 'engines' } } });
    await until(() => endpoints.get('ml/web') === 4, 'the Service to see the new pod');
    expect(server.requestCounts().list).toBe(2); // the Services and the pods, once each
    expect(server.requestCounts().watch).toBe(2);
    manager.stop();
    expect((await within(running, 'run() to resolve', 10_000)).code).toBe(0);
  });

  it('another selector or another view is another watch; options that differ for one shared watch are refused', async () => {
    const { server, kubeConfig } = await setup();
    const manager = new Manager({ kubeConfig, signals: false });
    const a = manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'pool' });
    manager.source({
      resource: podResource,
      schema: podSchema,
      namespace: 'ml',
      labelSelector: 'pool',
      listTimeoutMs: undefined,
    });
    expect(() =>
      manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'pool', listTimeoutMs: 5_000 }),
    ).toThrow(/listTimeoutMs differs/);
    const b = manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'team' });
    manager.controller<Pod, string>({
      controller: { name: 'a' },
      source: a,
      keyMap: (p) => p.metadata.name,
      reconcile: () => {},
    });
    manager.controller<Pod, string>({
      controller: { name: 'b' },
      source: b,
      keyMap: (p) => p.metadata.name,
      reconcile: () => {},
    });
    server.resetRequestCounts();
    const running = start(manager);
    await server.waitForWatches(2);
    expect(server.requestCounts().watch).toBe(2);
    manager.stop();
    expect((await within(running, 'run() to resolve', 10_000)).code).toBe(0);
  });
});

describe('[manager: Composed health] /healthz and /readyz cover every controller, every source and the elector; /metrics on the same port', () => {
  it('a leader says leading, a standby says standby (and is ready); a stopped leader releases the Lease and the standby takes over', async () => {
    const { server, kubeConfig } = await setup();
    const replica = (identity: string) => {
      const manager = new Manager({
        kubeConfig,
        signals: false,
        probes: { port: 0, host: '127.0.0.1' },
        metrics: (_req, res) => void res.end(`replica_info{identity="${identity}"} 1\n`),
        leaderElection: { namespace: 'ml', name: 'pool-tracker', identity, ...FAST_LEASE },
      });
      twoControllers(manager);
      return manager;
    };
    const a = replica('a');
    const runningA = start(a);
    await until(() => a.elector!.isLeader(), 'replica a to lead');
    const b = replica('b');
    const runningB = start(b);
    await until(() => b.health().ready.ok, 'replica b to be ready');

    let res = await httpGet(`${a.probesUrl}/readyz?verbose`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('[+]by-pool/started ok\n[+]by-pool/source:pods ok\n');
    expect(res.body).toContain('[+]by-team/source:pods ok\n');
    expect(res.body).toContain('[+]leader ok: leading (a)\n');
    expect(res.body.endsWith('readyz check passed\n')).toBe(true);
    res = await httpGet(`${b.probesUrl}/readyz?verbose`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('[+]leader ok: standby: caches warm, waiting for leadership (held by a)\n');
    expect(await httpGet(`${b.probesUrl}/readyz`)).toMatchObject({ status: 200, body: 'ok' });
    expect(await httpGet(`${a.probesUrl}/healthz?verbose`)).toMatchObject({ status: 200 });
    expect((await httpGet(`${a.probesUrl}/healthz?verbose`)).body).toContain('[+]leader ok\n');
    expect((await httpGet(`${a.probesUrl}/readyz/by-team/source:pods`)).status).toBe(200);
    expect((await httpGet(`${a.probesUrl}/metrics`)).body).toBe('replica_info{identity="a"} 1\n');

    a.stop();
    expect((await within(runningA, 'replica a to stop', 10_000)).code).toBe(0);
    const lease = await getJson(`${server.url}/apis/coordination.k8s.io/v1/namespaces/ml/leases/pool-tracker`);
    expect((lease['spec'] as { holderIdentity?: string }).holderIdentity ?? '').not.toBe('a');
    await until(() => b.elector!.isLeader(), 'replica b to take over', 5_000);
    b.stop();
    expect((await within(runningB, 'replica b to stop', 10_000)).code).toBe(0);
  });

  it('before the caches sync /readyz is 500 naming the source, /healthz stays 200', async () => {
    const { server, kubeConfig } = await setup();
    server.failNext({ verb: 'list', status: 403, times: 100 });
    const manager = new Manager({ kubeConfig, signals: false, probes: { port: 0, host: '127.0.0.1' } });
    twoControllers(manager);
    start(manager);
    await server.waitForRequests('list', 1);
    await until(() => manager.probesUrl !== undefined, 'the probe server');
    const res = await httpGet(`${manager.probesUrl}/readyz?verbose`);
    expect(res.status).toBe(500);
    expect(res.body).toContain('[-]by-pool/source:pods failed: not synced yet');
    expect((await httpGet(`${manager.probesUrl}/healthz`)).status).toBe(200);
  });
});

describe('[manager: Shutdown and exit codes] one bounded shutdown; the code says whether the run did its job', () => {
  it('a stop before the caches synced (a hung LIST) ends promptly with code 1 and the LoopStoppedError', async () => {
    const { server, kubeConfig } = await setup();
    server.failNext({ verb: 'list', status: 'hang' });
    const manager = new Manager({ kubeConfig, signals: false });
    twoControllers(manager);
    const running = start(manager);
    await server.waitForRequests('list', 1);
    manager.stop();
    const exit = await within(running, 'run() to resolve after a stop during a hung LIST', 5_000);
    expect(exit.code).toBe(1);
    expect(exit.error).toBeInstanceOf(LoopStoppedError);
    expect(['by-pool', 'by-team']).toContain(exit.controller);
  });

  it('a permanent source failure (a selector the apiserver rejects) stops every controller: code 1 with its error', async () => {
    const { kubeConfig } = await setup();
    const manager = new Manager({ kubeConfig, signals: false });
    twoControllers(manager, 'pool in (engines');
    const exit = await within(start(manager), 'run() to resolve', 10_000);
    expect(exit.code).toBe(1);
    expect((exit.error as { code?: string }).code).toBe('RL_REFLECTOR_LIST_REJECTED');
  });

  it('SIGTERM stops run(): the in-flight reconcile ends first, then the Lease is released; the Events are written by the time run() resolves; the handlers are removed', async () => {
    const { server, kubeConfig } = await setup();
    const logger = recordingLogger();
    const manager = new Manager({
      kubeConfig,
      logger,
      leaderElection: { namespace: 'ml', name: 'lock', identity: 'me', ...FAST_LEASE },
    });
    const events = manager.events({ reportingController: 'example.com/pool-tracker' });
    let inFlight = false;
    manager.controller<Pod, string>({
      source: manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'pool' }),
      keyMap: (pod) => pod.metadata.labels['pool'],
      reconcile: async (pool, { signal }) => {
        events.event(
          { apiVersion: 'v1', kind: 'Pod', name: 'engine-0', namespace: 'ml' },
          { type: 'Normal', reason: 'Seen', action: 'Track', note: pool },
        );
        inFlight = true;
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        logger.info({}, 'reconcile ended');
      },
    });
    const before = process.listenerCount('SIGTERM');
    const running = start(manager);
    await until(() => inFlight, 'a reconcile in flight');
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    process.emit('SIGTERM', 'SIGTERM');
    process.emit('SIGTERM', 'SIGTERM'); // a repeat (a wrapper relaying the group's signal) changes nothing
    expect((await within(running, 'run() to resolve after SIGTERM', 10_000)).code).toBe(0);
    expect(process.listenerCount('SIGTERM')).toBe(before);
    const order = logger.entries.map((e) => e.message);
    expect(order.indexOf('reconcile ended')).toBeGreaterThan(-1);
    expect(order.indexOf('released the leader lease')).toBeGreaterThan(order.indexOf('reconcile ended'));
    const lease = await getJson(`${server.url}/apis/coordination.k8s.io/v1/namespaces/ml/leases/lock`);
    expect((lease['spec'] as { holderIdentity?: string }).holderIdentity ?? '').toBe('');
    const written = await getJson(`${server.url}/apis/events.k8s.io/v1/namespaces/ml/events`);
    expect((written['items'] as unknown[]).length).toBeGreaterThan(0);
  });

  it('a reconcile that ignores its signal is abandoned at the grace: code 1 with a ShutdownTimeoutError naming it', async () => {
    const { kubeConfig } = await setup();
    const manager = new Manager({ kubeConfig, signals: false, shutdown: { timeoutMs: 200 } });
    let inFlight = false;
    manager.controller<Pod, string>({
      controller: { name: 'stuck' },
      source: manager.source({ resource: podResource, schema: podSchema, namespace: 'ml', labelSelector: 'pool' }),
      keyMap: (pod) => pod.metadata.labels['pool'],
      reconcile: () => {
        inFlight = true;
        return new Promise<void>(() => {});
      },
    });
    const running = start(manager);
    await until(() => inFlight, 'a reconcile in flight');
    manager.stop();
    const exit = await within(running, 'run() to resolve after the grace', 5_000);
    expect(exit.code).toBe(1);
    expect(exit.error).toMatchObject({ code: 'RL_MANAGER_SHUTDOWN_TIMEOUT' });
    expect((exit.error as { pending: string[] }).pending.some((p) => p.startsWith('stuck: reconcile of '))).toBe(true);
  });
});

describe('[manager: Lease lane] no Lease request waits on the write limiter', () => {
  it('with 1,000 writes queued behind a write limiter that never grants, the manager still acquires and renews its Lease', async () => {
    const { server, kubeConfig } = await setup();
    let writeWaits = 0;
    const never: RateLimiter = {
      wait: (signal) => {
        writeWaits++;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      },
    };
    const lanes: string[] = [];
    const client = new KubeClient({ kubeConfig, rateLimit: never, onRateLimitWait: (_ms, wait) => lanes.push(wait.lane) });
    const manager = new Manager({
      client,
      signals: false,
      leaderElection: { namespace: 'ml', name: 'lock', identity: 'me', ...FAST_LEASE },
    });
    const writes = new AbortController();
    const pods = client.resource(podResource).inNamespace('ml');
    const queued = Array.from({ length: 1_000 }, (_, i) =>
      pods
        .create({ metadata: { name: `w-${i}` }, spec: { containers: [{ name: 'c', image: 'i' }] } }, { signal: writes.signal })
        .catch(() => {}),
    );
    expect(writeWaits).toBe(1_000); // every write is queued on the shared limiter
    server.resetRequestCounts();
    const running = start(manager);
    await until(() => manager.elector!.isLeader(), 'the Lease acquired past 1,000 queued writes');
    await server.waitForRequests('update', 3); // acquired, then renewed: the Lease writes reach the server
    expect(writeWaits).toBe(1_000); // not one Lease request asked the write limiter
    expect(lanes.length).toBeGreaterThan(0);
    expect(new Set(lanes)).toEqual(new Set(['leader-election'])); // every limiter wait reported was the Lease lane's
    expect(server.requestCounts().create).toBeLessThanOrEqual(1); // the Lease's own create at most: no pod write went
    writes.abort();
    await Promise.all(queued);
    manager.stop();
    expect((await within(running, 'run() to resolve', 10_000)).code).toBe(0);
  });
});

describe('[manager: Options] a manager refuses what it cannot run', () => {
  it('bad options, duplicate controllers, a second leadership and changes after run() are typed errors', async () => {
    const { kubeConfig } = await setup();
    expect(() => new Manager({} as never)).toThrow(OptionsError);
    expect(() => new Manager({ kubeConfig, client: new KubeClient({ kubeConfig }) })).toThrow(
      /exactly one of kubeConfig and client/,
    );
    expect(() => new Manager({ kubeConfig, probs: {} } as never)).toThrow(/probs is not an option/);
    expect(() => new Manager({ kubeConfig, probes: { port: -1 } })).toThrow(/probes.port/);
    expect(() => new Manager({ kubeConfig, metrics: () => {} })).toThrow(/give probes too/);
    expect(() => new Manager({ kubeConfig, leaderElection: { namespace: 'ml' } as never })).toThrow(/leaderElection.name/);
    const manager = new Manager({ kubeConfig, signals: false, leaderElection: { namespace: 'ml', name: 'l' } });
    const source = manager.source({ resource: podResource, schema: podSchema, namespace: 'ml' });
    manager.controller<Pod, string>({ source, keyMap: (p) => p.metadata.name, reconcile: () => {} });
    expect(() => manager.controller<Pod, string>({ source, keyMap: (p) => p.metadata.name, reconcile: () => {} })).toThrow(
      /a controller named pods exists already/,
    );
    expect(() =>
      manager.controller<Pod, string>({
        controller: { name: 'other' },
        source,
        keyMap: (p) => p.metadata.name,
        reconcile: () => {},
        leadership: { gate: manager.elector! },
      }),
    ).toThrow(/leadership is the manager's/);
    const running = start(manager);
    await expect(manager.run()).rejects.toBeInstanceOf(ManagerAlreadyStartedError);
    expect(() => manager.source({ resource: podResource, schema: podSchema })).toThrow(ManagerAlreadyStartedError);
    manager.stop();
    await within(running, 'run() to resolve', 10_000);
  });
});
