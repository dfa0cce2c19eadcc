/**
 * The syncs the memory benchmarks measure (by the one method of `memory.ts`, each in a child
 * process of its own): a pod reflector (the LIST path, paged or not, or the streaming watch-list
 * path) over the embedded apiserver, its listing applied to an `ObjectStore` with the bench's key
 * map as a loop's stream driver would; and `@kubernetes/client-node`'s informer over the same
 * server. Each resolves once its store holds every pod, the watch open and idle.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { CacheMeter, ObjectStore } from '@reconcile-loop/object-store';
import { KubeApiClient, Reflector, type InitialListMode } from '@reconcile-loop/reflector';
import { startClientNode } from './pipelines.js';
import { NAMESPACE, PARENT_LABEL } from './pods.js';

/** How the initial list is fetched in one measurement. */
export interface InitialSyncPath {
  readonly initialList: Exclude<InitialListMode, 'auto'>;
  /** LIST page size; 0 for one unpaged LIST. Ignored by watch-list. */
  readonly listPageSize: number;
  /** The reflector's deadline for one listing; its default (90 s) when absent. */
  readonly listTimeoutMs?: number;
}

/** A synced store, held until `release`. */
export interface Synced {
  readonly objects: number;
  release(): Promise<void>;
}

/** Syncs `pods` pods from `kubeconfig` along `path`. The server must hold exactly `pods` pods in the bench namespace. */
export async function syncReflector(kubeconfig: string, pods: number, path: InitialSyncPath): Promise<Synced> {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const reflector = new Reflector<Pod>({
    client: new KubeApiClient(kc, podResource),
    schema: podSchema,
    namespace: NAMESPACE,
    name: 'initial-sync',
    initialList: path.initialList,
    listPageSize: path.listPageSize,
    ...(path.listTimeoutMs !== undefined && { listTimeoutMs: path.listTimeoutMs }),
  });
  const store = new ObjectStore<Pod, string>({ keyMap: (pod) => pod.metadata.labels[PARENT_LABEL] });
  const controller = new AbortController();
  const iterator = reflector.open(controller.signal)[Symbol.asyncIterator]();
  const release = async (): Promise<void> => {
    controller.abort();
    await iterator.return?.();
  };
  try {
    const first = await iterator.next();
    if (first.done || first.value.type !== 'replace')
      throw new Error(`initial sync (${path.initialList}): expected a replace first`);
    // Through the store's meter, as a loop writes every store (its recount walks the listing once).
    new CacheMeter(store).apply(first.value);
    if (store.size !== pods)
      throw new Error(`initial sync (${path.initialList}): the store holds ${store.size} pods, expected ${pods}`);
    const expected = path.initialList === 'watch-list' ? { watchLists: 1, lists: 0 } : { watchLists: 0, lists: 1 };
    const stats = reflector.stats;
    if (stats.watchLists !== expected.watchLists || stats.lists !== expected.lists)
      throw new Error(`initial sync (${path.initialList}): took the wrong path ${JSON.stringify(stats)}`);
    // Ask for the watch (the generator opens it on the next pull) and let in-flight chunks land.
    const pending = iterator.next();
    pending.catch(() => {});
    await delay(50);
  } catch (error) {
    await release();
    throw error;
  }
  return {
    get objects() {
      return store.size;
    },
    release,
  };
}

/** `@kubernetes/client-node`'s informer (`makeInformer`'s `ListWatch` + `Watch`) listing `pods` pods. */
export async function syncClientNode(kubeconfig: string, pods: number): Promise<Synced> {
  const pipeline = startClientNode({ kubeconfig, frames: 0 });
  try {
    await pipeline.synced;
    if (pipeline.cacheSize() !== pods)
      throw new Error(`client-node sync: the cache holds ${pipeline.cacheSize()} pods, expected ${pods}`);
    await delay(50);
  } catch (error) {
    await pipeline.stop();
    throw error;
  }
  return {
    get objects() {
      return pipeline.cacheSize();
    },
    release: () => pipeline.stop(),
  };
}
