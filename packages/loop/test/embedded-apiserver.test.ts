/**
 * The integration layer: a `ReconcileLoop` whose source is the pod reflector from
 * `@reconcile-loop/reflector`, over real loopback HTTP against the embedded apiserver from
 * `@reconcile-loop/testing`, with kubelet emulation and fault injection.
 *
 * Real HTTP means real time: every wait is bounded and event-driven (the next reconcile of a pool,
 * or the server's `waitForWatches`); nothing sleeps. The server and the reflector agree that a second
 * lasts {@link SECOND_MS} ms (`timeoutSecondsScaleMs` and a scaled reflector clock), so the
 * reflector's backoffs stay short.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Pod } from '@reconcile-loop/k8s-types';
import { podReflector, type Reflector } from '@reconcile-loop/reflector';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { scaledClock, within as withinMs } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { ReconcileLoop, healthHandler, type ObjectKey } from '../src/index.js';

/** One `timeoutSeconds` unit on the server, and 1000 ms on the reflector's clock. */
const SECOND_MS = 50;
const WAIT_MS = 3_000;
const NS = 'pool-a';

const fastClock = scaledClock(SECOND_MS);

const within = <V>(promise: Promise<V>, what: string, ms = WAIT_MS): Promise<V> => withinMs(promise, what, ms);

/** What one reconcile saw: its snapshot, and whether the whole-store view agreed with it. */
interface Seen {
  pool: string;
  members: ReadonlyMap<ObjectKey, Pod>;
  storeAgrees: boolean;
}

/** Records reconciles; a test takes them pool by pool, in order. */
class Reconciles {
  readonly all: Seen[] = [];
  readonly #taken = new Map<string, number>();
  #wake: (() => void) | undefined;

  record(seen: Seen): void {
    this.all.push(seen);
    this.#wake?.();
  }

  /** The next reconcile of `pool` not yet taken (bounded wait). */
  async next(pool: string, what = `the next reconcile of ${pool}`): Promise<Seen> {
    for (;;) {
      const from = this.#taken.get(pool) ?? 0;
      const index = this.all.findIndex((seen, i) => i >= from && seen.pool === pool);
      if (index !== -1) {
        this.#taken.set(pool, index + 1);
        return this.all[index]!;
      }
      await within(new Promise<void>((resolve) => (this.#wake = resolve)), what);
    }
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The embedded apiserver with two engines and one trainer in {@link NS} (label `pool`) and a pod in
 * another namespace; a loop keyed by the `pool` label over a pod reflector on it. Not started.
 */
async function setup(extra: { hangPool?: string; syncTimeoutMs?: number; beforeStart?: (server: ApiServer) => void } = {}) {
  const server: ApiServer = await startApiServer({ timeoutSecondsScaleMs: SECOND_MS });
  cleanups.push(() => server.close());
  server.seedPods(2, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
  server.seedPods(1, { namespace: NS, labels: { pool: 'trainers' }, namePrefix: 'trainer' });
  server.createPod({ metadata: { name: 'engine-x', namespace: 'elsewhere', labels: { pool: 'engines' } } });

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const reflector: Reflector<Pod> = podReflector({
    kubeConfig,
    namespace: NS,
    labelSelector: 'pool',
    clock: fastClock,
    random: () => 0,
  });
  const reconciles = new Reconciles();
  const loop = new ReconcileLoop<Pod, string>({
    source: reflector,
    keyMap: (pod) => pod.metadata.labels['pool'],
    reconcile: async (pool, { members, store }) => {
      if (pool === extra.hangPool) {
        reconciles.record({ pool, members, storeAgrees: true });
        await new Promise(() => {}); // ignores its signal: only the grace period ends stop()
      }
      const storeAgrees =
        [...members].every(([key, pod]) => store.get(key) === pod) && store.hasMembers(pool) === members.size > 0;
      reconciles.record({ pool, members, storeAgrees });
    },
    sources: { syncTimeoutMs: extra.syncTimeoutMs ?? WAIT_MS },
    shutdown: { timeoutMs: 200 },
  });
  extra.beforeStart?.(server);
  cleanups.push(async () => void (await loop.stop()));
  return { server, reflector, loop, reconciles };
}

const names = (seen: Seen): string[] => [...seen.members.keys()].sort();
const isReady = (pod: Pod | undefined): boolean =>
  pod?.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

describe('ReconcileLoop over the pod reflector against the embedded apiserver', () => {
  it('[source_stream_driver: WaitForCacheSync] start() resolves once the listing from the embedded apiserver is in the store, and each pool is reconciled against it (embedded apiserver)', async () => {
    const { server, loop, reconciles } = await setup();
    expect(loop.synced).toBe(false);

    await loop.start();
    expect(loop.synced).toBe(true);
    expect(loop.store.keys().sort()).toEqual(['pool-a/engine-0', 'pool-a/engine-1', 'pool-a/trainer-0']);
    expect(server.requestCounts().list).toBe(1);

    // Every pool of the listing was queued by the replace: its first reconcile sees the full pool.
    expect(names(await reconciles.next('engines'))).toEqual(['pool-a/engine-0', 'pool-a/engine-1']);
    expect(names(await reconciles.next('trainers'))).toEqual(['pool-a/trainer-0']);
  });

  it('[source_stream_driver: Cache-before-notify ordering] kubelet changes reach reconcile, and the snapshot of the reconcile each change triggers already shows it (embedded apiserver)', async () => {
    const { server, loop, reconciles } = await setup();
    await loop.start();
    await reconciles.next('engines'); // the listing's reconcile
    const key = 'pool-a/engine-0';

    // Each write is one MODIFIED (or DELETED) frame; the next reconcile of the pool is the one it
    // triggered, so it must already see the write.
    server.kubelet.bind(NS, 'engine-0', 'node-a');
    let seen = await reconciles.next('engines', 'the reconcile after bind');
    expect(seen.members.get(key)?.spec.nodeName).toBe('node-a');
    expect(isReady(seen.members.get(key))).toBe(false);

    server.kubelet.setRunningReady(NS, 'engine-0');
    seen = await reconciles.next('engines', 'the reconcile after Running/Ready');
    expect(seen.members.get(key)?.status.phase).toBe('Running');
    expect(isReady(seen.members.get(key))).toBe(true);

    server.kubelet.bumpRestartCount(NS, 'engine-0');
    seen = await reconciles.next('engines', 'the reconcile after a restart');
    expect(seen.members.get(key)?.status.containerStatuses.map((c) => c.restartCount)).toEqual([1]);

    server.deletePod(NS, 'engine-0'); // bound: graceful, the pod stays with a deletionTimestamp
    seen = await reconciles.next('engines', 'the reconcile after the graceful delete began');
    expect(names(seen)).toEqual(['pool-a/engine-0', 'pool-a/engine-1']);
    expect(seen.members.get(key)?.metadata.deletionTimestamp).toEqual(expect.any(Number));

    server.kubelet.finishGracefulDelete(NS, 'engine-0'); // MODIFIED (grace 0), then DELETED
    seen = await reconciles.next('engines', 'the reconcile after the kubelet finished the delete');
    // The terminating MODIFIED may get its own reconcile before the DELETED's.
    if (names(seen).includes('pool-a/engine-0')) seen = await reconciles.next('engines', 'the reconcile after the DELETED');
    expect(names(seen)).toEqual(['pool-a/engine-1']);
    expect(loop.store.has(key)).toBe(false);

    expect(reconciles.all.every((s) => s.storeAgrees)).toBe(true);
    expect(server.requestCounts().list).toBe(1); // all of it over one listing and its watch
  });

  it('[object_store: Replace() on relist] a deletion missed while the watch was stalled and dropped past compaction leaves the pool at the relist: no ghost (embedded apiserver)', async () => {
    const { server, reflector, loop, reconciles } = await setup();
    await loop.start();
    await reconciles.next('trainers');
    await reconciles.next('engines');
    await server.waitForWatches(1, WAIT_MS);

    server.stallWatches(); // the DELETED frame below is held back...
    server.deletePod(NS, 'trainer-0');
    server.createPod({ metadata: { name: 'engine-2', namespace: NS, labels: { pool: 'engines' } } });
    server.compact(); // ...the cursor falls out of history...
    server.dropWatches(); // ...and the held-back frames are lost with the connection.
    expect(loop.store.has('pool-a/trainer-0')).toBe(true); // the ghost, until the relist

    const trainers = await reconciles.next('trainers', 'the relist re-driving the trainers');
    expect(names(trainers)).toEqual([]);
    expect(loop.store.has('pool-a/trainer-0')).toBe(false);
    expect(names(await reconciles.next('engines', 'the relist re-driving the engines'))).toEqual([
      'pool-a/engine-0',
      'pool-a/engine-1',
      'pool-a/engine-2',
    ]);
    expect(server.requestCounts().list).toBe(2);
    expect(reflector.stats.relists).toBe(1);
  });

  it('[loop: Lifecycle] stop() ends everything: the watch closes on the server and the loop is stopped (embedded apiserver)', async () => {
    const { server, loop, reconciles } = await setup();
    await loop.start();
    await reconciles.next('engines');
    await server.waitForWatches(1, WAIT_MS);

    await within(loop.stop(), 'stop()');
    expect(loop.state).toBe('stopped');
    await server.waitForWatches((open) => open === 0, WAIT_MS);
    expect(server.openWatchCount).toBe(0);
    const counts = server.requestCounts();
    expect(counts).toMatchObject({ list: 1, watch: 1 });
    loop.enqueue('engines'); // ignored after stop
    expect(reconciles.all.filter((s) => s.pool === 'engines')).toHaveLength(1);
  });

  it('[loop: GracefulShutdownTimeout] a reconcile that never settles: stop() resolves after the grace, names the pool, and the watch is closed on the server (embedded apiserver)', async () => {
    const { server, loop, reconciles } = await setup({ hangPool: 'engines' });
    await loop.start();
    await reconciles.next('engines');
    await server.waitForWatches(1, WAIT_MS);
    const report = await within(loop.stop(), 'stop() after its 200 ms grace');
    expect(report).toEqual({ abandoned: ['engines'], abandonedSources: [] });
    expect(loop.state).toBe('stopped');
    await server.waitForWatches((open) => open === 0, WAIT_MS);
  });

  it('[loop: probes] RBAC forbidding the LIST: /readyz is 500 while the reflector retries, then start() rejects with SyncTimeoutError and nothing is left open (embedded apiserver)', async () => {
    const { server, loop } = await setup({
      syncTimeoutMs: 1_000,
      beforeStart: (s) => s.failNext({ verb: 'list', status: 403, times: 1_000 }),
    });
    const starting = loop.start().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const handler = healthHandler(loop);
    const probe = (url: string): { status: number; body: string } => {
      const res = { statusCode: 0, body: '', setHeader: () => res, end: (body?: string) => void (res.body = body ?? '') };
      handler({ url, method: 'GET', headers: {} }, res);
      return { status: res.statusCode, body: res.body };
    };
    expect(probe('/readyz')).toMatchObject({ status: 500 });
    expect(probe('/readyz?verbose').body).toContain('[-]source:pods failed: not synced yet');
    expect(probe('/healthz')).toMatchObject({ status: 200 });
    const error = await within(starting, 'start() to reject');
    expect(error).toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT', sourceName: 'pods', timeoutMs: 1_000 });
    expect(loop.state).toBe('stopped');
    expect(loop.health().ready.ok).toBe(false);
    expect(server.requestCounts().list).toBeGreaterThan(1); // it kept retrying the 403
    expect(server.openWatchCount).toBe(0);
  });
});
