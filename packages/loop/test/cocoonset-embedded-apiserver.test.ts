/**
 * The CocoonSet test fixture — a custom resource that owns pods, one ReconcileLoop with two
 * sources — against the embedded apiserver over loopback HTTP: kubeReflector for the CR,
 * podReflector for pods, pods created and deleted, status and Events written by the reconcile, all
 * through one kube-client `KubeClient`. Every wait is bounded and event-driven.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { scaledClock, within } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { cocoonSetController } from './cocoonset-controller.js';

const NS = 'default';
const WAIT_MS = 5_000;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: { statusSubresource?: boolean } = {}) {
  const server: ApiServer = await startApiServer({ timeoutSecondsScaleMs: 50 });
  cleanups.push(() => server.close());
  const ref = server.registerResource({
    group: 'example.com',
    version: 'v1',
    kind: 'CocoonSet',
    plural: 'cocoonsets',
    ...options,
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const { loop, events } = cocoonSetController(kubeConfig, NS, scaledClock(50));
  cleanups.push(async () => {
    await loop.stop({ graceMs: 1_000 });
    await events.close();
  });
  const set = (name: string, replicas: number) => ({
    apiVersion: 'example.com/v1',
    kind: 'CocoonSet',
    metadata: { name, namespace: NS },
    spec: { replicas },
  });
  const podNames = (owner: string) =>
    server
      .listObjects({ group: '', version: 'v1', plural: 'pods' }, NS)
      .filter(
        (p) =>
          (p.metadata.ownerReferences as Array<{ name: string; controller?: boolean }> | undefined)?.some(
            (r) => r.name === owner && r.controller === true,
          ) && p.metadata.deletionTimestamp === undefined,
      )
      .map((p) => p.metadata.name)
      .sort();
  /** Polls the server's state (no sleeping on a clock: each turn waits for the next loop turn of real I/O). */
  const until = async (what: string, ok: () => boolean, ms = WAIT_MS): Promise<void> => {
    await within(
      (async () => {
        while (!ok()) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      what,
      ms,
    );
  };
  const status = (name: string) => server.getObject(ref, NS, name)?.['status'];
  const eventsAbout = (name: string) =>
    server
      .listObjects({ group: 'events.k8s.io', version: 'v1', plural: 'events' }, NS)
      .filter((e) => (e['regarding'] as { name: string }).name === name)
      .map((e) => `${e['reason'] as string} ${e['note'] as string}`)
      .sort();
  return { server, ref, loop, events, set, podNames, until, status, eventsAbout };
}

describe('a CocoonSet controller: one loop, a custom resource that owns pods (embedded apiserver)', () => {
  it('[loop: Owns] creates owned pods with controller references, scales, replaces a deleted pod, and sees the parent deleted with its pods still mapped (embedded apiserver)', async () => {
    const { server, ref, loop, set, podNames, until } = await setup();
    server.createObject(ref, set('web', 2));
    await loop.start();
    expect(loop.synced).toBe(true);
    expect(Object.keys(loop.health().sources)).toEqual(['cocoonsets', 'pods']);
    await until('two pods owned by web', () => podNames('web').length === 2);
    expect(podNames('web')).toEqual(['web-0', 'web-1']);
    await until('the pod store to hold them', () => loop.stores.pods.members('default/web').size === 2);

    server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 3));
    await until('three pods', () => podNames('web').length === 3);

    server.deletePod(NS, 'web-1'); // not bound: gone at once; the DELETED pod event maps to its owner
    await until('web-1 recreated', () => podNames('web').includes('web-1') && loop.stores.pods.has('default/web-1'));
    expect(podNames('web')).toEqual(['web-0', 'web-1', 'web-2']);

    server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 1));
    await until('scaled down to one', () => podNames('web').length === 1);

    // Deleting the parent: the CR store drops it; its pods still map to its key (no GC runs here).
    server.deleteObject(ref, NS, 'web');
    await until('the parent to leave the store', () => !loop.store.has('default/web'));
    expect(loop.stores.pods.members('default/web').size).toBe(1);
    expect(loop.health().reconciles.failed).toBe(0);
    expect(loop.health().ready.ok).toBe(true);
  });

  it('[loop: TerminalError] a negative replicas count is a terminal error: counted, not retried, and a fixed spec reconciles (embedded apiserver)', async () => {
    const { server, ref, loop, set, podNames, until } = await setup();
    await loop.start();
    server.createObject(ref, set('bad', -1));
    await until('the terminal error to be counted', () => loop.health().reconciles.terminal === 1);
    expect(loop.health().retriesPending).toBe(0);
    server.updateObject(ref, NS, 'bad', (o) => void ((o['spec'] as { replicas: number }).replicas = 1));
    await until('one pod', () => podNames('bad').length === 1);
  });

  it('[loop: Owns] writes through kube-client: status (replicas, readyReplicas, observedGeneration) follows the pods, every create and delete is an Event (embedded apiserver)', async () => {
    const { server, ref, loop, events, set, podNames, until, status, eventsAbout } = await setup();
    server.createObject(ref, set('web', 2));
    await loop.start();
    await until('status: 2 replicas, observed generation 1', () =>
      isDeepStrictEqual(status('web'), { replicas: 2, readyReplicas: 0, observedGeneration: 1 }),
    );
    server.kubelet.bind(NS, 'web-0', 'node-1');
    server.kubelet.setRunningReady(NS, 'web-0');
    await until('status: 1 ready', () => (status('web') as { readyReplicas?: number } | undefined)?.readyReplicas === 1);
    server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 1));
    await until(
      'scaled down, status at generation 2',
      () =>
        podNames('web').length === 1 &&
        isDeepStrictEqual(status('web'), { replicas: 1, readyReplicas: 1, observedGeneration: 2 }),
    );
    await events.flush();
    expect(eventsAbout('web')).toEqual([
      'SuccessfulCreate Created pod: web-0',
      'SuccessfulCreate Created pod: web-1',
      'SuccessfulDelete Deleted pod: web-1',
    ]);
    expect(events.stats).toMatchObject({ created: 3, droppedRejected: 0, droppedSpam: 0 });
    expect(loop.health().reconciles.failed).toBe(0);
  });

  it('[loop: Status from the live object] a status computed equal to a stale cached one is still written when the live status differs (embedded apiserver)', async () => {
    const { server, ref, loop, set, until, status } = await setup();
    server.createObject(ref, set('web', 1));
    await loop.start();
    const converged = { replicas: 1, readyReplicas: 0, observedGeneration: 1 };
    await until('status converged', () => isDeepStrictEqual(status('web'), converged));
    await until('the CocoonSet cache to hold that status', () =>
      isDeepStrictEqual(loop.store.get('default/web')?.status, converged),
    );
    // The cache now lags the server (as after our own write, before its watch event): it still
    // shows the converged status, the server another one.
    server.stallWatches();
    server.updateObject(ref, NS, 'web', (o) => void (o['status'] = { replicas: 7, readyReplicas: 7, observedGeneration: 1 }));
    expect(loop.store.get('default/web')?.status).toEqual(converged);
    loop.enqueue('default/web');
    await until('the live status corrected although the cache already showed the computed one', () =>
      isDeepStrictEqual(status('web'), converged),
    );
    server.unstallWatches();
  });

  it('[loop: Status from the live object] a CRD without the status subresource is not silent: the 404 on the status write fails the reconcile and is retried (embedded apiserver)', async () => {
    const { server, ref, loop, set, podNames, until, status } = await setup({ statusSubresource: false });
    server.createObject(ref, set('web', 1));
    await loop.start();
    await until('one pod', () => podNames('web').length === 1);
    // the retry budget's first two steps (0 s, then 1 s) both fail on the status write
    await until('the failing status write to be counted and retried', () => loop.health().reconciles.failed >= 2);
    expect(status('web')).toBeUndefined();
    expect(podNames('web')).toEqual(['web-0']); // failing after its creates never duplicated them
  });

  it('[loop: Owns] a pod that is not ours holding a name is skipped, never adopted or deleted; a pod of ours that AlreadyExists counts (embedded apiserver)', async () => {
    const { server, ref, loop, set, podNames, until } = await setup();
    server.createPod({ metadata: { name: 'web-0', namespace: NS }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    server.createObject(ref, set('web', 2));
    await loop.start();
    await until('two pods owned by web', () => podNames('web').length === 2);
    expect(podNames('web')).toEqual(['web-1', 'web-2']);
    expect(server.getPod(NS, 'web-0')?.metadata.ownerReferences).toBeUndefined();
    expect(loop.health().reconciles.failed).toBe(0);
  });

  it('[loop: Owns] the README carries no controller inline: it points at the flagship (examples/cellset), whose src/ is there', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).not.toContain('cocoonSetController');
    expect(readme).toContain('[`examples/cellset`](../../examples/cellset)');
    for (const file of ['api.ts', 'plan.ts', 'controller.ts'])
      expect(existsSync(new URL(`../../../examples/cellset/src/${file}`, import.meta.url)), file).toBe(true);
  });
});
