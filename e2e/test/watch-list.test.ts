import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { podResource, type Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore } from '@reconcile-loop/object-store';
import { KubeApiClient, podReflector, type Reflector } from '@reconcile-loop/reflector';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, podManifest, readVersions, storeMatchesFreshList, uniqueNamespace, type Endpoint } from '../src/index.js';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';

// The streaming initial list (watch-list) against the pinned kube-apiserver (first checked on 1.35.4): a reflector in 'auto'
// syncs by watch-list on the watch-cached and the --watch-cache=false apiserver alike (both serve
// it), and falls back to a LIST against an apiserver started with --feature-gates=WatchList=false,
// which answers 422. Each ends with the store equal to a fresh LIST.

const availability = e2eAvailability();
const env = useE2eEnvironment(availability);
const LABEL = 'e2e/watch-list';

function kubeConfigOf(endpoint: { kubeconfig: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(endpoint.kubeconfig);
  return kc;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** Runs a reflector into a store in the background; stopped after the test. */
function mirror(reflector: Reflector<Pod>): { store: ObjectStore<Pod, string>; events: string[] } {
  const store = new ObjectStore<Pod, string>({ keyMap: () => 'all' });
  const events: string[] = [];
  const controller = new AbortController();
  const done = (async () => {
    for await (const event of reflector.open(controller.signal)) {
      store.apply(event);
      events.push(
        event.type === 'replace' ? `replace ${event.objects.size}` : `${event.type} ${event.type !== 'release' && event.key}`,
      );
    }
  })();
  stops.push(async () => {
    controller.abort();
    await done;
  });
  return { store, events };
}

/** Three labelled pods (and one without the label) in a fresh namespace on `endpoint`. */
async function seeded(
  endpoint: Endpoint | { kubeconfig: string },
  prefix: string,
): Promise<{ ns: string; client: KubeApiClient; core: CoreV1Api }> {
  const client = new KubeApiClient(kubeConfigOf(endpoint), podResource);
  const core = kubeConfigOf(endpoint).makeApiClient(CoreV1Api);
  const ns = uniqueNamespace(prefix);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  for (const name of ['p0', 'p1', 'p2'])
    await core.createNamespacedPod({ namespace: ns, body: podManifest(name, { labels: { [LABEL]: 'yes' } }) });
  await core.createNamespacedPod({ namespace: ns, body: podManifest('outsider', { labels: {} }) });
  return { ns, client, core };
}

async function expectStoreEqualsList(store: ObjectStore<Pod, string>, client: KubeApiClient, ns: string): Promise<void> {
  const seen = await storeMatchesFreshList(
    () => Object.fromEntries(store.keys().map((k) => [k, store.get(k)?.metadata.resourceVersion ?? ''])),
    async () => (await client.list({ namespace: ns, labelSelector: LABEL, signal: AbortSignal.timeout(10_000) })).items as never,
  );
  expect(seen.cached).toEqual(seen.listed);
}

describe.skipIf(!availability.run)(`watch-list against kube-apiserver ${readVersions().kubernetes}`, () => {
  for (const personality of ['cached', 'uncached'] as const) {
    it(`[k8s_reflector: Streaming initial list] a reflector with initialList 'auto' syncs by watch-list (no LIST) from the ${personality} apiserver, keeps watching on the same stream, and its store equals a fresh LIST`, async (context) => {
      const e = env();
      const endpoint = personality === 'cached' ? e.endpoint : requireControlPlane(context, e).uncachedEndpoint;
      const { ns, client, core } = await seeded(endpoint, `wl-${personality}`);
      const reflector = podReflector({
        kubeConfig: kubeConfigOf(endpoint),
        namespace: ns,
        labelSelector: LABEL,
        retry: { initialMs: 100, maxMs: 1_000 },
        initialList: 'auto',
      });
      const { store, events } = mirror(reflector);
      await eventually(
        'the streamed listing',
        () => (events.length > 0 ? true : undefined),
        () => ({ events, stats: reflector.stats }),
        30_000,
      );
      expect(events[0]).toBe('replace 3');
      expect(reflector.stats).toMatchObject({ watchLists: 1, lists: 0, watches: 1, watchListFallbacks: 0 });
      await core.createNamespacedPod({ namespace: ns, body: podManifest('p3', { labels: { [LABEL]: 'yes' } }) });
      await core.deleteNamespacedPod({ namespace: ns, name: 'p0', gracePeriodSeconds: 0 });
      await eventually(
        'p3 added and p0 deleted',
        () => (store.get(`${ns}/p3`) !== undefined && store.get(`${ns}/p0`) === undefined ? true : undefined),
        () => ({ events }),
        30_000,
      );
      expect(reflector.stats.watches).toBe(1);
      expect(reflector.health()).toMatchObject({ listed: true, streaming: true });
      await expectStoreEqualsList(store, client, ns);
    }, 120_000);
  }

  it('[k8s_reflector: Streaming initial list fallback] an apiserver started with --feature-gates=WatchList=false answers the watch-list 422; the reflector LISTs at once, turns watch-list off, and its store equals a fresh LIST', async (context) => {
    const cp = requireControlPlane(context, env());
    const endpoint = await cp.extraApiserver('kube-apiserver-no-watch-list', ['--feature-gates=WatchList=false']);
    const { ns, client, core } = await seeded(endpoint, 'wl-off');
    const reflector = podReflector({
      kubeConfig: kubeConfigOf(endpoint),
      namespace: ns,
      labelSelector: LABEL,
      retry: { initialMs: 100, maxMs: 1_000 },
      initialList: 'auto',
    });
    const { store, events } = mirror(reflector);
    await eventually(
      'the listing',
      () => (events.length > 0 ? true : undefined),
      () => ({ events, stats: reflector.stats }),
      30_000,
    );
    expect(events[0]).toBe('replace 3');
    expect(reflector.watchListOff).toBe('refused by the server (422)');
    expect(reflector.listingMode).toBe('list');
    expect(reflector.stats).toMatchObject({ watchLists: 1, watchListFallbacks: 1, lists: 1 });
    await core.createNamespacedPod({ namespace: ns, body: podManifest('p3', { labels: { [LABEL]: 'yes' } }) });
    await eventually(
      'p3 added',
      () => store.get(`${ns}/p3`),
      () => ({ events }),
      30_000,
    );
    await expectStoreEqualsList(store, client, ns);
  }, 180_000);
});
