import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { Pod } from '@reconcile-loop/k8s-types';
import { ReconcileLoop } from '@reconcile-loop/loop';
import { ObjectStore } from '@reconcile-loop/object-store';
import { podReflector, type Reflector } from '@reconcile-loop/reflector';
import { afterEach, describe, expect, it } from 'vitest';
import { fnv1a64, hashInRanges, podManifest, readVersions, uniqueNamespace, type HashRange as ShardRange } from '../src/index.js';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';

// A sharded reflector (the `shard` option) against kube-apiserver. With the ShardedListAndWatch
// gate on (1.36+, alpha) the server filters LIST and WATCH and echoes the selector in
// metadata.shardInfo, so each replica's store holds only its range and nothing is dropped on the
// client; with the gate off (the default apiserver) the server ignores the selector and the
// reflector filters on the client with the same FNV-1a 64 hash. A reshard moves keys from one
// replica's store without a reconcile that sees a moved parent as deleted.

const availability = e2eAvailability();
const env = useE2eEnvironment(availability);
const versions = readVersions();

const inRanges = (uid: string, ranges: readonly ShardRange[]): boolean => hashInRanges(fnv1a64(uid), ranges);

const LOWER: readonly ShardRange[] = [{ start: '0x0000000000000000', end: '0x8000000000000000' }];
const UPPER: readonly ShardRange[] = [{ start: '0x8000000000000000', end: '0x10000000000000000' }];

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** Retries `assertion` (an `expect`) every 100 ms until it holds, failing with its last error after `timeoutMs`. */
async function holds(assertion: () => void, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      assertion();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function kubeConfigOf(endpoint: { kubeconfig: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(endpoint.kubeconfig);
  return kc;
}

/** 16 pods in a fresh namespace; their keys by the half of the hash space their uid falls in. */
async function seeded(endpoint: { kubeconfig: string }, prefix: string) {
  const core = kubeConfigOf(endpoint).makeApiClient(CoreV1Api);
  const ns = uniqueNamespace(prefix);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const uids = new Map<string, string>();
  for (let i = 0; i < 16; i++) {
    const created = await core.createNamespacedPod({ namespace: ns, body: podManifest(`p${i}`, { labels: {} }) });
    uids.set(`${ns}/p${i}`, created.metadata!.uid!);
  }
  const keysIn = (ranges: readonly ShardRange[]) =>
    [...uids]
      .filter(([, uid]) => inRanges(uid, ranges))
      .map(([key]) => key)
      .sort();
  return { ns, keysIn };
}

function sharded(endpoint: { kubeconfig: string }, ns: string, ranges: readonly ShardRange[]): Reflector<Pod> {
  return podReflector({ kubeConfig: kubeConfigOf(endpoint), namespace: ns, shard: { field: 'uid', ranges } });
}

/** Runs a reflector into a store in the background; stopped after the test. */
function mirror(reflector: Reflector<Pod>): { store: ObjectStore<Pod, string>; deletes: string[] } {
  const store = new ObjectStore<Pod, string>({ keyMap: () => 'all' });
  const deletes: string[] = [];
  const controller = new AbortController();
  const done = (async () => {
    for await (const event of reflector.open(controller.signal)) {
      store.apply(event);
      if (event.type === 'delete') deletes.push(event.key);
    }
  })();
  stops.push(async () => {
    controller.abort();
    await done;
  });
  return { store, deletes };
}

/** A loop over one sharded reflector that records, per reconcile, whether the parent was in its store. */
function loopOver(reflector: Reflector<Pod>) {
  const calls: Array<{ key: string; present: boolean }> = [];
  const loop = new ReconcileLoop<Pod, string>({
    source: reflector,
    keyMap: (_pod, key) => key,
    reconcile: (key, ctx) => void calls.push({ key, present: ctx.store.get(key) !== undefined }),
  });
  stops.push(async () => void (await loop.stop()));
  return { loop, calls };
}

describe.skipIf(!availability.run)(`sharded reflector against kube-apiserver ${versions.kubernetes}`, () => {
  it.skipIf(versions.minor < 36)(
    '[e2e: Sharded source, gate on] two replicas with complementary ranges hold exactly their halves, filtered by the server (shardInfo echoed, nothing dropped on the client); a reshard moves keys without a delete-reconcile',
    async (context) => {
      const cp = requireControlPlane(context, env());
      const endpoint = await cp.extraApiserver('kube-apiserver-sharded-source', ['--feature-gates=ShardedListAndWatch=true']);
      const { ns, keysIn } = await seeded(endpoint, 'shard-src-on');
      expect(keysIn(LOWER).length).toBeGreaterThan(0);
      expect(keysIn(UPPER).length).toBeGreaterThan(0);
      const lower = sharded(endpoint, ns, LOWER);
      const upper = sharded(endpoint, ns, UPPER);
      const a = mirror(lower);
      const b = mirror(upper);
      await holds(() => {
        expect(a.store.keys().sort()).toEqual(keysIn(LOWER));
        expect(b.store.keys().sort()).toEqual(keysIn(UPPER));
      }, 30_000);
      for (const r of [lower, upper]) expect(r.health().shard).toMatchObject({ filter: 'server', dropped: 0 });

      // A loop on a third replica: LOWER, then resharded to UPPER.
      const replica = sharded(endpoint, ns, LOWER);
      const { loop, calls } = loopOver(replica);
      await loop.start();
      await holds(() => expect(new Set(calls.map((c) => c.key))).toEqual(new Set(keysIn(LOWER))), 30_000);
      replica.reshard(UPPER);
      await holds(() => expect(loop.store.keys().sort()).toEqual(keysIn(UPPER)), 30_000);
      await holds(
        () =>
          expect(new Set(calls.filter((c) => keysIn(UPPER).includes(c.key)).map((c) => c.key))).toEqual(new Set(keysIn(UPPER))),
        30_000,
      );
      expect(calls.filter((c) => !c.present)).toEqual([]);
      expect(replica.health().shard).toMatchObject({ ranges: UPPER, filter: 'server', reshards: 1, dropped: 0 });
    },
    240_000,
  );

  it('[e2e: Sharded source, gate off] the default apiserver ignores shardSelector: the reflector filters on the client, holding exactly its half, and a reshard still never reconciles a moved parent as deleted', async () => {
    const e = env();
    const { ns, keysIn } = await seeded(e.endpoint, 'shard-src-off');
    const lower = sharded(e.endpoint, ns, LOWER);
    const a = mirror(lower);
    await holds(() => expect(a.store.keys().sort()).toEqual(keysIn(LOWER)), 30_000);
    expect(lower.health().shard).toMatchObject({ filter: 'client', dropped: keysIn(UPPER).length });
    expect(a.deletes).toEqual([]);

    const replica = sharded(e.endpoint, ns, LOWER);
    const { loop, calls } = loopOver(replica);
    await loop.start();
    await holds(() => expect(new Set(calls.map((c) => c.key))).toEqual(new Set(keysIn(LOWER))), 30_000);
    replica.reshard(UPPER);
    await holds(() => expect(loop.store.keys().sort()).toEqual(keysIn(UPPER)), 30_000);
    expect(calls.filter((c) => !c.present)).toEqual([]);
    expect(replica.health().shard).toMatchObject({ ranges: UPPER, filter: 'client', reshards: 1 });
  }, 180_000);
});
