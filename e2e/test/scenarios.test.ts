import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { Pod } from '@reconcile-loop/k8s-types';
import { ReconcileLoop } from '@reconcile-loop/loop';
import { podReflector, type Reflector, type ReflectorOptions } from '@reconcile-loop/reflector';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeletEmulator, eventually as pollUntil, podManifest, type ControlPlane, type Endpoint } from '../src/index.js';
import { e2eAvailability, useE2eEnvironment, type E2eEnvironment } from '../src/environment.js';

// The scenarios, through the public API of the reflector and the loop. The shared
// suite runs each scenario against the real kube-apiserver and the embedded apiserver of
// @reconcile-loop/testing from this one file, so the simulator's fidelity is measured; the
// scenarios that need etcd or process control run against the real one only. The 504 scenario
// runs against the embedded apiserver only: kube-apiserver 1.35 holds a plain WATCH from a future
// resourceVersion silently (504 comes only for a LIST with resourceVersion or a watch list,
// which provisioning.test.ts pins), so a LIST-then-WATCH reflector cannot meet it there.
// After every scenario the loop's store must equal a fresh LIST (same keys, same resourceVersions).

const POOL = 'e2e/pool';
const NODE = 'e2e-node';

/** A server the scenarios run against, with the writes a kubelet would make. */
interface Backend {
  readonly name: 'kube-apiserver' | 'embedded';
  /** Where the reflector connects (the watch-cached apiserver for the real one). */
  readonly endpoint: { kubeconfig: string };
  readonly core: CoreV1Api;
  createNamespace(ns: string): Promise<void>;
  bind(ns: string, name: string): Promise<void>;
  runningReady(ns: string, name: string, ready: boolean): Promise<void>;
  restartContainer(ns: string, name: string): Promise<void>;
  finishDelete(ns: string, name: string): Promise<void>;
}

function kubeConfigOf(endpoint: { kubeconfig: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(endpoint.kubeconfig);
  return kc;
}

function realBackend(endpoint: Endpoint): Backend {
  const kc = kubeConfigOf(endpoint);
  const core = kc.makeApiClient(CoreV1Api);
  const kubelet = new KubeletEmulator(kc, NODE);
  let registered: Promise<unknown> | undefined;
  return {
    name: 'kube-apiserver',
    endpoint,
    core,
    async createNamespace(ns) {
      await core.createNamespace({ body: { metadata: { name: ns } } });
    },
    async bind(ns, name) {
      await (registered ??= kubelet.registerNode());
      await kubelet.bind(ns, name);
    },
    async runningReady(ns, name, ready) {
      await kubelet.setRunning(ns, name, { ready });
    },
    async restartContainer(ns, name) {
      await kubelet.restartContainer(ns, name);
    },
    async finishDelete(ns, name) {
      await kubelet.finishDelete(ns, name);
    },
  };
}

function embeddedBackend(server: ApiServer): Backend {
  const endpoint = { kubeconfig: server.kubeconfig() };
  return {
    name: 'embedded',
    endpoint,
    core: kubeConfigOf(endpoint).makeApiClient(CoreV1Api),
    async createNamespace(ns) {
      // namespaces are an API on the embedded apiserver too: a create into a missing one is 404
      server.createNamespace(ns);
    },
    async bind(ns, name) {
      server.kubelet.bind(ns, name, NODE);
    },
    async runningReady(ns, name, ready) {
      server.kubelet.setRunningReady(ns, name, { ready });
    },
    async restartContainer(ns, name) {
      server.kubelet.bumpRestartCount(ns, name);
    },
    async finishDelete(ns, name) {
      server.kubelet.finishGracefulDelete(ns, name);
    },
  };
}

/** What a pool tracker would report for one member. */
interface MemberView {
  readonly rv: string;
  readonly node: string | undefined;
  readonly phase: string | undefined;
  readonly ready: boolean;
  readonly restarts: number;
  readonly terminating: boolean;
}

interface ReconcileCall {
  readonly seq: number;
  readonly pool: string;
  readonly members: ReadonlyMap<string, MemberView>;
}

function view(pod: Pod): MemberView {
  return {
    rv: pod.metadata.resourceVersion ?? '',
    node: pod.spec.nodeName,
    phase: pod.status.phase,
    ready: pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    restarts: pod.status.containerStatuses.reduce((n, s) => n + s.restartCount, 0),
    terminating: pod.metadata.deletionTimestamp !== undefined,
  };
}

/** Real time on purpose: these wait for real processes (60 s by default here: a scenario may span a relist). */
const eventually = <T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  describeState: () => unknown,
  timeoutMs = 60_000,
): Promise<T> => pollUntil(what, probe, describeState, timeoutMs);

/** A reflector and a loop over pods carrying the pool label in one namespace, recording every reconcile. */
class Tracker {
  readonly calls: ReconcileCall[] = [];
  readonly reflector: Reflector<Pod>;
  readonly loop: ReconcileLoop<Pod, string>;
  #seq = 0;

  constructor(
    endpoint: { kubeconfig: string },
    readonly namespace: string,
    options: Partial<ReflectorOptions<Pod>> = {},
  ) {
    this.reflector = podReflector({
      kubeConfig: kubeConfigOf(endpoint),
      namespace,
      labelSelector: POOL,
      retry: { initialMs: 100, maxMs: 1_000 },
      random: () => 0,
      ...options,
    });
    this.loop = new ReconcileLoop<Pod, string>({
      source: this.reflector,
      keyMap: (pod) => pod.metadata.labels[POOL],
      sources: { syncTimeoutMs: 60_000 },
      reconcile: (pool, { members }) => {
        this.calls.push({
          seq: ++this.#seq,
          pool,
          members: new Map([...members].map(([key, pod]) => [key.split('/')[1] ?? key, view(pod)])),
        });
      },
    });
  }

  /** Marks the current end of the call log. */
  mark(): number {
    return this.#seq;
  }

  /** The first reconcile of `pool` after `mark`; it must satisfy `expected` (cache before notify). */
  async firstAfter(mark: number, pool: string): Promise<ReconcileCall> {
    return eventually(
      `a reconcile of ${pool} after #${mark}`,
      () => this.calls.find((c) => c.seq > mark && c.pool === pool),
      () => this.state(),
    );
  }

  /** Some reconcile of `pool` after `mark` satisfying `predicate`. */
  async until(
    mark: number,
    pool: string,
    predicate: (members: ReadonlyMap<string, MemberView>) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ReconcileCall> {
    return eventually(
      `${pool}: ${what}`,
      () => this.calls.find((c) => c.seq > mark && c.pool === pool && predicate(c.members)),
      () => this.state(),
      timeoutMs,
    );
  }

  /** Waits until no reconcile ran for `quietMs`, so the next write's first reconcile is caused by it. */
  async settle(quietMs = 400): Promise<void> {
    let last = this.#seq;
    let since = Date.now();
    await eventually(
      'the loop to settle',
      () => {
        if (this.#seq !== last) {
          last = this.#seq;
          since = Date.now();
        }
        return Date.now() - since >= quietMs || undefined;
      },
      () => this.state(),
    );
  }

  state(): unknown {
    return {
      cursor: this.reflector.resourceVersion,
      stats: this.reflector.stats,
      loop: this.loop.state,
      store: this.loop.store.keys(),
      lastCalls: this.calls.slice(-5).map((c) => ({ ...c, members: Object.fromEntries(c.members) })),
    };
  }
}

/** The invariant after every scenario: the store holds exactly what a fresh LIST returns, at the same resourceVersions. */
async function expectStoreMatchesList(tracker: Tracker, core: CoreV1Api): Promise<void> {
  let listed: Record<string, string> = {};
  let cached: Record<string, string> = {};
  const same = (): boolean => JSON.stringify(listed) === JSON.stringify(cached);
  await eventually(
    'store == fresh LIST',
    async () => {
      const list = await core.listNamespacedPod({ namespace: tracker.namespace, labelSelector: POOL });
      listed = Object.fromEntries(
        list.items
          .map((p) => [`${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`, p.metadata?.resourceVersion ?? ''])
          .sort(),
      );
      cached = Object.fromEntries(
        tracker.loop.store
          .keys()
          .sort()
          .map((k) => [k, tracker.loop.store.get(k)?.metadata.resourceVersion ?? '']),
      );
      return same() || undefined;
    },
    () => ({ listed, cached }),
    30_000,
  );
  expect(cached).toEqual(listed);
}

function pod(name: string, pool: string | undefined, extra: Record<string, string> = {}): ReturnType<typeof podManifest> {
  return podManifest(name, { labels: { ...(pool === undefined ? {} : { [POOL]: pool }), ...extra } });
}

function uniqueNamespace(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/** Runs `body` with a started tracker and always stops it; then checks the store against a LIST. */
async function withTracker(
  backend: Backend,
  ns: string,
  options: Partial<ReflectorOptions<Pod>>,
  body: (t: Tracker) => Promise<void>,
  listFrom: CoreV1Api = backend.core,
): Promise<Tracker> {
  const tracker = new Tracker(backend.endpoint, ns, options);
  try {
    await tracker.loop.start();
    await body(tracker);
    await expectStoreMatchesList(tracker, listFrom);
  } finally {
    await tracker.loop.stop();
  }
  return tracker;
}

const availability = e2eAvailability();

/** The scenarios that need neither etcd nor process control, run against `backend()`. */
function sharedScenarios(backend: () => Backend): void {
  it('[k8s_reflector: Reflector] initial sync with pods already present: start() resolves with every pool reconciled once from one LIST', async () => {
    const b = backend();
    const ns = uniqueNamespace('sync');
    await b.createNamespace(ns);
    for (const [name, pool] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
    ] as const)
      await b.core.createNamespacedPod({ namespace: ns, body: pod(name, pool) });
    await b.core.createNamespacedPod({ namespace: ns, body: pod('outsider', undefined) });
    const t = await withTracker(b, ns, {}, async (tracker) => {
      expect(tracker.loop.store.keys().sort()).toEqual([`${ns}/a1`, `${ns}/a2`, `${ns}/b1`]);
      await tracker.until(0, 'a', (m) => m.size === 2, 'both members');
      await tracker.until(0, 'b', (m) => m.has('b1'), 'b1');
      await tracker.settle();
    });
    expect(t.reflector.stats.lists).toBe(1);
    expect(t.calls.map((c) => c.pool).sort()).toEqual(['a', 'b']);
  });

  it('[object_store: Store] ADDED, MODIFIED and DELETED reach reconcile with the store already updated (cache before notify)', async () => {
    const b = backend();
    const ns = uniqueNamespace('events');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('p1', 'p') });
    await withTracker(b, ns, {}, async (t) => {
      await t.until(0, 'p', (m) => m.has('p1'), 'p1 listed');
      await t.settle();

      let mark = t.mark();
      const added = await b.core.createNamespacedPod({ namespace: ns, body: pod('p2', 'p') });
      const first = await t.firstAfter(mark, 'p');
      expect(first.members.get('p2')?.rv).toBe(added.metadata?.resourceVersion);
      await t.settle();

      mark = t.mark();
      const modified = await b.core.patchNamespacedPod({
        name: 'p2',
        namespace: ns,
        body: [{ op: 'add', path: '/metadata/labels/touched', value: 'yes' }],
      });
      expect((await t.firstAfter(mark, 'p')).members.get('p2')?.rv).toBe(modified.metadata?.resourceVersion);
      await t.settle();

      mark = t.mark();
      await b.core.deleteNamespacedPod({ name: 'p2', namespace: ns, gracePeriodSeconds: 0 });
      // kube-apiserver stamps deletionTimestamp (MODIFIED) before DELETED even for an unbound pod
      // at grace 0; the embedded one sends DELETED alone. Either way the first reconcile sees it.
      const afterDelete = await t.firstAfter(mark, 'p');
      expect(afterDelete.members.get('p2')?.terminating ?? 'gone').not.toBe(false);
      await t.until(mark, 'p', (m) => m.size === 1 && m.has('p1'), 'p2 deleted');
      await t.settle();

      // A pod moving to another pool is a change for both parents.
      mark = t.mark();
      await b.core.patchNamespacedPod({
        name: 'p1',
        namespace: ns,
        body: [{ op: 'replace', path: `/metadata/labels/${POOL.replace('/', '~1')}`, value: 'q' }],
      });
      await t.until(mark, 'q', (m) => m.has('p1'), 'p1 moved in');
      await t.until(mark, 'p', (m) => m.size === 0, 'p emptied');
      expect(t.loop.store.hasMembers('p')).toBe(false);
    });
  });

  it('[k8s_reflector: ListAndWatch → Run → LIST again] a watch that times out is reopened from the cursor without a LIST', async () => {
    const b = backend();
    const ns = uniqueNamespace('reopen');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('r1', 'r') });
    const t = await withTracker(b, ns, { watchTimeoutSeconds: 1 }, async (tracker) => {
      await eventually(
        'three watches',
        () => tracker.reflector.stats.watches >= 3 || undefined,
        () => tracker.state(),
        30_000,
      );
      const mark = tracker.mark();
      await b.core.createNamespacedPod({ namespace: ns, body: pod('r2', 'r') });
      await tracker.until(mark, 'r', (m) => m.has('r2'), 'r2 seen on a reopened watch');
      await eventually(
        'one more watch',
        () => tracker.reflector.stats.watches >= 4 || undefined,
        () => tracker.state(),
        30_000,
      );
    });
    expect(t.reflector.stats.lists).toBe(1);
    expect(t.reflector.stats.relists).toBe(0);
    expect(t.reflector.stats.watchFailures).toBe(0);
  });

  it('[k8s_reflector: Bookmarks] bookmarks arrive and advance the cursor past writes the selector hides', async () => {
    const b = backend();
    const ns = uniqueNamespace('bookmark');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('k1', 'k') });
    const t = await withTracker(b, ns, { watchTimeoutSeconds: 4 }, async (tracker) => {
      const hidden = await b.core.createNamespacedPod({ namespace: ns, body: pod('hidden', undefined) });
      const hiddenRv = BigInt(hidden.metadata?.resourceVersion ?? '0');
      // The cacher only sends a bookmark newer than the cursor, 2 s before each watch's deadline.
      await eventually(
        'a bookmark at or past the hidden write',
        () =>
          (tracker.reflector.stats.bookmarks >= 1 && BigInt(tracker.reflector.resourceVersion ?? '0') >= hiddenRv) || undefined,
        () => ({ hiddenRv: String(hiddenRv), ...(tracker.state() as object) }),
        45_000,
      );
      expect(tracker.loop.store.has(`${ns}/hidden`)).toBe(false);
    });
    expect(t.reflector.stats.lists).toBe(1);
  });

  it('[test layers: kind cluster → kubelet emulation] kubelet transitions: bound, Running/Ready, a restart, not ready, graceful deletion, the final delete', async () => {
    const b = backend();
    const ns = uniqueNamespace('kubelet');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('w1', 'w') });
    await withTracker(b, ns, {}, async (t) => {
      await t.until(0, 'w', (m) => m.get('w1')?.node === undefined && m.has('w1'), 'pending');
      let mark = t.mark();
      await b.bind(ns, 'w1');
      await t.until(mark, 'w', (m) => m.get('w1')?.node === NODE, 'bound');
      mark = t.mark();
      await b.runningReady(ns, 'w1', true);
      await t.until(mark, 'w', (m) => m.get('w1')?.phase === 'Running' && m.get('w1')?.ready === true, 'Running and Ready');
      mark = t.mark();
      await b.restartContainer(ns, 'w1');
      await t.until(mark, 'w', (m) => m.get('w1')?.restarts === 1, 'one restart');
      mark = t.mark();
      await b.runningReady(ns, 'w1', false);
      await t.until(mark, 'w', (m) => m.get('w1')?.ready === false && m.get('w1')?.restarts === 1, 'not ready');
      mark = t.mark();
      await b.core.deleteNamespacedPod({ name: 'w1', namespace: ns });
      await t.until(mark, 'w', (m) => m.get('w1')?.terminating === true, 'terminating (deletionTimestamp)');
      expect(t.loop.store.has(`${ns}/w1`)).toBe(true);
      mark = t.mark();
      await b.finishDelete(ns, 'w1');
      await t.until(mark, 'w', (m) => m.size === 0, 'gone');
    });
  });
}

describe.skipIf(!availability.run)('scenarios against the real kube-apiserver', () => {
  const env = useE2eEnvironment(availability);
  const backend = (): Backend => realBackend(env().endpoint);
  const controlPlane = (ctx: { skip: (note?: string) => never }): ControlPlane => {
    const cp = env().controlPlane;
    return cp ?? ctx.skip('needs etcd and process control; RECONCILE_LOOP_E2E_KUBECONFIG points at an external cluster');
  };

  describe('shared suite', () => sharedScenarios(backend));

  it('[object_store: Replace() on relist] compaction through etcd gives the uncached apiserver a real 410, the reflector relists, and pods deleted while disconnected are synthesised as deletions', async (ctx) => {
    const cp = controlPlane(ctx);
    const uncached = realBackend(cp.uncachedEndpoint);
    const writer = realBackend(cp.cachedEndpoint).core;
    const ns = uniqueNamespace('compact');
    await uncached.createNamespace(ns);
    for (const [name, pool] of [
      ['g1', 'ghost'],
      ['g2', 'ghost'],
      ['s1', 'stay'],
    ] as const)
      await writer.createNamespacedPod({ namespace: ns, body: pod(name, pool) });
    const t = await withTracker(uncached, ns, {}, async (tracker) => {
      await tracker.until(0, 'ghost', (m) => m.size === 2, 'ghost listed');
      await tracker.until(0, 'stay', (m) => m.size === 1, 'stay listed');
      await tracker.settle();
      const cursor = tracker.reflector.resourceVersion;
      // Disconnect: the uncached apiserver dies; meanwhile the whole ghost pool goes and history is compacted.
      await cp.uncached.kill();
      for (const name of ['g1', 'g2']) await writer.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 });
      await writer.createNamespacedPod({ namespace: ns, body: pod('s2', 'stay') });
      const compacted = await cp.etcd.compact();
      expect(compacted.revision).toBeGreaterThan(Number(cursor) + 1);
      const mark = tracker.mark();
      await cp.uncached.startProcess();
      await tracker.until(mark, 'ghost', (m) => m.size === 0, 'the ghost pool reconciled empty (synthesised deletions)');
      await tracker.until(mark, 'stay', (m) => m.size === 2, 's2 from the relist');
      expect(tracker.loop.store.hasMembers('ghost')).toBe(false);
      expect(tracker.loop.store.parents()).toEqual(['stay']);
    });
    expect(t.reflector.stats.relists).toBeGreaterThanOrEqual(1);
    expect(t.reflector.stats.lists).toBe(1 + t.reflector.stats.relists);
  });

  it('[k8s_reflector: BackoffManager around reconnects] the apiserver killed with SIGKILL and restarted: the loop recovers and converges', async (ctx) => {
    const cp = controlPlane(ctx);
    const b = realBackend(cp.cachedEndpoint);
    const other = realBackend(cp.uncachedEndpoint).core;
    const ns = uniqueNamespace('apikill');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('x1', 'x') });
    await b.core.createNamespacedPod({ namespace: ns, body: pod('x2', 'x') });
    const t = await withTracker(b, ns, {}, async (tracker) => {
      await tracker.until(0, 'x', (m) => m.size === 2, 'listed');
      await cp.cached.kill();
      await other.deleteNamespacedPod({ name: 'x1', namespace: ns, gracePeriodSeconds: 0 });
      await other.createNamespacedPod({ namespace: ns, body: pod('x3', 'x') });
      const mark = tracker.mark();
      await cp.cached.startProcess();
      await tracker.until(mark, 'x', (m) => !m.has('x1') && m.has('x2') && m.has('x3'), 'converged after the restart');
    });
    expect(t.reflector.stats.watchFailures + t.reflector.stats.listFailures).toBeGreaterThanOrEqual(1);
  });

  it('[k8s_reflector: BackoffManager around reconnects] etcd killed and restarted: the loop recovers and converges', async (ctx) => {
    const cp = controlPlane(ctx);
    const b = realBackend(cp.cachedEndpoint);
    const ns = uniqueNamespace('etcdkill');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('e1', 'e') });
    await withTracker(b, ns, {}, async (t) => {
      await t.until(0, 'e', (m) => m.has('e1'), 'listed');
      await cp.etcd.restart({ kill: true });
      const mark = t.mark();
      await eventually(
        'a write after the etcd restart',
        () =>
          b.core.createNamespacedPod({ namespace: ns, body: pod('e2', 'e') }).then(
            () => true,
            () => undefined,
          ),
        () => t.state(),
      );
      await b.core.deleteNamespacedPod({ name: 'e1', namespace: ns, gracePeriodSeconds: 0 });
      await t.until(mark, 'e', (m) => m.has('e2') && !m.has('e1'), 'converged after the etcd restart');
    });
  });

  it('[k8s_reflector: idle timeout (TS addition)] a silent TCP stall is caught by the idle timeout and the watch reopens from the cursor', async (ctx) => {
    const cp = controlPlane(ctx);
    const proxied = await cp.proxy(cp.cached);
    const direct = realBackend(cp.cachedEndpoint);
    const b: Backend = { ...direct, endpoint: proxied };
    const ns = uniqueNamespace('stall');
    await b.createNamespace(ns);
    await direct.core.createNamespacedPod({ namespace: ns, body: pod('t1', 't') });
    const t = await withTracker(
      b,
      ns,
      { watchTimeoutSeconds: 3, idleGraceMs: 1_000 },
      async (tracker) => {
        await tracker.until(0, 't', (m) => m.has('t1'), 'listed');
        await eventually(
          'a watch open through the proxy',
          () => tracker.reflector.stats.watches >= 1 || undefined,
          () => tracker.state(),
        );
        proxied.proxy.stall();
        await direct.core.createNamespacedPod({ namespace: ns, body: pod('t2', 't') });
        await eventually(
          'an idle timeout',
          () => tracker.reflector.stats.idleTimeouts >= 1 || undefined,
          () => tracker.state(),
          30_000,
        );
        // The stall ends: stuck connections are reset, new ones flow again.
        proxied.proxy.dropConnections();
        proxied.proxy.resume();
        const mark = tracker.mark();
        await tracker.until(mark, 't', (m) => m.has('t2'), 't2 after the stall');
      },
      direct.core,
    );
    expect(t.reflector.stats.idleTimeouts).toBeGreaterThanOrEqual(1);
    expect(t.reflector.stats.relists).toBe(0);
  });
});

describe('scenarios against the embedded apiserver (@reconcile-loop/testing)', () => {
  let server: ApiServer | undefined;
  beforeAll(async () => {
    server = await startApiServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  const embedded = (): ApiServer => {
    if (server === undefined) throw new Error('embedded apiserver not started');
    return server;
  };
  const backend = (): Backend => embeddedBackend(embedded());

  describe('shared suite', () => sharedScenarios(backend));

  it('[k8s_reflector: IsTooLargeResourceVersion] a resourceVersion from the future gives 504 and a relist', async () => {
    const b = backend();
    const ns = uniqueNamespace('future');
    await b.createNamespace(ns);
    await b.core.createNamespacedPod({ namespace: ns, body: pod('f1', 'f') });
    const t = await withTracker(b, ns, {}, async (tracker) => {
      await tracker.until(0, 'f', (m) => m.has('f1'), 'listed');
      embedded().failNext({ verb: 'watch', status: 504, inBand: true });
      embedded().dropWatches();
      await eventually(
        'a relist',
        () => tracker.reflector.stats.relists >= 1 || undefined,
        () => tracker.state(),
        30_000,
      );
      const mark = tracker.mark();
      await b.core.createNamespacedPod({ namespace: ns, body: pod('f2', 'f') });
      await tracker.until(mark, 'f', (m) => m.has('f2'), 'f2 after the relist');
    });
    expect(t.reflector.stats.lists).toBe(2);
  });

  it('[object_store: Replace() on relist] compaction while disconnected gives a 410, a relist, and synthesised deletions', async () => {
    const b = backend();
    const server = embedded();
    const ns = uniqueNamespace('compact');
    await b.createNamespace(ns);
    for (const [name, pool] of [
      ['g1', 'ghost'],
      ['g2', 'ghost'],
      ['s1', 'stay'],
    ] as const)
      await b.core.createNamespacedPod({ namespace: ns, body: pod(name, pool) });
    const t = await withTracker(b, ns, {}, async (tracker) => {
      await tracker.until(0, 'ghost', (m) => m.size === 2, 'ghost listed');
      await tracker.settle();
      server.stallWatches();
      for (const name of ['g1', 'g2']) server.deletePod(ns, name, { gracePeriodSeconds: 0 });
      await b.core.createNamespacedPod({ namespace: ns, body: pod('s2', 'stay') });
      server.compact();
      const mark = tracker.mark();
      server.dropWatches({ abrupt: true });
      server.unstallWatches();
      await tracker.until(mark, 'ghost', (m) => m.size === 0, 'the ghost pool reconciled empty');
      await tracker.until(mark, 'stay', (m) => m.size === 2, 's2 from the relist');
      expect(tracker.loop.store.parents()).toEqual(['stay']);
    });
    expect(t.reflector.stats.relists).toBeGreaterThanOrEqual(1);
  });
});
