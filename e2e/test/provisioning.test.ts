import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { CoordinationV1Api, CoreV1Api, KubeConfig, VersionApi, Watch, type V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  ControlPlane,
  ENV,
  featureGateArgs,
  KubeletEmulator,
  podManifest,
  probe,
  readVersions,
  type Endpoint,
} from '../src/index.js';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';

// The provisioning smoke test: the environment itself, checked with @kubernetes/client-node
// alone, before anything from packages/* relies on it.

const availability = e2eAvailability();

function client(endpoint: Endpoint): { kc: KubeConfig; core: CoreV1Api } {
  const kc = new KubeConfig();
  kc.loadFromString(endpoint.kubeconfig);
  return { kc, core: kc.makeApiClient(CoreV1Api) };
}

function statusCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

interface WatchEvent {
  readonly type: string;
  readonly object: {
    metadata?: { name?: string; resourceVersion?: string };
    code?: number;
    reason?: string;
    details?: { causes?: { reason?: string }[] };
  };
}

/** Opens a watch and resolves with its events once `done(events)` holds or the stream ends. */
async function watchUntil(
  kc: KubeConfig,
  path: string,
  query: Record<string, string | number | boolean>,
  done: (events: WatchEvent[]) => boolean,
  timeoutMs = 30_000,
): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  let controller: AbortController | undefined;
  const finished = new Promise<WatchEvent[]>((resolveEvents, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(`watch ${path}: condition not met in ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.type))}`),
        ),
      timeoutMs,
    );
    const finish = (): void => {
      clearTimeout(timer);
      resolveEvents(events);
    };
    new Watch(kc)
      .watch(
        path,
        query,
        (type, object) => {
          events.push({ type, object: object as WatchEvent['object'] });
          if (done(events)) finish();
        },
        (err: unknown) =>
          err === null || err === undefined || (err as { name?: string }).name === 'AbortError'
            ? finish()
            : (clearTimeout(timer), reject(err)),
      )
      .then((c) => (controller = c), reject);
  });
  try {
    return await finished;
  } finally {
    controller?.abort();
  }
}

function rvOf(pod: V1Pod): string {
  const rv = pod.metadata?.resourceVersion;
  if (rv === undefined) throw new Error('object without resourceVersion');
  return rv;
}

describe.skipIf(!availability.run)('provisioning smoke test (client-node only)', () => {
  const env = useE2eEnvironment(availability);
  const ns = `e2e-smoke-${randomBytes(3).toString('hex')}`;
  let nsCreated = false;

  async function namespace(core: CoreV1Api): Promise<string> {
    if (!nsCreated) {
      await core.createNamespace({ body: { metadata: { name: ns } } });
      nsCreated = true;
    }
    return ns;
  }

  it('[test layers: real apiserver, no kubelet] both apiservers are ready, report the pinned version, and verify TLS through the generated CA', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    for (const endpoint of [cp.cachedEndpoint, cp.uncachedEndpoint]) {
      const { kc } = client(endpoint);
      expect(kc.getCurrentCluster()?.skipTLSVerify ?? false).toBe(false);
      const info = await kc.makeApiClient(VersionApi).getCode();
      expect(info.gitVersion).toBe(readVersions().kubernetes);
    }
  });

  it('[e2e: one identity Lease per etcd] only the cached apiserver runs the identity Lease controller, so the apiservers of one host never fight over its Lease', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    const hook = 'poststarthook/start-kube-apiserver-identity-lease-controller';
    const hooks = async (a: typeof cp.cached) => (await probe(a.port, '/readyz?verbose', a.token)).body;
    expect(await hooks(cp.cached)).toContain(hook);
    expect(await hooks(cp.uncached)).not.toContain(hook);
    // The Lease itself: one, held by the cached apiserver's identity (`<lease name>_<uuid>`).
    const leases = client(cp.cachedEndpoint).kc.makeApiClient(CoordinationV1Api);
    const deadline = Date.now() + 30_000;
    let names: string[] = [];
    while (names.length === 0 && Date.now() < deadline) {
      const list = await leases.listNamespacedLease({
        namespace: 'kube-system',
        labelSelector: 'apiserver.kubernetes.io/identity=kube-apiserver',
      });
      names = list.items.map((l) => `${l.metadata?.name}:${l.spec?.holderIdentity}`);
      if (names.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(names).toHaveLength(1);
    const [name, holder] = names[0]!.split(':');
    expect(holder?.startsWith(`${name}_`)).toBe(true);
  });

  it('[e2e: one identity Lease per etcd] feature gates from extra arguments merge into one flag with the identity gate', () => {
    expect(featureGateArgs(['--v=2'], true)).toEqual(['--v=2']);
    expect(featureGateArgs(['--feature-gates=WatchList=false', '--v=2'], false)).toEqual([
      '--v=2',
      '--feature-gates=WatchList=false,APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false',
    ]);
    expect(featureGateArgs(['--feature-gates=A=true,B=false'], true)).toEqual(['--feature-gates=A=true,B=false']);
  });

  it('creates a namespace and a pod, lists it, and watches ADDED, MODIFIED and DELETED', async () => {
    const { kc, core } = client(env().endpoint);
    const namespaceName = await namespace(core);
    const created = await core.createNamespacedPod({
      namespace: namespaceName,
      body: podManifest('smoke-a', { labels: { app: 'smoke' } }),
    });
    const list = await core.listNamespacedPod({ namespace: namespaceName, labelSelector: 'app=smoke' });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['smoke-a']);
    const listRv = list.metadata?.resourceVersion;
    expect(listRv).toBeDefined();

    const watching = watchUntil(
      kc,
      `/api/v1/namespaces/${namespaceName}/pods`,
      { resourceVersion: rvOf(created), labelSelector: 'app=smoke' },
      (events) => events.some((e) => e.type === 'DELETED'),
    );
    await core.patchNamespacedPod({
      name: 'smoke-a',
      namespace: namespaceName,
      body: [{ op: 'add', path: '/metadata/labels/touched', value: 'yes' }],
    });
    // An unbound pod has no kubelet to wait for: the apiserver stamps deletionTimestamp
    // (one MODIFIED) and removes it at once (DELETED).
    await core.deleteNamespacedPod({ name: 'smoke-a', namespace: namespaceName });
    const events = await watching;
    expect(events.map((e) => e.type)).toEqual(['MODIFIED', 'MODIFIED', 'DELETED']);
    const stamped = events[1]?.object as V1Pod;
    expect(stamped.metadata?.deletionTimestamp).toBeDefined();
    const rvs = events.map((e) => Number(e.object.metadata?.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(new Set(rvs).size).toBe(3);
  });

  it('[test layers: real apiserver, no kubelet] after an etcd compaction the uncached apiserver answers the old resourceVersion with a real 410; the cached one still serves it', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    const uncached = client(cp.uncachedEndpoint);
    const cached = client(cp.cachedEndpoint);
    const namespaceName = await namespace(uncached.core);
    const first = await uncached.core.createNamespacedPod({
      namespace: namespaceName,
      body: podManifest('compact-a', { labels: { app: 'compact' } }),
    });
    const oldRv = rvOf(first);
    await uncached.core.createNamespacedPod({
      namespace: namespaceName,
      body: podManifest('compact-b', { labels: { app: 'compact' } }),
    });
    await uncached.core.createNamespacedPod({
      namespace: namespaceName,
      body: podManifest('compact-c', { labels: { app: 'compact' } }),
    });
    // A watch from R resumes at R+1; etcd keeps the compaction revision itself, so the
    // compaction must pass R+1 for the cursor to die: two writes after it guarantee that.
    const result = await cp.etcd.compact();
    expect(result.compacted).toBe(true);
    expect(result.revision).toBeGreaterThan(Number(oldRv) + 1);
    expect((await cp.etcd.compact(result.revision)).compacted).toBe(false);

    // A LIST at an exact compacted revision: HTTP 410 Gone.
    const listError = await uncached.core
      .listNamespacedPod({ namespace: namespaceName, resourceVersion: oldRv, resourceVersionMatch: 'Exact' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(statusCode(listError)).toBe(410);

    // A WATCH from the compacted cursor: the stream opens and carries an ERROR event with code 410.
    const path = `/api/v1/namespaces/${namespaceName}/pods`;
    const uncachedEvents = await watchUntil(uncached.kc, path, { resourceVersion: oldRv }, (events) =>
      events.some((e) => e.type === 'ERROR'),
    );
    const error = uncachedEvents.find((e) => e.type === 'ERROR');
    expect(error?.object.code).toBe(410);
    expect(error?.object.reason).toBe('Expired');

    // The watch cache still holds the window, so the same cursor is served: why the uncached apiserver exists.
    const cachedEvents = await watchUntil(cached.kc, path, { resourceVersion: oldRv, labelSelector: 'app=compact' }, (events) =>
      events.some((e) => e.object.metadata?.name === 'compact-c'),
    );
    expect(cachedEvents.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`)).toEqual(['ADDED compact-b', 'ADDED compact-c']);
  });

  it('a resourceVersion from the future gives 504 with cause ResourceVersionTooLarge on the cached apiserver', async () => {
    const { core } = client(env().endpoint);
    const namespaceName = await namespace(core);
    const current = Number((await core.listNamespacedPod({ namespace: namespaceName })).metadata?.resourceVersion);
    const error = await core
      .listNamespacedPod({
        namespace: namespaceName,
        resourceVersion: String(current + 1_000_000),
        resourceVersionMatch: 'NotOlderThan',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(statusCode(error)).toBe(504);
    const body = JSON.parse(String((error as { body?: unknown }).body)) as WatchEvent['object'];
    expect(body.details?.causes?.map((c) => c.reason)).toContain('ResourceVersionTooLarge');
  });

  it('bookmarks: the initial-events-end bookmark of a watch list, and a bookmark before a short watch times out', async () => {
    const { kc, core } = client(env().endpoint);
    const namespaceName = await namespace(core);
    await core.createNamespacedPod({
      namespace: namespaceName,
      body: podManifest('bookmark-a', { labels: { app: 'bookmark' } }),
    });
    const path = `/api/v1/namespaces/${namespaceName}/pods`;
    const initial = await watchUntil(
      kc,
      path,
      { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true, labelSelector: 'app=bookmark' },
      (events) => events.some((e) => e.type === 'BOOKMARK'),
    );
    expect(initial.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
    const bookmark = initial[1]?.object as { metadata?: { annotations?: Record<string, string> } };
    expect(bookmark.metadata?.annotations?.['k8s.io/initial-events-end']).toBe('true');

    // The cacher sends a bookmark 2 s before the watch deadline, but only with a revision newer
    // than the cursor: a write elsewhere advances it (seen through etcd progress notifications).
    const rv = (await core.listNamespacedPod({ namespace: namespaceName })).metadata?.resourceVersion ?? '0';
    const timedWatch = watchUntil(
      kc,
      path,
      { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 15 },
      (events) => events.some((e) => e.type === 'BOOKMARK'),
      30_000,
    );
    const other = await core.createNamespacedConfigMap({
      namespace: namespaceName,
      body: { metadata: { name: 'advance-revision' } },
    });
    const timed = await timedWatch;
    expect(timed.map((e) => e.type)).toEqual(['BOOKMARK']);
    expect(Number(timed[0]?.object.metadata?.resourceVersion)).toBeGreaterThanOrEqual(Number(other.metadata?.resourceVersion));
  });

  it('[test layers: kind cluster → kubelet emulation] bind to a Node, Running/Ready, a restart, graceful delete then the final delete', async () => {
    const { kc, core } = client(env().endpoint);
    const namespaceName = await namespace(core);
    const kubelet = new KubeletEmulator(kc, `e2e-node-${randomBytes(2).toString('hex')}`);
    await kubelet.registerNode();
    expect((await core.readNode({ name: kubelet.nodeName })).status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe(
      'True',
    );

    await core.createNamespacedPod({ namespace: namespaceName, body: podManifest('kubelet-a') });
    expect((await kubelet.bind(namespaceName, 'kubelet-a')).spec?.nodeName).toBe(kubelet.nodeName);

    const running = await kubelet.setRunning(namespaceName, 'kubelet-a');
    expect(running.status?.phase).toBe('Running');
    expect(running.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(running.status?.containerStatuses?.[0]?.restartCount).toBe(0);

    const restarted = await kubelet.restartContainer(namespaceName, 'kubelet-a');
    expect(restarted.status?.containerStatuses?.[0]?.restartCount).toBe(1);
    expect(restarted.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(1);
    expect(Number(rvOf(restarted))).toBeGreaterThan(Number(rvOf(running)));

    const notReady = await kubelet.setRunning(namespaceName, 'kubelet-a', { ready: false });
    expect(notReady.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(notReady.status?.containerStatuses?.[0]?.restartCount).toBe(1);

    // A bound pod is not removed by a graceful delete: it gets a deletionTimestamp and waits for its kubelet.
    await kubelet.beginDelete(namespaceName, 'kubelet-a');
    const terminating = await core.readNamespacedPod({ name: 'kubelet-a', namespace: namespaceName });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    expect(terminating.metadata?.deletionGracePeriodSeconds).toBe(30);

    await kubelet.finishDelete(namespaceName, 'kubelet-a');
    const gone = await core.readNamespacedPod({ name: 'kubelet-a', namespace: namespaceName }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(statusCode(gone)).toBe(404);
  });

  it('a TCP proxy in front of the apiserver forwards TLS, and a stall leaves requests hanging until resumed', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    const proxied = await cp.proxy();
    const { core } = client(proxied);
    const namespaceName = await namespace(core);
    expect((await core.listNamespacedPod({ namespace: namespaceName })).kind).toBe('PodList');

    proxied.proxy.stall();
    const pending = core.listNamespacedPod({ namespace: namespaceName }).then((l) => l.kind);
    let settled = false;
    void pending.finally(() => (settled = true));
    // Wait until the request's bytes reached the proxy and were held, then check nothing came back.
    for (let i = 0; i < 200 && proxied.proxy.heldBytes === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(proxied.proxy.heldBytes).toBeGreaterThan(0);
    expect(settled).toBe(false);
    expect(proxied.proxy.openConnections).toBeGreaterThan(0);

    proxied.proxy.resume();
    await expect(pending).resolves.toBe('PodList');
  });

  it('the apiserver killed with SIGKILL restarts on the same port and certificate with the data intact', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    const { core } = client(cp.cachedEndpoint);
    const namespaceName = await namespace(core);
    await core.createNamespacedPod({ namespace: namespaceName, body: podManifest('survivor') });
    const pidBefore = cp.cached.process.pid;
    await cp.cached.kill();
    expect(cp.cached.process.running).toBe(false);
    expect(cp.cached.process.lastExit?.signal).toBe('SIGKILL');
    const down = await core.readNamespacedPod({ name: 'survivor', namespace: namespaceName }).then(
      () => 'answered',
      () => 'refused',
    );
    expect(down).toBe('refused');
    await cp.cached.startProcess();
    expect(cp.cached.process.pid).not.toBe(pidBefore);
    expect((await core.readNamespacedPod({ name: 'survivor', namespace: namespaceName })).metadata?.name).toBe('survivor');
  });

  it('etcd stopped and restarted: both apiservers become ready again and keep serving the same data', async (ctx) => {
    const cp = requireControlPlane(ctx, env());
    const { core } = client(cp.uncachedEndpoint);
    const namespaceName = await namespace(core);
    await core.createNamespacedPod({ namespace: namespaceName, body: podManifest('etcd-survivor') });
    const revision = await cp.etcd.revision();
    await cp.etcd.restart({ kill: true });
    expect(await cp.etcd.revision()).toBeGreaterThanOrEqual(revision);
    // The apiservers reconnect by themselves; the uncached one reads straight from etcd.
    let name: string | undefined;
    for (let i = 0; i < 120 && name === undefined; i++) {
      name = await core.readNamespacedPod({ name: 'etcd-survivor', namespace: namespaceName }).then(
        (p) => p.metadata?.name,
        () => new Promise<undefined>((r) => setTimeout(() => r(undefined), 500)),
      );
    }
    expect(name).toBe('etcd-survivor');
    const cached = client(cp.cachedEndpoint).core;
    const list = await cached.listNamespacedPod({ namespace: namespaceName });
    expect(list.items.map((p) => p.metadata?.name)).toContain('etcd-survivor');
  });
});

describe.skipIf(!availability.run || process.env[ENV.kubeconfig] !== undefined)('keeping the environment', () => {
  it(`[env: MILES_K8S_KEEP → ${ENV.keep}] teardown with keep leaves every process up and reachable, and says how to end it`, async () => {
    const cp = await ControlPlane.start({ keep: true });
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      await cp.teardown();
    } finally {
      process.stderr.write = write;
    }
    try {
      for (const proc of [cp.etcd.process, cp.cached.process, cp.uncached.process]) expect(proc.running).toBe(true);
      expect(existsSync(cp.cachedEndpoint.kubeconfigPath)).toBe(true);
      const { core } = client(cp.cachedEndpoint);
      expect((await core.listNamespace()).kind).toBe('NamespaceList');
      const message = written.join('');
      expect(message).toContain(
        `kill ${String(cp.etcd.process.pid)} ${String(cp.cached.process.pid)} ${String(cp.uncached.process.pid)}`,
      );
      expect(message).toContain(`${ENV.kubeconfig}=${cp.cachedEndpoint.kubeconfigPath}`);
    } finally {
      await Promise.allSettled([cp.cached.stop(), cp.uncached.stop()]);
      await cp.etcd.stop();
      rmSync(cp.runDir, { recursive: true, force: true });
    }
  });
});
