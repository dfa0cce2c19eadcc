import { CoreV1Api, KubeConfig, makeInformer, type Informer, type ObjectCache, type V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';

let server: ApiServer;
let kc: KubeConfig;
let api: CoreV1Api;
let informer: (Informer<V1Pod> & ObjectCache<V1Pod>) | undefined;

beforeEach(async () => {
  server = await startApiServer();
  kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  api = kc.makeApiClient(CoreV1Api);
});
afterEach(async () => {
  await informer?.stop();
  informer = undefined;
  await server.close();
});

/** Collects informer callbacks and lets a test await the next one of a kind. */
class Events {
  readonly seen: string[] = [];
  readonly #waiters: Array<{ want: string; resolve: () => void }> = [];
  record(kind: string, pod: V1Pod): void {
    const entry = `${kind} ${pod.metadata?.name ?? ''}`;
    this.seen.push(entry);
    for (const w of [...this.#waiters]) {
      if (w.want === entry) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }
  waitFor(entry: string, timeoutMs = 5_000): Promise<void> {
    if (this.seen.includes(entry)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no "${entry}" within ${timeoutMs} ms; saw ${JSON.stringify(this.seen)}`)),
        timeoutMs,
      );
      this.#waiters.push({
        want: entry,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
    });
  }
}

function startInformer(): Events {
  const events = new Events();
  const inf = makeInformer<V1Pod>(kc, '/api/v1/namespaces/default/pods', () => api.listNamespacedPod({ namespace: 'default' }));
  inf.on('add', (p) => events.record('add', p));
  inf.on('update', (p) => events.record('update', p));
  inf.on('delete', (p) => events.record('delete', p));
  inf.on('error', (e) => events.record('error', { metadata: { name: String(e) } }));
  informer = inf;
  return events;
}

describe('@kubernetes/client-node 1.4 against the embedded apiserver', () => {
  it('[testing: client-node typed API] CoreV1Api create, read, list, patch, delete; errors carry the Status', async () => {
    const created = await api.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'p', labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } },
    });
    expect(created.metadata?.uid).toBeDefined();
    expect(created.status?.phase).toBe('Pending');
    const list = await api.listNamespacedPod({ namespace: 'default', labelSelector: 'app=x' });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['p']);
    expect(list.metadata?.resourceVersion).toBe(String(server.revision));
    const patched = await api.patchNamespacedPod({
      namespace: 'default',
      name: 'p',
      body: [{ op: 'add', path: '/metadata/labels/b', value: 'c' }],
    });
    expect(patched.metadata?.labels).toEqual({ app: 'x', b: 'c' });
    const read = await api.readNamespacedPod({ namespace: 'default', name: 'p' });
    expect(read.metadata?.resourceVersion).toBe(patched.metadata?.resourceVersion);
    await api.deleteNamespacedPod({ namespace: 'default', name: 'p' });
    const err = await api.readNamespacedPod({ namespace: 'default', name: 'p' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 404 });
    expect(JSON.parse((err as { body: string }).body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      message: 'pods "p" not found',
    });
  });

  it('[testing: client-node makeInformer] syncs the list, then sees add, update and delete from the watch', async () => {
    server.seedPods(2);
    const events = startInformer();
    await informer!.start();
    await events.waitFor('add pod-0');
    await events.waitFor('add pod-1');
    await server.waitForWatches(1);
    server.createPod({ metadata: { name: 'fresh' } });
    await events.waitFor('add fresh');
    server.kubelet.bind('default', 'fresh', 'node-a');
    await events.waitFor('update fresh');
    server.deletePod('default', 'pod-0');
    await events.waitFor('delete pod-0');
    expect(
      informer!
        .list('default')
        .map((p) => p.metadata?.name)
        .sort(),
    ).toEqual(['fresh', 'pod-1']);
    expect(server.requestCounts().list).toBe(1);
  });

  it('[testing: client-node makeInformer] recovers from a dropped watch by re-watching from its resourceVersion', async () => {
    server.seedPods(1);
    const events = startInformer();
    await informer!.start();
    await server.waitForWatches(1);
    expect(server.dropWatches()).toBe(1);
    await server.waitForRequests('watch', 2);
    await server.waitForWatches(1);
    server.createPod({ metadata: { name: 'after-drop' } });
    await events.waitFor('add after-drop');
    // Re-watched from the cursor: no second LIST was needed.
    expect(server.requestCounts().list).toBe(1);
    expect(events.seen.filter((e) => e.startsWith('error'))).toEqual([]);
  });

  it('[testing: client-node makeInformer] a compacted cursor gets the 410 ERROR frame and the informer relists', async () => {
    server.seedPods(2);
    const events = startInformer();
    await informer!.start();
    await server.waitForWatches(1);
    // Miss a delete while the watch is stalled, then make the informer's cursor unusable.
    server.stallWatches();
    server.deletePod('default', 'pod-0');
    server.compact();
    server.dropWatches();
    await events.waitFor('delete pod-0');
    expect(server.requestCounts().list).toBe(2);
    await server.waitForWatches(1);
    server.createPod({ metadata: { name: 'after-relist' } });
    await events.waitFor('add after-relist');
  });
});
