import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import {
  addFinalizer,
  apply,
  applyStatus,
  createIfAbsent,
  deleteIfPresent,
  EventRecorder,
  KubeClient,
  patchStatus,
  removeFinalizer,
  updateStatus,
  type KubeClientOptions,
  type KubeObject,
  type ResourceClient,
} from '@reconcile-loop/kube-client';
import { isConflict, isInvalid, isNotFound } from '@reconcile-loop/kube-client/errors';
import { beforeAll, describe, expect, it } from 'vitest';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';

// @reconcile-loop/kube-client against a real kube-apiserver (TLS verified through the generated CA,
// an admin bearer token, both from a client-node KubeConfig): every verb, server-side apply with a
// field-manager conflict, strategic merge on pod containers, Events (series and combined similar
// events), and every conflict-retrying write raced by a second real client (updateStatus,
// patchStatus, finalizers, createIfAbsent): both clients' mutations must survive.

const availability = e2eAvailability();
const describeE2e = availability.run ? describe : describe.skip;
const environment = useE2eEnvironment(availability);

const GROUP = 'e2e.reconcile-loop.io';
const cellResource = { group: GROUP, version: 'v1', plural: 'cellsets', kind: 'CellSet' };
const namespaces = { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace' };
const configMaps = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
const crds = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
};

function newClient(options: Partial<KubeClientOptions> = {}): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromString(environment().endpoint.kubeconfig);
  return new KubeClient({ kubeConfig: kc, ...options });
}

async function until<V>(what: string, probe: () => Promise<V | undefined>, timeoutMs = 30_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const podBody = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels },
  spec: {
    containers: [
      { name: 'a', image: 'busybox:1.36' },
      { name: 'b', image: 'busybox:1.36' },
    ],
  },
});

describeE2e('kube-client against the real kube-apiserver', () => {
  let client: KubeClient;
  let ns: string;
  let cells: ResourceClient<KubeObject>;

  beforeAll(async () => {
    client = newClient();
    ns = `kc-${randomBytes(3).toString('hex')}`;
    await client.resource(namespaces).create({ metadata: { name: ns } });
    await createIfAbsent(client.resource(crds), {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `cellsets.${GROUP}` },
      spec: {
        group: GROUP,
        scope: 'Namespaced',
        names: { plural: 'cellsets', singular: 'cellset', kind: 'CellSet', listKind: 'CellSetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                },
              },
            },
          },
        ],
      },
    });
    cells = client.resource(cellResource).inNamespace(ns);
    // Established, and actually served (discovery can lag the condition).
    await until('the CellSet CRD to be served', async () => ((await cells.list()).resourceVersion ? true : undefined));
  }, 60_000);

  it('[kube_client: verbs] every verb: create, get, list with a selector, watch from a cursor, update (409 when stale), merge and JSON patch, delete with preconditions, deleteCollection', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace(ns);
    const listed = await pods.list();
    const a = await pods.create(podBody('a', { app: 'kc' }));
    await pods.create(podBody('b', { app: 'kc' }));
    await pods.create(podBody('c', { app: 'other' }));
    expect((await pods.list({ labelSelector: 'app=kc' })).items.map((p) => p.metadata.name).sort()).toEqual(['a', 'b']);
    expect((await pods.get('a')).spec.containers.map((c) => c.name)).toEqual(['a', 'b']);

    const raw = await pods.raw.get('a');
    raw.metadata.labels = { ...raw.metadata.labels, step: 'update' };
    await pods.update(raw);
    expect(isConflict(await pods.update(raw).catch((e: unknown) => e))).toBe(true);
    const merged = await pods.patch('a', { type: 'merge', body: { metadata: { labels: { step: 'merge' } } } });
    expect(merged.metadata.labels['step']).toBe('merge');
    const jsonPatched = await pods.patch('a', {
      type: 'json',
      body: [{ op: 'replace', path: '/metadata/labels/step', value: 'json' }],
    });
    expect(jsonPatched.metadata.labels['step']).toBe('json');

    const wrong = await pods
      .delete('a', { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } })
      .catch((e: unknown) => e);
    expect(isConflict(wrong)).toBe(true);
    // kube-apiserver 1.35 words it "the UID in the precondition (…) does not match the UID in record"
    expect((wrong as Error).message).toMatch(/UID in the precondition/);
    await pods.delete('a', {
      preconditions: { uid: a.metadata.uid, resourceVersion: jsonPatched.metadata.resourceVersion },
      gracePeriodSeconds: 0,
    });
    expect(isNotFound(await pods.get('a').catch((e: unknown) => e))).toBe(true);
    await pods.deleteCollection({ labelSelector: 'app' });
    expect((await pods.list()).items).toHaveLength(0);

    const seen: string[] = [];
    for await (const frame of pods.watch({ resourceVersion: listed.resourceVersion, timeoutSeconds: 2 })) {
      if (frame.type !== 'BOOKMARK' && frame.type !== 'ERROR') seen.push(`${frame.type} ${frame.object.metadata.name}`);
    }
    expect(seen.slice(0, 3)).toEqual(['ADDED a', 'ADDED b', 'ADDED c']);
    expect(seen).toContain('DELETED a');
    expect(seen.filter((s) => s.startsWith('DELETED')).length).toBe(3);
  });

  it('[kube_client: strategic merge patch] a strategic merge patch on pod containers merges by name; the same body as a merge patch replaces the list and is refused', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace(ns);
    await pods.create(podBody('smp'));
    const body = { spec: { containers: [{ name: 'b', image: 'busybox:1.37' }] } };
    const patched = await pods.patch('smp', { type: 'strategic', body });
    expect(patched.spec.containers.map((c) => c.name)).toEqual(['a', 'b']);
    const images = ((await pods.raw.get('smp'))['spec'] as { containers: { name: string; image: string }[] }).containers.map(
      (c) => `${c.name}=${c.image}`,
    );
    expect(images).toEqual(['a=busybox:1.36', 'b=busybox:1.37']);
    expect(isInvalid(await pods.patch('smp', { type: 'merge', body }).catch((e: unknown) => e))).toBe(true);
  });

  it('[kube_client: server-side apply] apply with a field manager; another manager changing the same field without force is a 409 naming the owner; with force it takes ownership', async () => {
    const cms = client.resource(configMaps).inNamespace(ns);
    await cms.apply(
      { metadata: { name: 'ssa' }, data: { shared: 'from-a', onlyA: '1' } },
      { fieldManager: 'manager-a', force: false },
    );
    const conflict = await cms
      .apply({ metadata: { name: 'ssa' }, data: { shared: 'from-b' } }, { fieldManager: 'manager-b', force: false })
      .catch((e: unknown) => e);
    expect(isConflict(conflict)).toBe(true);
    expect((conflict as Error).message).toMatch(/manager-a/);
    expect(
      (conflict as { status?: { details?: { causes: { field?: string }[] } } }).status?.details?.causes.some(
        (c) => c.field === '.data.shared',
      ),
    ).toBe(true);
    const forced = await cms.apply(
      { metadata: { name: 'ssa' }, data: { shared: 'from-b' } },
      { fieldManager: 'manager-b', force: true },
    );
    expect(forced['data']).toEqual({ shared: 'from-b', onlyA: '1' });
    const managers = (forced.metadata['managedFields'] as { manager: string }[]).map((m) => m.manager).sort();
    expect(managers).toEqual(['manager-a', 'manager-b']);
    // apply to the status subresource of a custom resource
    await cells.create({ metadata: { name: 'ssa-status' }, spec: { replicas: 1 } });
    const withStatus = await applyStatus(
      cells,
      'ssa-status',
      { readyReplicas: 1 },
      { fieldManager: 'cellset-controller', force: true },
    );
    expect(withStatus['status']).toEqual({ readyReplicas: 1 });
    // a read-back object carries managedFields (refused in an apply) and a resourceVersion: apply() strips them
    const raw = await cms.raw.get('ssa');
    expect(raw.metadata['managedFields']).toBeDefined();
    const reapplied = await apply(
      cms,
      { ...raw, data: { shared: 'from-b', added: 'yes' } },
      { fieldManager: 'manager-b', force: true },
    );
    expect(reapplied['data']).toEqual({ shared: 'from-b', onlyA: '1', added: 'yes' });
    const refused = await cms.apply({ ...raw }, { fieldManager: 'manager-b', force: true }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'RL_KUBE_API_ERROR', message: expect.stringMatching(/managedFields must be nil/) });
  });

  it('[kube_client: UpdateStatus with RetryOnConflict] two real writers race on one status: every mutation lands', async () => {
    await cells.create({ metadata: { name: 'race' }, spec: { replicas: 1 } });
    const writer = (field: string) => async () => {
      const handle = newClient({ rateLimit: false }).resource(cellResource).inNamespace(ns);
      let conflicts = 0;
      for (let i = 0; i < 20; i++) {
        const result = await updateStatus(
          handle,
          'race',
          (o) => {
            const status = (o['status'] ?? {}) as Record<string, number>;
            o['status'] = { ...status, [field]: (status[field] ?? 0) + 1 };
          },
          { retry: { initialMs: 5, maxMs: 5, factor: 1, jitter: 1 }, attempts: 100 },
        );
        conflicts += result.attempts - 1;
      }
      return conflicts;
    };
    const conflicts = await Promise.all([writer('fromA')(), writer('fromB')()]);
    expect((await cells.get('race'))['status']).toEqual({ fromA: 20, fromB: 20 });
    expect(conflicts[0]! + conflicts[1]!).toBeGreaterThan(0);
  });

  it('[kube_client: UpdateStatus with RetryOnConflict] patchStatus raced by a second real client: both counters reach 20', async () => {
    await cells.create({ metadata: { name: 'patch-race' }, spec: { replicas: 1 } });
    const writer = (field: string) => async () => {
      const handle = newClient({ rateLimit: false }).resource(cellResource).inNamespace(ns);
      let conflicts = 0;
      for (let i = 0; i < 20; i++) {
        const result = await patchStatus(
          handle,
          'patch-race',
          (current) => ({ [field]: (((current['status'] ?? {}) as Record<string, number>)[field] ?? 0) + 1 }),
          { retry: { initialMs: 5, maxMs: 5, factor: 1, jitter: 1 }, attempts: 100 },
        );
        conflicts += result.attempts - 1;
      }
      return conflicts;
    };
    const conflicts = await Promise.all([writer('fromA')(), writer('fromB')()]);
    expect((await cells.get('patch-race'))['status']).toEqual({ fromA: 20, fromB: 20 });
    expect(conflicts[0]! + conflicts[1]!).toBeGreaterThan(0);
  });

  it('[kube_client: controllerutil.AddFinalizer] [kube_client: create-if-absent] raced by a second real client: 16 finalizers added concurrently all survive and are all removed; 10 concurrent createIfAbsent create once', async () => {
    await cells.create({ metadata: { name: 'fin-race' }, spec: { replicas: 1 } });
    const names = (who: string) => Array.from({ length: 8 }, (_, i) => `${GROUP}/${who}-${i}`);
    let conflicts = 0;
    const each = (who: string, change: typeof addFinalizer) => async () => {
      const handle = newClient({ rateLimit: false }).resource(cellResource).inNamespace(ns);
      for (const finalizer of names(who)) {
        const result = await change(handle, 'fin-race', finalizer, {
          retry: { initialMs: 5, maxMs: 5, factor: 1, jitter: 1 },
          attempts: 100,
        });
        expect(result.changed).toBe(true);
        conflicts += result.attempts - 1;
      }
    };
    await Promise.all([each('a', addFinalizer)(), each('b', addFinalizer)()]);
    expect(conflicts).toBeGreaterThan(0); // the race was real: 409s were retried
    expect([...((await cells.get('fin-race')).metadata.finalizers ?? [])].sort()).toEqual([...names('a'), ...names('b')].sort());
    expect((await deleteIfPresent(cells, 'fin-race')).outcome).toBe('deleted');
    await Promise.all([each('a', removeFinalizer)(), each('b', removeFinalizer)()]);
    await until('the finalized object to go', async () =>
      isNotFound(await cells.get('fin-race').catch((e: unknown) => e)) ? true : undefined,
    );

    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        createIfAbsent(newClient({ rateLimit: false }).resource(configMaps).inNamespace(ns), {
          metadata: { name: 'raced-anchor', labels: { by: String(i) } },
        }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.object.metadata.uid)).size).toBe(1);
  });

  it('[kube_client: delete-if-present] a delete pinned to a resourceVersion another writer moved past is precondition-failed; pinned to the current one it deletes', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace(ns);
    const seen = await pods.create(podBody('rv-pinned'));
    const moved = await newClient()
      .resource(podResource, podSchema)
      .inNamespace(ns)
      .patch('rv-pinned', { type: 'merge', body: { metadata: { labels: { moved: 'yes' } } } });
    const stale = await deleteIfPresent(pods, 'rv-pinned', { preconditions: { resourceVersion: seen.metadata.resourceVersion } });
    expect(stale.outcome).toBe('precondition-failed');
    expect((await pods.get('rv-pinned')).metadata.uid).toBe(seen.metadata.uid);
    expect(
      (
        await deleteIfPresent(pods, 'rv-pinned', {
          preconditions: { uid: seen.metadata.uid, resourceVersion: moved.metadata.resourceVersion },
          gracePeriodSeconds: 0,
        })
      ).outcome,
    ).toBe('deleted');
  });

  it('[kube_client: EventAggregator] 12 distinct similar events (one object, type and reason) become 9 Events and one combined Event counting the rest', async () => {
    const target = await cells.create({ metadata: { name: 'similar' }, spec: { replicas: 1 } });
    const regarding = { apiVersion: `${GROUP}/v1`, kind: 'CellSet', name: 'similar', namespace: ns, uid: target.metadata.uid };
    const recorder = new EventRecorder({
      client,
      reportingController: `${GROUP}/cellset-controller`,
      reportingInstance: 'e2e-0',
    });
    for (let i = 0; i < 12; i++)
      recorder.event(regarding, {
        type: 'Warning',
        reason: 'FailedCreate',
        action: 'CreatePod',
        note: `pod similar-${i}: quota exceeded`,
      });
    await recorder.close();
    const events = await client
      .resource({ group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' })
      .inNamespace(ns)
      .list();
    const mine = events.items
      .filter((e) => (e['regarding'] as { name: string }).name === 'similar')
      .map((e) => [e['note'], (e['series'] as { count: number } | undefined)?.count]);
    expect(mine).toHaveLength(10);
    expect(mine).toContainEqual(['(combined from similar events): pod similar-9: quota exceeded', 3]);
    expect(recorder.stats).toMatchObject({ created: 10, combined: 3, droppedRejected: 0 });
  });

  it('[kube_client: controllerutil.AddFinalizer] [kube_client: create-if-absent] [kube_client: delete-if-present] finalizers hold a delete until removed; create-if-absent; attempt-pinned delete', async () => {
    await cells.create({ metadata: { name: 'fin' }, spec: { replicas: 1 } });
    expect((await addFinalizer(cells, 'fin', `${GROUP}/cleanup`)).changed).toBe(true);
    expect((await addFinalizer(cells, 'fin', `${GROUP}/cleanup`)).changed).toBe(false);
    expect((await deleteIfPresent(cells, 'fin')).outcome).toBe('deleted');
    expect((await cells.get('fin')).metadata.deletionTimestamp).toBeDefined();
    expect((await removeFinalizer(cells, 'fin', `${GROUP}/cleanup`)).changed).toBe(true);
    await until('the finalized object to go', async () =>
      isNotFound(await cells.get('fin').catch((e: unknown) => e)) ? true : undefined,
    );

    const anchor = await createIfAbsent(client.resource(configMaps).inNamespace(ns), { metadata: { name: 'gc-anchor' } });
    const again = await createIfAbsent(client.resource(configMaps).inNamespace(ns), { metadata: { name: 'gc-anchor' } });
    expect([anchor.created, again.created, again.object.metadata.uid]).toEqual([true, false, anchor.object.metadata.uid]);

    const pods = client.resource(podResource, podSchema).inNamespace(ns);
    const first = await pods.create(podBody('task'));
    await pods.delete('task', { gracePeriodSeconds: 0 });
    await until('the first attempt pod to go', async () =>
      isNotFound(await pods.get('task').catch((e: unknown) => e)) ? true : undefined,
    );
    await pods.create(podBody('task'));
    expect((await deleteIfPresent(pods, 'task', { preconditions: { uid: first.metadata.uid } })).outcome).toBe(
      'precondition-failed',
    );
    expect((await deleteIfPresent(pods, 'gone-already')).outcome).toBe('absent');
  });

  it('[kube_client: EventBroadcaster aggregation] Events on events.k8s.io/v1: repeats become one Event with series.count; a different note is its own Event', async () => {
    const target = await cells.create({ metadata: { name: 'evented' }, spec: { replicas: 1 } });
    const regarding = { apiVersion: `${GROUP}/v1`, kind: 'CellSet', name: 'evented', namespace: ns, uid: target.metadata.uid };
    const recorder = new EventRecorder({
      client,
      reportingController: `${GROUP}/cellset-controller`,
      reportingInstance: 'e2e-0',
    });
    for (let i = 0; i < 5; i++) {
      recorder.event(regarding, {
        type: 'Warning',
        reason: 'DeadLettered',
        action: 'RebuildPod',
        note: 'evented-0 exhausted its rebuild budget',
      });
      await recorder.flush();
    }
    recorder.event(regarding, { type: 'Normal', reason: 'Released', action: 'RebuildPod', note: 'spec changed' });
    await recorder.close();
    expect(recorder.stats).toMatchObject({ recorded: 6, created: 2, aggregated: 4, droppedRejected: 0 });
    const events = await client
      .resource({ group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' })
      .inNamespace(ns)
      .list();
    const mine = events.items.filter((e) => (e['regarding'] as { name: string }).name === 'evented');
    expect(mine).toHaveLength(2);
    const dead = mine.find((e) => e['reason'] === 'DeadLettered')!;
    expect(dead).toMatchObject({
      type: 'Warning',
      action: 'RebuildPod',
      reportingController: `${GROUP}/cellset-controller`,
      reportingInstance: 'e2e-0',
      series: { count: 5 },
    });
    expect((dead['regarding'] as { uid: string }).uid).toBe(target.metadata.uid);
    expect(mine.find((e) => e['reason'] === 'Released')!['series']).toBeUndefined();
  });
});
