import { httpGet, serveOnLoopback } from '@reconcile-loop/test-support';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { objectSchema, type KubernetesObjectView, type Pod } from '@reconcile-loop/k8s-types';
import { ReconcileLoop, healthHandler, type LoopHealth, type ObjectKey } from '@reconcile-loop/loop';
import { kubeReflector, podReflector } from '@reconcile-loop/reflector';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  eventually,
  forbiddenListNamespace,
  podManifest,
  poisonCrd,
  storeMatchesFreshList,
  type ListedObject,
} from '../src/index.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';

// Fail loudly, never stall — a whole ReconcileLoop against the real kube-apiserver, its probes
// served by healthHandler on a real node:http port: a LIST forbidden by a real RBAC Role (start()
// rejects after its sync timeout with the 403 Status as cause, /readyz red meanwhile; granting the
// verb heals a new loop), and a CRD poison object (quarantined and listed in health, probes green,
// every other object reconciled). The reflector-level twins are in failures.test.ts.

const availability = e2eAvailability();

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

type Probe = (path: string) => Promise<{ status: number; body: string }>;

/** Serves `healthHandler(loop)` on a loopback port, as a Deployment's probes would reach it. */
async function serveProbes(loop: { health(): LoopHealth<string> }): Promise<Probe> {
  const server = await serveOnLoopback(healthHandler(loop));
  cleanups.push(() => server.close());
  return async (path) => {
    const { status, body } = await httpGet(`${server.url}${path}`);
    return { status, body };
  };
}

/** A loop keyed by the `pool` label that records every reconcile; stopped at teardown. */
function recordingLoop<T extends KubernetesObjectView & { metadata: { labels: Record<string, string> } }>(
  source: ConstructorParameters<typeof ReconcileLoop<T, string>>[0]['source'],
  syncTimeoutMs?: number,
) {
  const reconciles: Array<{ pool: string; members: ReadonlyMap<ObjectKey, T> }> = [];
  const loop = new ReconcileLoop<T, string>({
    source,
    keyMap: (object) => object.metadata.labels['pool'],
    reconcile: async (pool, { members }) => void reconciles.push({ pool, members }),
    sources: { syncTimeoutMs },
    health: { sourceFailingMs: 1 }, // a failing source is red at once
  });
  cleanups.push(async () => void (await loop.stop()));
  /** The latest reconcile of `pool`, once it satisfies `test`. */
  const reconciled = (pool: string, test: (members: ReadonlyMap<ObjectKey, T>) => boolean, what: string) =>
    eventually(
      what,
      () => {
        const latest = reconciles.filter((r) => r.pool === pool).at(-1);
        return latest !== undefined && test(latest.members) ? latest.members : undefined;
      },
      () => ({
        reconciles: reconciles.map((r) => ({ pool: r.pool, keys: [...r.members.keys()] })),
        health: String(
          loop
            .health()
            .ready.checks.map((c) => c.reason)
            .join('; '),
        ),
      }),
    );
  return { loop, reconciled };
}

/** The loop's store holds exactly what `list()` returns (keys and resourceVersions), minus `quarantined`. */
async function expectStoreEqualsFreshList(
  loop: { store: { snapshot(): ReadonlyMap<ObjectKey, KubernetesObjectView> } },
  list: () => Promise<ListedObject[]>,
  quarantined: readonly string[] = [],
): Promise<void> {
  const { listed, cached } = await storeMatchesFreshList(
    () => Object.fromEntries([...loop.store.snapshot()].map(([key, o]) => [key, o.metadata.resourceVersion ?? ''])),
    list,
    () => quarantined,
  );
  expect(cached).toEqual(listed);
}

const keysOf = (members: ReadonlyMap<ObjectKey, unknown>): string[] => [...members.keys()].sort();

describe.skipIf(!availability.run)('ReconcileLoop failures against the real kube-apiserver', () => {
  const environment = useE2eEnvironment(availability);
  const admin = (): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromString(environment().endpoint.kubeconfig);
    return kc;
  };

  it('[loop: probes] a loop whose LIST a real RBAC Role forbids: /readyz is 500 with the 403 Status, start() rejects after its sync timeout with the 403 as cause, nothing is left running; granted, a new loop syncs to a fresh LIST', async () => {
    const kc = admin();
    const core = kc.makeApiClient(CoreV1Api);
    const { namespace: ns, kubeConfig: watcher, grantList } = await forbiddenListNamespace(kc, 'rbac-loop');
    for (const name of ['engine-0', 'engine-1'])
      await core.createNamespacedPod({ namespace: ns, body: podManifest(name, { labels: { pool: 'engines' } }) });
    const source = () =>
      podReflector({ kubeConfig: watcher, namespace: ns, labelSelector: 'pool', retry: { initialMs: 100, maxMs: 400 } });

    const { loop } = recordingLoop<Pod>(source(), 3_000);
    const probe = await serveProbes(loop);
    const starting = loop.start().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const forbidden = new RegExp(
      `\\[-\\]source:pods failed: not synced yet; failing for .*403 Forbidden: .*system:serviceaccount:${ns}:watcher.* cannot list resource "pods"`,
    );
    const red = await eventually(
      '/readyz red with the 403',
      async () => {
        const readyz = await probe('/readyz?verbose');
        return readyz.status === 500 && forbidden.test(readyz.body) ? readyz : undefined;
      },
      () => loop.health().ready,
      10_000,
    );
    expect(red.body).toContain('readyz check failed');
    expect((await probe('/healthz')).status).toBe(200); // retrying is not wedged

    const error = await starting;
    expect(error).toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT', sourceName: 'pods', timeoutMs: 3_000 });
    expect((error as Error).cause).toMatchObject({
      statusCode: 403,
      status: { code: 403, reason: 'Forbidden' },
      verb: 'list',
    });
    expect((error as Error).message).toContain('cannot list resource "pods"');
    expect(loop.state).toBe('stopped');
    expect(loop.health().sources['pods']?.lastError).toMatchObject({ statusCode: 403 });
    const after = await probe('/readyz?verbose');
    expect(after.status).toBe(500);
    expect(after.body).toContain('[-]started failed: loop is stopped');

    await grantList(); // the RBAC fix; a restarted controller (a new loop) then syncs
    const healed = recordingLoop<Pod>(source(), 30_000);
    const healedProbe = await serveProbes(healed.loop);
    await healed.loop.start();
    expect(keysOf(await healed.reconciled('engines', (m) => m.size === 2, 'the engines'))).toEqual([
      `${ns}/engine-0`,
      `${ns}/engine-1`,
    ]);
    expect(await healedProbe('/readyz')).toEqual({ status: 200, body: 'ok' });
    await core.createNamespacedPod({ namespace: ns, body: podManifest('engine-2', { labels: { pool: 'engines' } }) });
    await healed.reconciled('engines', (m) => m.has(`${ns}/engine-2`), 'engine-2 on the watch');
    await expectStoreEqualsFreshList(
      healed.loop,
      async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'pool' })).items,
    );
  });

  it('[loop: health] a CRD poison object (spec.replicas "two" admitted by int-or-string): quarantined and listed in loop.health(), /readyz and /healthz stay 200, every other object is reconciled, fixed it is reconciled; the store equals a fresh LIST minus the quarantine', async () => {
    const crd = await poisonCrd(admin(), 'crd-loop');
    cleanups.push(() => crd.dispose());
    const ns = crd.namespace;
    await crd.create('cell-0', 1, { pool: 'cells' });
    const bad = await crd.create('cell-bad', 'two', { pool: 'cells' });
    await crd.create('other-0', 1, { pool: 'others' });
    const schema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
    const resource = { group: crd.group, version: crd.version, plural: crd.plural };
    const reflector = kubeReflector({
      name: 'cells',
      kubeConfig: admin(),
      resource,
      schema,
      namespace: ns,
      retry: { initialMs: 100, maxMs: 400 },
    });
    const { loop, reconciled } = recordingLoop<z.output<typeof schema>>(reflector, 30_000);
    const probe = await serveProbes(loop);
    const quarantined = () => (loop.health().sources['cells']?.quarantined ?? []).map((q) => q.key);

    await loop.start(); // the poison object does not hold back the sync
    expect(keysOf(await reconciled('cells', () => true, 'the cells'))).toEqual([`${ns}/cell-0`]);
    expect(loop.health().sources['cells']?.quarantined).toEqual([
      expect.objectContaining({
        key: `${ns}/cell-bad`,
        resourceVersion: bad.metadata?.resourceVersion,
        issues: [expect.stringMatching(/^spec\.replicas: /)],
      }),
    ]);
    expect(loop.health().ready.ok).toBe(true);
    expect(await probe('/readyz')).toEqual({ status: 200, body: 'ok' });
    expect(await probe('/healthz')).toEqual({ status: 200, body: 'ok' });

    await crd.create('cell-1', 2, { pool: 'cells' }); // others keep flowing
    await crd.setReplicas('other-0', 5);
    await reconciled('cells', (m) => m.has(`${ns}/cell-1`), 'cell-1 reconciled');
    await reconciled('others', (m) => m.get(`${ns}/other-0`)?.spec.replicas === 5, 'other-0 reconciled');
    await crd.setReplicas('cell-bad', 3); // fixed: it enters the store and is reconciled
    await reconciled('cells', (m) => m.get(`${ns}/cell-bad`)?.spec.replicas === 3, 'cell-bad fixed');
    expect(quarantined()).toEqual([]);
    await crd.setReplicas('cell-1', 'x'); // a cached object turns poison: quarantined, its last good version stays cached
    await crd.create('cell-2', 1, { pool: 'cells' });
    await reconciled('cells', (m) => m.has(`${ns}/cell-2`) && m.get(`${ns}/cell-1`)?.spec.replicas === 2, 'cell-1 kept');
    expect(quarantined()).toEqual([`${ns}/cell-1`]);
    expect(await probe('/readyz')).toEqual({ status: 200, body: 'ok' });
    expect(reflector.stats).toMatchObject({ lists: 1, relists: 0 });
    await expectStoreEqualsFreshList(loop, crd.list, quarantined());
  });
});
