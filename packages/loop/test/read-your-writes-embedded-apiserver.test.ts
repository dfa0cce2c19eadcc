/**
 * Read your writes against the embedded apiserver over loopback HTTP: reflectors as sources,
 * kube-client for the writes, pods created with `generateName` (the server picks the name, so a
 * second create is not refused with AlreadyExists: it is a real duplicate — controller-runtime's
 * classic double-create). The pod watch is stalled from inside the first reconcile, before its
 * creates, so the pod cache cannot see them; a second trigger for the parent then arrives.
 * Every wait is bounded and event-driven.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { kubeReflector, podReflector } from '@reconcile-loop/reflector';
import { recordingLogger, within } from '@reconcile-loop/test-support';
import { startApiServer } from '@reconcile-loop/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ReconcileLoop } from '../src/index.js';
import { cocoonSetSchema } from './cocoonset-controller.js';

const NS = 'default';
const WAIT_MS = 5_000;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const until = (what: string, ok: () => boolean): Promise<void> =>
  within(
    (async () => {
      while (!ok()) await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
    what,
    WAIT_MS,
  );

async function setup(useExpectations: boolean) {
  const server = await startApiServer();
  cleanups.push(() => server.close());
  const ref = server.registerResource({ group: 'example.com', version: 'v1', kind: 'CocoonSet', plural: 'cocoonsets' });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const pods = new KubeClient({ kubeConfig }).resource(podResource, podSchema).inNamespace(NS);
  const logger = recordingLogger();
  let runs = 0;
  let stalled = false;
  const loop = new ReconcileLoop({
    source: kubeReflector({
      name: 'cocoonsets',
      kubeConfig,
      namespace: NS,
      resource: { group: 'example.com', version: 'v1', plural: 'cocoonsets' },
      schema: cocoonSetSchema,
    }),
    keyMap: (_set, key) => key,
    secondary: {
      pods: {
        source: podReflector({ name: 'pods', kubeConfig, namespace: NS }),
        owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' },
      },
    },
    logger,
    reconcile: async (_key, ctx) => {
      runs += 1;
      const parent = ctx.parent;
      if (parent === undefined) return;
      const missing = parent.spec.replicas - ctx.owned('pods').size;
      if (missing > 0 && !stalled) {
        stalled = true;
        server.stallWatches(); // the pod cache will not see the creates below until unstalled
      }
      for (let i = 0; i < missing; i++) {
        const pod = await pods.create(
          {
            metadata: {
              generateName: `${parent.metadata.name}-`,
              ownerReferences: [
                {
                  apiVersion: 'example.com/v1',
                  kind: 'CocoonSet',
                  name: parent.metadata.name,
                  uid: parent.metadata.uid!,
                  controller: true,
                },
              ],
            },
            spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
          },
          { signal: ctx.signal },
        );
        if (useExpectations) ctx.expect('pods').creations(`${NS}/${pod.metadata.name}`);
      }
    },
  });
  cleanups.push(() => loop.stop({ graceMs: 1_000 }));
  /** Starts the loop, waits for both watches, then creates the CocoonSet: its first reconcile stalls them. */
  const start = async (): Promise<void> => {
    await loop.start();
    await server.waitForWatches(2, WAIT_MS);
    server.createObject(ref, {
      apiVersion: 'example.com/v1',
      kind: 'CocoonSet',
      metadata: { name: 'web', namespace: NS },
      spec: { replicas: 2 },
    });
  };
  const owned = () =>
    server
      .listPods(NS)
      .filter((p) => (p.metadata.ownerReferences as Array<{ name: string }> | undefined)?.some((r) => r.name === 'web')).length;
  return { server, loop, logger, owned, start, runs: () => runs };
}

describe('read your writes (embedded apiserver)', () => {
  it('[loop: Read your writes] without expectations a trigger while the pod watch lags double-creates generateName pods (the problem, embedded apiserver)', async () => {
    const { server, loop, owned, start } = await setup(false);
    await start();
    await server.waitForRequests('create', 2, WAIT_MS);
    loop.enqueue('default/web'); // a second event for the parent; the pod cache is still empty
    await until('a second pair of pods', () => owned() === 4);
    expect(server.requestCounts().create).toBe(4);
  });

  it('[loop: Read your writes] with ctx.expect a trigger while the pod watch lags is deferred until the cache sees both pods: no double-create (embedded apiserver)', async () => {
    const { server, loop, logger, owned, runs, start } = await setup(true);
    await start();
    await server.waitForRequests('create', 2, WAIT_MS);
    await until('the first reconcile to finish', () => loop.health().reconciles.succeeded >= 1);
    loop.enqueue('default/web');
    await until('the trigger to be deferred', () => logger.entries.some((e) => e.message.startsWith('expectations unsatisfied')));
    expect(runs()).toBe(1);
    expect(server.requestCounts().create).toBe(2);
    server.unstallWatches();
    await until(
      'the pod cache to see both pods and the parent to run again',
      () => loop.stores.pods.members('default/web').size === 2 && runs() === 2,
    );
    expect(server.requestCounts().create).toBe(2);
    expect(owned()).toBe(2);
  });
});
