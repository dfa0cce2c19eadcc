/**
 * Fail loudly, never stall — the whole stack: a `ReconcileLoop` over a reflector, against the
 * embedded apiserver over loopback HTTP, with its probes served by `healthHandler` on a real
 * `node:http` server. One scenario per failure of issue 9. Each asserts, where the failure allows:
 * the error reaches the caller (`start()` rejects, or `health().sources[name].lastError` carries the
 * Status), readiness goes false (in `loop.health()` and over HTTP on `/readyz`), the worker keeps
 * reconciling and later changes keep flowing, and once healed readiness returns and the loop's store
 * equals a fresh LIST minus the quarantined keys.
 *
 * Real HTTP means real time: the server's second and the reflector's clock are scaled alike (a
 * "second" is {@link SECOND_MS} ms), `health.sourceFailingMs` is 1 ms so a failing source turns
 * readiness red at once, and every wait is bounded and event-driven.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema, podResource, type ApiResource, type KubernetesObjectView, type Pod } from '@reconcile-loop/k8s-types';
import {
  DEFAULT_LIST_TIMEOUT_MS,
  KubeApiClient,
  kubeReflector,
  podReflector,
  type ListWatchScope,
  type Reflector,
  type ReflectorOptions,
} from '@reconcile-loop/reflector';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { httpGet, recordingLogger, scaledClock, serveOnLoopback, within as withinMs } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ReconcileLoop,
  healthHandler,
  type LoopHealth,
  type ObjectKey,
  type ReconcileLoopOptions,
  type Source,
  type SourceEvent,
} from '../src/index.js';
import { DEFAULT_SYNC_TIMEOUT_MS } from '../src/options.js';

const SECOND_MS = 50;
const WAIT_MS = 5_000;
const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };
const fastClock = scaledClock(SECOND_MS);
const within = <V>(promise: Promise<V>, what: string, ms = WAIT_MS): Promise<V> => withinMs(promise, what, ms);
const poll = { timeout: WAIT_MS, interval: 2 };

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every reconcile the loop made, in order; a test waits for one that satisfies a predicate. */
class Reconciles<T> {
  readonly all: Array<{ pool: string; members: ReadonlyMap<ObjectKey, T> }> = [];
  readonly #wakers = new Set<() => void>();

  record(pool: string, members: ReadonlyMap<ObjectKey, T>): void {
    this.all.push({ pool, members });
    for (const wake of this.#wakers) wake();
    this.#wakers.clear();
  }

  /** The index the next reconcile will get: pass it to {@link until} to ignore earlier ones. */
  mark(): number {
    return this.all.length;
  }

  /** The first reconcile of `pool` at or after `from` whose members satisfy `test` (bounded wait). */
  async until(
    pool: string,
    test: (members: ReadonlyMap<ObjectKey, T>) => boolean,
    what: string,
    from = 0,
  ): Promise<ReadonlyMap<ObjectKey, T>> {
    for (let i = from; ; i++) {
      while (i >= this.all.length) await within(new Promise<void>((resolve) => this.#wakers.add(resolve)), what);
      const seen = this.all[i]!;
      if (seen.pool === pool && test(seen.members)) return seen.members;
    }
  }
}

const keysOf = (members: ReadonlyMap<ObjectKey, unknown>): string[] => [...members.keys()].sort();
const any = (): boolean => true;

async function apiServer(): Promise<ApiServer> {
  const s = await startApiServer({ timeoutSecondsScaleMs: SECOND_MS });
  cleanups.push(() => s.close());
  return s;
}

function kubeConfigFor(s: ApiServer): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(s.kubeconfig());
  return kubeConfig;
}

type Probe = (path: string) => Promise<{ status: number; body: string }>;

/** Serves `healthHandler(loop)` on a loopback port, as a Deployment's probes would reach it. */
async function serveProbes(loop: { health(): LoopHealth<string> }): Promise<Probe> {
  const server = await serveOnLoopback(healthHandler(loop));
  cleanups.push(() => server.close());
  return async (path) => {
    const { status, body } = await httpGet(`${server.url}${path}`, { timeoutMs: WAIT_MS });
    return { status, body };
  };
}

/** A loop over `source`, keyed by the `pool` label, recording its reconciles; its probes served. */
async function loopOver<T extends KubernetesObjectView & { metadata: { labels: Record<string, string> } }>(
  source: Source<T>,
  options: Partial<ReconcileLoopOptions<T, string>> & { hang?: (pool: string) => boolean } = {},
) {
  const { hang, ...rest } = options;
  const reconciles = new Reconciles<T>();
  const loop = new ReconcileLoop<T, string>({
    source,
    keyMap: (object) => object.metadata.labels['pool'],
    reconcile: async (pool, { members }) => {
      reconciles.record(pool, members);
      if (hang?.(pool) === true) await new Promise(() => {}); // ignores its signal: never settles
    },
    sources: { syncTimeoutMs: WAIT_MS },
    shutdown: { timeoutMs: 200 },

    ...rest,
    health: { sourceFailingMs: 1, ...rest.health },
  });
  cleanups.push(async () => void (await loop.stop()));
  const probe = await serveProbes(loop);
  return { loop, reconciles, probe };
}

/** The embedded apiserver with engines (2) and trainers (1) in {@link NS}; a loop over a pod reflector on it. */
async function podSetup(
  o: {
    reflector?: Partial<ReflectorOptions<Pod>>;
    loop?: Parameters<typeof loopOver<Pod>>[1];
    wrap?: (r: Reflector<Pod>) => Source<Pod>;
    server?: ApiServer;
  } = {},
) {
  const s = o.server ?? (await apiServer());
  if (o.server === undefined) {
    s.seedPods(2, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    s.seedPods(1, { namespace: NS, labels: { pool: 'trainers' }, namePrefix: 'trainer' });
  }
  const logger = recordingLogger();
  const reflector = podReflector({
    kubeConfig: kubeConfigFor(s),
    ...SCOPE,
    clock: fastClock,
    random: () => 0,
    logger,
    ...o.reflector,
  });
  return { server: s, reflector, logger, ...(await loopOver<Pod>(o.wrap?.(reflector) ?? reflector, o.loop)) };
}

/** The readiness checks in `/readyz?verbose`'s line format, so one pattern matches both. */
const checkLines = (health: LoopHealth<string>): string =>
  health.ready.checks.map((c) => (c.ok ? `[+]${c.name} ok` : `[-]${c.name} failed: ${c.reason ?? 'failed'}`)).join('\n');

/** Readiness is red in `loop.health()` for `reason`, and `/readyz` over HTTP answers 500 naming it. */
async function expectNotReady(loop: { health(): LoopHealth<string> }, probe: Probe, reason: RegExp): Promise<LoopHealth<string>> {
  const health = await vi.waitFor(() => {
    const h = loop.health();
    expect(h.ready.ok).toBe(false);
    expect(checkLines(h)).toMatch(reason);
    return h;
  }, poll);
  await vi.waitFor(async () => {
    const readyz = await probe('/readyz?verbose');
    expect(readyz.status).toBe(500);
    expect(readyz.body).toMatch(reason);
    expect(readyz.body).toContain('readyz check failed');
  }, poll);
  return health;
}

/** Readiness is back: `loop.health()` is ready and `/readyz` answers 200 `ok`. */
async function expectReady(loop: { health(): LoopHealth<string> }, probe: Probe): Promise<void> {
  await vi.waitFor(() => expect(loop.health().ready.ok).toBe(true), poll);
  await vi.waitFor(async () => expect(await probe('/readyz')).toEqual({ status: 200, body: 'ok' }), poll);
}

/** The loop's store holds exactly what a fresh LIST returns (keys and resourceVersions), minus the quarantined keys. */
async function expectStoreEqualsFreshList(
  loop: { store: { snapshot(): ReadonlyMap<ObjectKey, KubernetesObjectView> } },
  s: ApiServer,
  resource: ApiResource,
  scope: ListWatchScope,
  quarantined: readonly string[] = [],
): Promise<void> {
  await vi.waitFor(
    async () => {
      const fresh = await new KubeApiClient(kubeConfigFor(s), resource).list({ ...scope, signal: AbortSignal.timeout(WAIT_MS) });
      const expected: Record<string, string | undefined> = {};
      for (const item of fresh.items as KubernetesObjectView[]) {
        const key = `${item.metadata.namespace}/${item.metadata.name}`;
        if (!quarantined.includes(key)) expected[key] = item.metadata.resourceVersion;
      }
      const actual = Object.fromEntries(
        // A quarantined key holds its last good version (or nothing): the caller checks it.
        [...loop.store.snapshot()]
          .filter(([key]) => !quarantined.includes(key))
          .map(([key, object]) => [key, object.metadata.resourceVersion]),
      );
      expect(actual).toEqual(expected);
    },
    { timeout: WAIT_MS, interval: 20 },
  );
}

/** Nothing else stopped: a new trainer created now is reconciled. */
async function expectStillFlowing(s: ApiServer, reconciles: Reconciles<Pod>, name: string): Promise<void> {
  const from = reconciles.mark();
  s.createPod({ metadata: { name, namespace: NS, labels: { pool: 'trainers' } } });
  await reconciles.until('trainers', (members) => members.has(`${NS}/${name}`), `the reconcile that sees ${name}`, from);
}

/** Forces a relist of a synced reflector: the next WATCH is answered 410, after the open one is dropped mid-change. */
function forceRelist(s: ApiServer, missed: () => void): void {
  s.failNext({ verb: 'watch', status: 410 });
  s.stallWatches(); // what `missed` writes is held back, then lost with the connection
  missed();
  s.dropWatches();
}

// Real time on a shared machine: a scenario takes about a second, the bound leaves room for a loaded one.
it("[loop: start always settles] the reflector's default LIST deadline is below the default sync timeout, so a hung first LIST is cut (and becomes the SyncTimeoutError's cause) before start() gives up", () => {
  expect(DEFAULT_LIST_TIMEOUT_MS).toBeLessThan(DEFAULT_SYNC_TIMEOUT_MS);
  // At least one retry of the LIST fits: the deadline, the first backoff (1 s), and the retried LIST's start.
  expect(DEFAULT_LIST_TIMEOUT_MS + 1_000).toBeLessThan(DEFAULT_SYNC_TIMEOUT_MS);
});

describe('fail loudly, never stall: ReconcileLoop + reflector + embedded apiserver + probes over HTTP', {
  timeout: 30_000,
}, () => {
  it('[loop: start always settles] a first LIST answered 400 (a selector the apiserver cannot parse): start() rejects at once with the Status, /readyz and /healthz are 500 naming it, nothing is left open; the fixed selector syncs to a fresh LIST (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      logger,
    } = await podSetup({ reflector: { labelSelector: 'pool in (' }, loop: { sources: { syncTimeoutMs: 60_000 } } });
    // Bounded by WAIT_MS, far below the 60 s sync timeout: the rejection does not wait for it.
    const error = await within(
      loop.start().then(
        () => undefined,
        (e: unknown) => e,
      ),
      'start() to reject',
    );
    expect(error).toMatchObject({
      code: 'RL_REFLECTOR_LIST_REJECTED',
      permanent: true,
      statusCode: 400,
      status: { code: 400, reason: 'BadRequest' },
      cause: { verb: 'list' },
    });
    const health = loop.health();
    expect(health).toMatchObject({ state: 'stopped', synced: false, error });
    expect(health.sources['pods']).toMatchObject({ permanentError: error, lastError: error, synced: false });
    expect(health.alive.ok).toBe(false);
    await expectNotReady(loop, probe, /source:pods failed: failed permanently: .*400/);
    expect((await probe('/healthz?verbose')).body).toMatch(/\[-\]loop failed: ended by a failure: .*400/);
    expect(logger.entries.filter((e) => e.level === 'error')).toHaveLength(1);
    expect(s.requestCounts()).toMatchObject({ list: 1, watch: 0 });
    expect(s.openWatchCount).toBe(0);

    // Healed = the configuration fixed: a loop with a parseable selector syncs against the same server.
    const fixed = await podSetup({ server: s });
    await fixed.loop.start();
    await expectReady(fixed.loop, fixed.probe);
    expect(keysOf(await fixed.reconciles.until('engines', any, 'the engines'))).toEqual(['pool-a/engine-0', 'pool-a/engine-1']);
    await expectStoreEqualsFreshList(fixed.loop, s, podResource, SCOPE);
  });

  it('[loop: probes] a first LIST answered 403 three times: /readyz is 500 with the Forbidden Status and health() carries it while the reflector retries; then start() resolves, readiness returns, the store equals a fresh LIST (embedded apiserver)', async () => {
    const s = await apiServer();
    s.seedPods(2, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    s.seedPods(1, { namespace: NS, labels: { pool: 'trainers' }, namePrefix: 'trainer' });
    s.failNext({ verb: 'list', status: 403, times: 3 });
    const { loop, probe, reconciles } = await podSetup({ server: s, reflector: { retry: { initialMs: 2_000, maxMs: 30_000 } } }); // 100, 200, 400 ms
    const starting = loop.start();
    const red = await expectNotReady(loop, probe, /source:pods failed: not synced yet; failing for .*403 Forbidden/);
    expect(red.sources['pods']?.lastError).toMatchObject({
      statusCode: 403,
      status: { code: 403, reason: 'Forbidden' },
      verb: 'list',
    });
    expect(red.state).toBe('starting');

    await within(starting, 'start() once the RBAC heals');
    await expectReady(loop, probe);
    expect(loop.health().sources['pods']).toMatchObject({ lastError: undefined, consecutiveFailures: 0 });
    expect(keysOf(await reconciles.until('engines', any, 'the engines'))).toEqual(['pool-a/engine-0', 'pool-a/engine-1']);
    expect(s.requestCounts().list).toBe(4);
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] RBAC revoked after sync (the relist is forbidden): readiness goes red with the 403 while the loop keeps reconciling from its cache; healed, the relist drops the missed deletion and readiness returns (embedded apiserver)', async () => {
    const { server: s, loop, probe, reconciles } = await podSetup({ reflector: { retry: { initialMs: 1_000, maxMs: 30_000 } } }); // 50 ms, doubling
    await loop.start();
    await expectReady(loop, probe);
    await s.waitForWatches(1, WAIT_MS);
    s.failNext({ verb: 'list', status: 403, times: 3 });
    forceRelist(s, () => s.deletePod(NS, 'trainer-0'));

    const red = await expectNotReady(loop, probe, /source:pods failed: failing for .*403 Forbidden/);
    expect(red).toMatchObject({ state: 'running', synced: true });
    expect(red.alive.ok).toBe(true); // failing, not wedged: no restart yet
    const from = reconciles.mark();
    loop.enqueue('engines'); // the worker still reconciles from the cache it has
    expect(keysOf(await reconciles.until('engines', any, 'a reconcile while the relist is forbidden', from))).toEqual([
      'pool-a/engine-0',
      'pool-a/engine-1',
    ]);

    await reconciles.until('trainers', (members) => members.size === 0, 'the relist removing trainer-0', from);
    await expectReady(loop, probe);
    expect(s.requestCounts().list).toBe(5); // the listing, three 403s, the relist
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] a relist that hangs after sync is cut at listTimeoutMs: readiness goes red with the LIST timeout, the worker keeps reconciling, the retry heals the store (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      reconciles,
      reflector,
    } = await podSetup({ reflector: { listTimeoutMs: 10_000, retry: { initialMs: 2_000, maxMs: 30_000 } } }); // 500 ms deadline: a loaded CI machine's honest LIST fits
    await loop.start();
    await s.waitForWatches(1, WAIT_MS);
    s.failNext({ verb: 'list', status: 'hang', times: 2 });
    forceRelist(s, () => s.createPod({ metadata: { name: 'engine-2', namespace: NS, labels: { pool: 'engines' } } }));

    const red = await expectNotReady(loop, probe, /source:pods failed: failing for .*LIST did not complete within 10000 ms/);
    expect(red.sources['pods']?.lastError).toMatchObject({ code: 'RL_REFLECTOR_LIST_TIMEOUT', timeoutMs: 10_000 });
    const from = reconciles.mark();
    loop.enqueue('trainers');
    await reconciles.until('trainers', any, 'a reconcile while the relist hangs', from);

    const healed = await reconciles.until(
      'engines',
      (members) => members.has('pool-a/engine-2'),
      'the relist after the hung ones',
      from,
    );
    expect(keysOf(healed)).toEqual(['pool-a/engine-0', 'pool-a/engine-1', 'pool-a/engine-2']);
    // The two hung LISTs were cut; on a heavily loaded machine an honest LIST may be cut too.
    expect(reflector.stats.listTimeouts).toBeGreaterThanOrEqual(2);
    await expectReady(loop, probe);
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] a rejected cursor (a bookmark "abc", then the server\'s answer to the WATCH — 500 "resourceVersion: Invalid value", as kube-apiserver 1.35): readiness red with it, the cursor is dropped, the relist restores the missed changes (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      reconciles,
      reflector,
    } = await podSetup({ reflector: { retry: { initialMs: 10_000, maxMs: 30_000 } } }); // 500 ms before each retry
    await loop.start();
    await s.waitForWatches(1, WAIT_MS);
    s.injectWatchFrame({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: 'abc' } } });
    await vi.waitFor(() => expect(reflector.resourceVersion).toBe('abc'), poll);
    const from = reconciles.mark();
    s.stallWatches();
    s.deletePod(NS, 'engine-0');
    s.createPod({ metadata: { name: 'engine-9', namespace: NS, labels: { pool: 'engines' } } });
    s.dropWatches(); // the reopen from "abc" is refused (kube-apiserver answers 500 "resourceVersion: Invalid value")

    const red = await expectNotReady(loop, probe, /source:pods failed: failing for .*500: resourceVersion: Invalid value/);
    expect(red.sources['pods']?.lastError).toMatchObject({ statusCode: 500, verb: 'watch' });
    const relisted = await reconciles.until(
      'engines',
      (members) => members.has('pool-a/engine-9'),
      'the relist after the rejected cursor',
      from,
    );
    expect(keysOf(relisted)).toEqual(['pool-a/engine-1', 'pool-a/engine-9']);
    expect(reflector.resourceVersion).not.toBe('abc');
    expect(s.requestCounts().list).toBe(2);
    await expectReady(loop, probe);
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] a skipped frame (readable cursor, unreadable type) is logged and its lost update is restored by the heal relist within a second; readiness stays green (a skip is not a failure) (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      reconciles,
      reflector,
      logger,
    } = await podSetup({ reflector: { retry: { initialMs: 4_000, maxMs: 30_000 } } }); // heal after 200 ms
    await loop.start();
    await s.waitForWatches(1, WAIT_MS);
    const next = String(s.revision + 1);
    s.injectWatchFrame({
      type: 'Modified',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'engine-0', namespace: NS, resourceVersion: next } },
    });
    await vi.waitFor(() => expect(reflector.resourceVersion).toBe(next), poll);
    const skipped = logger.entries.find((e) => e.message.startsWith('skipped a watch frame'));
    expect(skipped).toMatchObject({ level: 'warn', fields: { frameType: 'Modified' } });
    const from = reconciles.mark();
    s.stallWatches(); // the real update at `next` is lost with the connection; the reopen from `next` skips it
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    s.dropWatches();

    await reconciles.until(
      'engines',
      (members) => members.get('pool-a/engine-0')?.spec.nodeName === 'node-a',
      'the heal relist',
      from,
    );
    expect(reflector.stats).toMatchObject({ skippedFrames: 1, healRelists: 1 });
    await expectReady(loop, probe);
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] an oversized frame (1 MB against a 64 KiB cap) tears the watch down: readiness red naming maxFrameBytes, then the relist restores the update behind it (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      reconciles,
      reflector,
    } = await podSetup({ reflector: { maxFrameBytes: 64 * 1024, retry: { initialMs: 10_000, maxMs: 30_000 } } });
    await loop.start();
    await s.waitForWatches(1, WAIT_MS);
    const from = reconciles.mark();
    s.injectMalformedFrame(`{"type":"MODIFIED","object":{"metadata":{"annotations":{"x":"${'y'.repeat(1024 * 1024)}`); // never a whole frame
    s.kubelet.bind(NS, 'engine-1', 'node-b');

    const red = await expectNotReady(loop, probe, /source:pods failed: failing for .*maxFrameBytes/);
    expect(red.sources['pods']?.lastError).toMatchObject({ name: 'WatchFrameTooLargeError' });
    await reconciles.until(
      'engines',
      (members) => members.get('pool-a/engine-1')?.spec.nodeName === 'node-b',
      'the relist after the oversized frame',
      from,
    );
    expect(reflector.stats.relists).toBe(1);
    await s.waitForWatches((open) => open === 1, WAIT_MS); // the torn-down connection closed on the server
    await expectReady(loop, probe);
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    await expectStillFlowing(s, reconciles, 'trainer-9');
  });

  it('[loop: health] a poison custom resource (the server accepts it, the zod view does not) is quarantined and listed in health; readiness stays green, every other object is reconciled, fixed it is reconciled; a cached object turning poison keeps its last good version and ctx.quarantined says so until a good version lifts it; nothing relists (embedded apiserver)', async () => {
    const s = await apiServer();
    const ref = s.registerResource({ group: 'miles.io', version: 'v1alpha1', kind: 'TrainerCell', plural: 'trainercells' });
    const resource = { group: 'miles.io', version: 'v1alpha1', plural: 'trainercells' };
    const cell = (name: string, replicas: unknown, pool = 'cells') => ({
      apiVersion: 'miles.io/v1alpha1',
      kind: 'TrainerCell',
      metadata: { name, namespace: NS, labels: { pool } },
      spec: { replicas },
    });
    const setReplicas = (name: string, replicas: unknown) =>
      s.updateObject(ref, NS, name, (o) => {
        (o['spec'] as { replicas: unknown }).replicas = replicas;
      });
    s.createObject(ref, cell('cell-0', 1));
    s.createObject(ref, cell('cell-bad', 'two'));
    s.createObject(ref, cell('other-0', 1, 'others'));
    const schema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
    const logger = recordingLogger();
    const reflector = kubeReflector({
      name: 'cells',
      kubeConfig: kubeConfigFor(s),
      resource,
      schema,
      namespace: NS,
      clock: fastClock,
      random: () => 0,
      logger,
    });
    /** Per reconcile of the cells pool: what ctx.quarantined said (key, source, first issue). */
    const told: Array<Array<[string, string, string | undefined]>> = [];
    let recordMembers: (pool: string, members: ReadonlyMap<string, z.output<typeof schema>>) => void = () => {};
    const { loop, probe, reconciles } = await loopOver<z.output<typeof schema>>(reflector, {
      reconcile: (pool, ctx) => {
        if (pool === 'cells') told.push(ctx.quarantined.map((q) => [q.key, q.source, q.issues[0]]));
        recordMembers(pool, ctx.members);
      },
    });
    recordMembers = (pool, members) => reconciles.record(pool, members);
    const quarantined = () => (loop.health().sources['cells']?.quarantined ?? []).map((q) => q.key);

    await loop.start(); // a poison object does not hold back the sync
    expect(keysOf(await reconciles.until('cells', any, 'the cells'))).toEqual(['pool-a/cell-0']);
    expect(loop.health().sources['cells']?.quarantined).toEqual([
      expect.objectContaining({
        key: 'pool-a/cell-bad',
        resourceVersion: s.getObject(ref, NS, 'cell-bad')?.metadata.resourceVersion,
        issues: [expect.stringMatching(/^spec\.replicas: /)],
      }),
    ]);
    expect(logger.entries.find((e) => e.level === 'error')?.fields).toMatchObject({ key: 'pool-a/cell-bad' });
    await expectReady(loop, probe); // the controller is working: probes stay green
    expect((await probe('/healthz')).status).toBe(200);

    let from = reconciles.mark();
    s.createObject(ref, cell('cell-1', 2)); // others keep flowing
    setReplicas('other-0', 5);
    expect(keysOf(await reconciles.until('cells', (m) => m.has('pool-a/cell-1'), 'cell-1', from))).toEqual([
      'pool-a/cell-0',
      'pool-a/cell-1',
    ]);
    expect(
      (await reconciles.until('others', (m) => m.get('pool-a/other-0')?.spec.replicas === 5, 'other-0 updated', from)).size,
    ).toBe(1);

    from = reconciles.mark();
    setReplicas('cell-bad', 3); // fixed: it enters the store and is reconciled
    const fixed = await reconciles.until('cells', (m) => m.has('pool-a/cell-bad'), 'cell-bad fixed', from);
    expect(fixed.get('pool-a/cell-bad')?.spec.replicas).toBe(3);
    expect(quarantined()).toEqual([]);

    from = reconciles.mark();
    setReplicas('cell-1', 'x'); // a cached object turns poison: quarantined, but not deleted — its last good version stays
    s.createObject(ref, cell('cell-2', 1)); // the next event of the pool: reconcile still sees cell-1, and is told
    const after = await reconciles.until('cells', (m) => m.has('pool-a/cell-2'), 'cell-2', from);
    expect(keysOf(after)).toEqual(['pool-a/cell-0', 'pool-a/cell-1', 'pool-a/cell-2', 'pool-a/cell-bad']);
    expect(after.get('pool-a/cell-1')?.spec.replicas).toBe(2);
    expect(told.at(-1)).toEqual([['pool-a/cell-1', 'cells', expect.stringMatching(/^spec\.replicas: /)]]);
    expect(quarantined()).toEqual(['pool-a/cell-1']);
    expect(loop.health().ready.ok).toBe(true);
    expect(reflector.stats).toMatchObject({ lists: 1, relists: 0 });
    await expectStoreEqualsFreshList(loop, s, resource, { namespace: NS }, quarantined());

    from = reconciles.mark();
    setReplicas('cell-1', 4); // a later good version lifts it
    const lifted = await reconciles.until('cells', (m) => m.get('pool-a/cell-1')?.spec.replicas === 4, 'cell-1 lifted', from);
    expect(lifted.size).toBe(4);
    expect(told.at(-1)).toEqual([]);
    expect(quarantined()).toEqual([]);
  });

  it('[loop: GracefulShutdownTimeout] a reconcile that never settles: readiness and liveness go red naming it, the worker moves on past reconcileTimeoutMs so other pools keep flowing, and stop({ graceMs }) resolves and reports it (embedded apiserver)', async () => {
    const {
      server: s,
      loop,
      probe,
      reconciles,
    } = await podSetup({
      loop: {
        hang: (pool) => pool === 'engines',
        controller: { reconcileTimeoutMs: 300 },
        retry: { backoff: { initialMs: 60_000, maxMs: 1_000_000 } },
        health: { reconcileStuckMs: 100 },
      },
    });
    await loop.start();
    await reconciles.until('engines', any, 'the hung reconcile');
    const red = await expectNotReady(loop, probe, /\[-\]reconcile failed: reconcile of engines running for \d+ s/);
    expect(red.inFlight.map((c) => c.parentKey)).toContain('engines');
    await vi.waitFor(
      async () =>
        expect(await probe('/healthz?verbose')).toMatchObject({
          status: 500,
          body: expect.stringContaining('[-]worker failed: reconcile of engines running for'),
        }),
      poll,
    );

    await expectStillFlowing(s, reconciles, 'trainer-9'); // after the 300 ms reconcile timeout the worker moved on
    await expectStoreEqualsFreshList(loop, s, podResource, SCOPE);
    const report = await within(loop.stop({ graceMs: 200 }), 'stop() after its grace');
    expect(report).toEqual({ abandoned: ['engines'], abandonedSources: [] });
    expect(loop.state).toBe('stopped');
    await s.waitForWatches((open) => open === 0, WAIT_MS);
  });

  it('[loop: GracefulShutdownTimeout] a source stream that fails and whose return() never settles: stop({ graceMs }) still resolves, names the source in abandonedSources, and the watch is closed on the server (embedded apiserver)', async () => {
    let broken = false;
    // The reflector's stream behind an iterator whose close hangs forever (a source that ignores return()).
    const hangingClose = (inner: Reflector<Pod>): Source<Pod> => ({
      name: inner.name,
      health: () => inner.health(),
      open(signal) {
        const iterator = inner.open(signal)[Symbol.asyncIterator]();
        const stream: AsyncIterableIterator<SourceEvent<Pod>> = {
          [Symbol.asyncIterator]: () => stream,
          next: () => (broken ? Promise.reject(new Error('the stream broke')) : iterator.next()),
          return: () => new Promise<IteratorResult<SourceEvent<Pod>>>(() => {}),
        };
        return stream;
      },
    });
    const { server: s, loop, probe, reconciles } = await podSetup({ wrap: hangingClose });
    await loop.start();
    await expectReady(loop, probe);
    await s.waitForWatches(1, WAIT_MS);
    broken = true;
    await expectStillFlowing(s, reconciles, 'trainer-9'); // this event is delivered; the next read breaks the stream
    const report = await within(loop.stop({ graceMs: 200 }), 'stop() with the close hung');
    expect(report).toEqual({ abandoned: [], abandonedSources: ['pods'] });
    expect(loop.state).toBe('stopped');
    await expectNotReady(loop, probe, /\[-\]source:pods failed: failing for .*the stream broke/); // the break reached health too
    expect(checkLines(loop.health())).toContain('[-]started failed: loop is stopped');
    await s.waitForWatches((open) => open === 0, WAIT_MS); // the abort reached the reflector's watch all the same
  });
});
