import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { objectSchema, podResource, type KubernetesObjectView, type Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore, type SourceEvent } from '@reconcile-loop/object-store';
import { KubeApiError } from '@reconcile-loop/kube-client';
import { KubeApiClient, kubeReflector, podReflector, watchVerdict, type Reflector } from '@reconcile-loop/reflector';
import { describe, expect, it } from 'vitest';
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

// Fail loudly, never stall — against the real kube-apiserver: a list forbidden by a real RBAC Role
// for a service-account token (retried, visible in health(), healed by granting the verb), and a
// CRD whose openAPI schema admits an object our zod view rejects (quarantined; everything else
// flows). Each ends with the reflector's store equal to a fresh LIST minus the quarantined keys.

const availability = e2eAvailability();

/** Consumes a reflector's stream into a store, as a stream driver would. */
class Mirror<T extends KubernetesObjectView> {
  readonly store = new ObjectStore<T, string>({ keyMap: () => 'all' });
  readonly events: SourceEvent<T>[] = [];
  error: unknown;
  ended = false;
  readonly #controller = new AbortController();
  readonly #done: Promise<void>;

  constructor(readonly reflector: Reflector<T>) {
    this.#done = (async () => {
      try {
        for await (const event of reflector.open(this.#controller.signal)) {
          this.store.apply(event);
          this.events.push(event);
        }
      } catch (error) {
        this.error = error;
      } finally {
        this.ended = true;
      }
    })();
  }

  keys(): string[] {
    return this.store.keys().sort();
  }

  state(): unknown {
    return {
      keys: this.keys(),
      stats: this.reflector.stats,
      health: { ...this.reflector.health(), lastError: String(this.reflector.health().lastError) },
      error: String(this.error),
    };
  }

  async stop(): Promise<void> {
    this.#controller.abort();
    await this.#done;
  }
}

/** Asserts (eventually) that the mirror holds what `list()` returns, at the same resourceVersions, minus the quarantined keys. */
async function expectStoreEqualsFreshList<T extends KubernetesObjectView>(
  mirror: Mirror<T>,
  list: () => Promise<ListedObject[]>,
): Promise<void> {
  const { listed, cached } = await storeMatchesFreshList(
    () => Object.fromEntries(mirror.keys().map((k) => [k, mirror.store.get(k)?.metadata.resourceVersion ?? ''])),
    list,
    () => mirror.reflector.health().quarantined.map((q) => q.key),
  );
  expect(cached).toEqual(listed);
}

describe.skipIf(!availability.run)('reflector failures against the real kube-apiserver', () => {
  const environment = useE2eEnvironment(availability);
  const admin = (): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromString(environment().endpoint.kubeconfig);
    return kc;
  };

  it('[k8s_reflector: Permanent vs transient failures] a LIST forbidden by a real RBAC Role (service-account token) is retried and visible in health(); granting the verb heals it', async () => {
    const kc = admin();
    const core = kc.makeApiClient(CoreV1Api);
    const { namespace: ns, kubeConfig: watcher, grantList } = await forbiddenListNamespace(kc); // a Role without list: the LIST is forbidden
    for (const name of ['p1', 'p2'])
      await core.createNamespacedPod({ namespace: ns, body: podManifest(name, { labels: { app: 'x' } }) });

    const entries: Array<{ level: string; message: string; fields: Record<string, unknown> }> = [];
    const at = (level: string) => (fields: Record<string, unknown>, message: string) =>
      void entries.push({ level, message, fields });
    const reflector = podReflector({
      kubeConfig: watcher,
      namespace: ns,
      retry: { initialMs: 100, maxMs: 400 },
      logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    });
    const mirror = new Mirror<Pod>(reflector);
    try {
      await eventually(
        'three forbidden LISTs',
        () => reflector.health().consecutiveFailures >= 3,
        () => mirror.state(),
      );
      const { lastError, listed } = reflector.health();
      expect(listed).toBe(false);
      expect(lastError).toBeInstanceOf(KubeApiError);
      expect(lastError).toMatchObject({ statusCode: 403, status: { code: 403, reason: 'Forbidden' }, verb: 'list' });
      expect((lastError as KubeApiError).status?.message).toContain(`system:serviceaccount:${ns}:watcher`);
      expect((lastError as KubeApiError).status?.message).toContain('cannot list resource "pods"');
      expect(mirror.events).toEqual([]);
      expect(mirror.ended).toBe(false); // transient: the stream keeps retrying
      expect(entries.filter((e) => e.level === 'error' && e.fields['code'] === 403)).toHaveLength(1); // loud once, not per retry

      await grantList();
      await eventually(
        'the listing after the grant',
        () => reflector.health().listed,
        () => mirror.state(),
      );
      expect(mirror.keys()).toEqual([`${ns}/p1`, `${ns}/p2`]);
      await core.createNamespacedPod({ namespace: ns, body: podManifest('p3', { labels: { app: 'x' } }) });
      await eventually(
        'p3 on the watch',
        () => mirror.store.has(`${ns}/p3`),
        () => mirror.state(),
      );
      expect(reflector.health()).toMatchObject({ listed: true, streaming: true, lastError: undefined, consecutiveFailures: 0 });
      expect(entries.some((e) => e.level === 'info' && e.message.startsWith('recovered'))).toBe(true);
      await expectStoreEqualsFreshList(mirror, async () => (await core.listNamespacedPod({ namespace: ns })).items);
    } finally {
      await mirror.stop();
    }
  });

  it('[k8s_reflector: Rejected cursor] the real apiserver (cached and uncached) refuses a WATCH from resourceVersion "abc" with HTTP 500 "resourceVersion: Invalid value", which the reflector reads as "drop the cursor and relist"', async () => {
    const endpoints = [
      environment().endpoint.kubeconfig,
      ...(environment().controlPlane ? [environment().controlPlane!.uncachedEndpoint.kubeconfig] : []),
    ];
    for (const kubeconfig of endpoints) {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig);
      const client = new KubeApiClient(kc, podResource);
      const failure = await (async () => {
        try {
          for await (const frame of client.watch({
            namespace: 'default',
            resourceVersion: 'abc',
            timeoutSeconds: 5,
            allowWatchBookmarks: true,
            signal: AbortSignal.timeout(10_000),
          }))
            return { frame };
          return { ended: true };
        } catch (error) {
          return { error };
        }
      })();
      // What kube-apiserver answers, pinned: a failure before the stream starts, with a Status.
      const error = (failure as { error?: unknown }).error;
      expect(error, JSON.stringify(failure)).toBeInstanceOf(KubeApiError);
      const { statusCode, status } = error as KubeApiError;
      expect(statusCode).toBe(500); // not 400: a code-only rule would retry this cursor forever
      expect(status?.message).toMatch(/^resourceVersion: Invalid value: "abc"/);
      expect(watchVerdict(status, statusCode)).toBe('relist-rejected');
    }
  });

  it('[k8s_reflector: Poison objects quarantined] a CRD whose openAPI schema admits spec.replicas "two" (int-or-string): that object is quarantined, the others flow; a cached one turning poison keeps its last good version; fixed it enters, deleted it leaves', async () => {
    const kc = admin();
    const crd = await poisonCrd(kc);
    const { group, version, plural, namespace: ns } = crd;
    try {
      await crd.create('cell-0', 1);
      const bad = (await crd.create('cell-bad', 'two')) as { metadata: { resourceVersion: string } };

      const schema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
      const reflector = kubeReflector({
        kubeConfig: kc,
        resource: { group, version, plural },
        schema,
        namespace: ns,
        retry: { initialMs: 100, maxMs: 400 },
      });
      const mirror = new Mirror<z.output<typeof schema>>(reflector);
      const quarantined = () => reflector.health().quarantined.map((q) => q.key);
      try {
        await eventually(
          'the listing',
          () => reflector.health().listed,
          () => mirror.state(),
        );
        expect(mirror.keys()).toEqual([`${ns}/cell-0`]);
        expect(reflector.health().quarantined).toEqual([
          expect.objectContaining({
            key: `${ns}/cell-bad`,
            resourceVersion: bad.metadata.resourceVersion,
            issues: [expect.stringMatching(/^spec\.replicas: /)],
          }),
        ]);

        await crd.create('cell-1', 2);
        await eventually(
          'cell-1 flows',
          () => mirror.store.has(`${ns}/cell-1`),
          () => mirror.state(),
        );
        await crd.setReplicas('cell-0', 'many');
        await eventually(
          'cell-0 quarantined, its last good version still in the store',
          () => mirror.store.get(`${ns}/cell-0`)?.spec.replicas === 1 && quarantined().includes(`${ns}/cell-0`),
          () => mirror.state(),
        );
        await crd.setReplicas('cell-bad', 3);
        await eventually(
          'cell-bad fixed and in the store',
          () => mirror.store.get(`${ns}/cell-bad`)?.spec.replicas === 3,
          () => mirror.state(),
        );
        await crd.remove('cell-0');
        await eventually(
          'cell-0 deleted, out of the quarantine',
          () => quarantined().length === 0,
          () => mirror.state(),
        );
        await crd.setReplicas('cell-1', 'x');
        await eventually(
          'cell-1 quarantined',
          () => quarantined().includes(`${ns}/cell-1`),
          () => mirror.state(),
        );
        expect(reflector.stats).toMatchObject({ lists: 1, relists: 0 });
        expect(mirror.ended).toBe(false);
        await expectStoreEqualsFreshList(mirror, crd.list);
      } finally {
        await mirror.stop();
      }
    } finally {
      await crd.dispose();
    }
  });
});
