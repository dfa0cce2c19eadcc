import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, EventsV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cocoonSetController } from '../../packages/loop/test/cocoonset-controller.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';

// Issue 12 against the real kube-apiserver: a CustomResourceDefinition (CocoonSet) whose objects
// own pods, reconciled by the loop package's CocoonSet test fixture — one ReconcileLoop, two sources
// (kubeReflector for the CR, podReflector for pods), pods created with controller owner references.
// Issue 13: every request of the controller goes through kube-client (createIfAbsent,
// deleteIfPresent with a UID precondition, patchStatus on /status, an EventRecorder).
//
// What is simulated: this control plane runs no kube-controller-manager, so no garbage collector.
// Background propagation: the apiserver removes the CocoonSet at once and the GC would delete its
// pods later; the test plays the GC by deleting the owned pods. Foreground propagation: the
// apiserver keeps the CocoonSet with a deletionTimestamp and the `foregroundDeletion` finalizer;
// the GC would delete the dependents that have blockOwnerDeletion, then remove the finalizer; the
// test does both steps itself, and the loop must see each one.

const GROUP = 'example.com';
const PLURAL = 'cocoonsets';

/** Real time on purpose: waits for real processes. */
async function eventually(
  what: string,
  ok: () => boolean | Promise<boolean>,
  state: () => unknown,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ok()) return;
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached in ${timeoutMs} ms; state: ${JSON.stringify(state(), null, 1)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const availability = e2eAvailability();

describe.skipIf(!availability.run)('a controller for a custom resource that owns pods, against the real kube-apiserver', () => {
  const env = useE2eEnvironment(availability);
  let kc: KubeConfig;
  let core: CoreV1Api;
  let objects: CustomObjectsApi;
  const ns = `e2e-ctrl-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    kc = new KubeConfig();
    kc.loadFromString(env().endpoint.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    objects = kc.makeApiClient(CustomObjectsApi);
    const crds = kc.makeApiClient(ApiextensionsV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await crds
      .createCustomResourceDefinition({
        body: {
          metadata: { name: `${PLURAL}.${GROUP}` },
          spec: {
            group: GROUP,
            scope: 'Namespaced',
            names: { kind: 'CocoonSet', listKind: 'CocoonSetList', plural: PLURAL, singular: 'cocoonset' },
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
                      spec: { type: 'object', properties: { replicas: { type: 'integer' } } },
                      status: {
                        type: 'object',
                        properties: {
                          replicas: { type: 'integer' },
                          readyReplicas: { type: 'integer' },
                          observedGeneration: { type: 'integer' },
                        },
                      },
                    },
                  },
                },
              },
            ],
          },
        },
      })
      .catch((error: { code?: number }) => {
        if (error.code !== 409) throw error; // an external cluster may have it already
      });
    await eventually(
      'the CRD to be established and served',
      async () => {
        const crd = await crds.readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
        if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return false;
        return objects.listNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL }).then(
          () => true,
          () => false,
        );
      },
      () => 'CRD not established',
    );
  }, 120_000);

  afterAll(async () => {
    await core?.deleteNamespace({ name: ns }).catch(() => {});
  });

  const create = (name: string, replicas: number) =>
    objects.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      namespace: ns,
      plural: PLURAL,
      body: { apiVersion: `${GROUP}/v1`, kind: 'CocoonSet', metadata: { name }, spec: { replicas } },
    });
  // A merge patch of spec only: a read-modify-replace would race the controller's status writes.
  const scale = async (name: string, replicas: number) => {
    await new KubeClient({ kubeConfig: kc })
      .resource({ group: GROUP, version: 'v1', plural: PLURAL })
      .inNamespace(ns)
      .patch(name, { type: 'merge', body: { spec: { replicas } } });
  };
  const getSet = async (name: string) =>
    (await objects.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL, name })) as {
      status?: Record<string, number>;
    };
  const eventsAbout = async (name: string) =>
    (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })).items
      .filter((e) => e.regarding?.name === name)
      .map((e) => `${e.reason} ${e.note}`)
      .sort();
  const podsOf = async (owner: string) => {
    const list = await core.listNamespacedPod({ namespace: ns });
    return list.items.filter((p) =>
      p.metadata?.ownerReferences?.some((r) => r.kind === 'CocoonSet' && r.name === owner && r.controller === true),
    );
  };

  it('[loop: Owns] creates owned pods with controller references and scales them; a parent deleted with background propagation reaches reconcile, and the simulated GC empties it (real apiserver)', async () => {
    const { loop, events } = cocoonSetController(kc, ns);
    try {
      await create('web', 2);
      await loop.start();
      const key = `${ns}/web`;
      const parentUid = loop.store.get(key)?.metadata.uid;
      expect(parentUid).toEqual(expect.any(String));
      await eventually(
        'two pods owned by web',
        async () => (await podsOf('web')).length === 2,
        () => loop.health(),
      );
      const pods = await podsOf('web');
      expect(pods.map((p) => p.metadata?.ownerReferences)).toEqual(
        pods.map(() => [
          expect.objectContaining({
            apiVersion: `${GROUP}/v1`,
            kind: 'CocoonSet',
            name: 'web',
            uid: parentUid,
            controller: true,
            blockOwnerDeletion: true,
          }),
        ]),
      );
      await eventually(
        'the pod store to map them to web',
        () => loop.stores.pods.members(key).size === 2,
        () => loop.stores.pods.keys(),
      );
      // Status through kube-client's patchStatus (the /status subresource), Events on events.k8s.io/v1.
      let seen: unknown;
      await eventually(
        'status: 2 replicas at generation 1',
        async () =>
          isDeepStrictEqual((seen = await getSet('web')).status, { replicas: 2, readyReplicas: 0, observedGeneration: 1 }),
        () => seen,
      );
      await events.flush();
      const created = await eventsAbout('web');
      expect(created).toEqual(['SuccessfulCreate Created pod: web-0', 'SuccessfulCreate Created pod: web-1']);

      await scale('web', 3);
      await eventually(
        'three pods',
        async () => (await podsOf('web')).length === 3,
        () => loop.health(),
      );
      await eventually(
        'status: 3 replicas at generation 2',
        async () =>
          isDeepStrictEqual((seen = await getSet('web')).status, { replicas: 3, readyReplicas: 0, observedGeneration: 2 }),
        () => seen,
      );

      await objects.deleteNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: PLURAL,
        name: 'web',
        propagationPolicy: 'Background',
      });
      await eventually(
        'the parent to leave the CR store',
        () => !loop.store.has(key),
        () => loop.store.keys(),
      );
      // No GC runs: the pods stay, and still map to the deleted parent's key.
      expect(loop.stores.pods.members(key).size).toBe(3);
      // Play the garbage collector.
      for (const pod of await podsOf('web')) await core.deleteNamespacedPod({ namespace: ns, name: pod.metadata!.name! });
      await eventually(
        'the owned pods to leave the pod store',
        () => loop.stores.pods.members(key).size === 0,
        () => loop.stores.pods.keys(),
      );
      expect(await podsOf('web')).toEqual([]); // the reconcile of a deleted parent recreated nothing
      expect(loop.health().reconciles).toMatchObject({ terminal: 0, parked: 0 });
    } finally {
      await loop.stop({ graceMs: 5_000 });
      await events.close();
    }
  });

  it('[loop: Owns] a parent deleted with foreground propagation stays with a deletionTimestamp: reconcile creates nothing for it; the simulated GC deletes its pods and lifts the finalizer (real apiserver)', async () => {
    const { loop, events } = cocoonSetController(kc, ns);
    try {
      await create('db', 2);
      await loop.start();
      const key = `${ns}/db`;
      await eventually(
        'two pods owned by db',
        async () => (await podsOf('db')).length === 2,
        () => loop.health(),
      );

      await objects.deleteNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: PLURAL,
        name: 'db',
        propagationPolicy: 'Foreground',
      });
      await eventually(
        'the parent to carry a deletionTimestamp in the CR store',
        () => loop.store.get(key)?.metadata.deletionTimestamp !== undefined,
        () => loop.store.get(key),
      );
      // GC step 1: delete one dependent. A controller that ignored the deletionTimestamp would replace it.
      const [first] = await podsOf('db');
      await core.deleteNamespacedPod({ namespace: ns, name: first!.metadata!.name! });
      await eventually(
        'the pod store to drop it',
        () => loop.stores.pods.members(key).size === 1,
        () => loop.stores.pods.keys(),
      );
      await eventually(
        'the loop to be idle',
        () => loop.health().queueDepth === 0 && loop.health().inFlight.length === 0,
        () => loop.health(),
      );
      expect((await podsOf('db')).length).toBe(1);
      // GC step 2: the last dependent, then the finalizer; the apiserver then removes the parent.
      for (const pod of await podsOf('db')) await core.deleteNamespacedPod({ namespace: ns, name: pod.metadata!.name! });
      const parent = (await objects.getNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: PLURAL,
        name: 'db',
      })) as {
        metadata: { finalizers?: string[] };
      };
      expect(parent.metadata.finalizers).toContain('foregroundDeletion');
      parent.metadata.finalizers = [];
      await objects.replaceNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: PLURAL,
        name: 'db',
        body: parent,
      });
      await eventually(
        'the parent to leave the CR store',
        () => !loop.store.has(key),
        () => loop.store.keys(),
      );
      await eventually(
        'no pod left for db',
        () => loop.stores.pods.members(key).size === 0,
        () => loop.stores.pods.keys(),
      );
      expect(await podsOf('db')).toEqual([]);
    } finally {
      await loop.stop({ graceMs: 5_000 });
      await events.close();
    }
  });
});
