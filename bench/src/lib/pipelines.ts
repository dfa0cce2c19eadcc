/**
 * The two pipelines under test, each started against the same apiserver and stopped cleanly:
 * (a) ours — Reflector (through client-node's KubeConfig auth) → StreamDriver → CacheMeter → ObjectStore → WorkQueue
 *     (the store written through its meter, as a loop writes every store);
 * (b) client-node's own informer — `ListWatch` + `Watch`, exactly what `makeInformer` builds.
 *
 * Both count the frames they have fully processed, so a run ends the moment the last one is in the
 * cache with its parent enqueued.
 */
import { CoreV1Api, KubeConfig, ListWatch, Watch, type KubernetesObject, type V1PodList } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { CacheMeter, ObjectStore } from '@reconcile-loop/object-store';
import { httpTransport, KubeClient } from '@reconcile-loop/kube-client';
import { KubeApiClient, Reflector, type ListWatchClient } from '@reconcile-loop/reflector';
import { StreamDriver } from '@reconcile-loop/stream-driver';
import { WorkQueue } from '@reconcile-loop/work-queue';
import { NAMESPACE, PARENT_LABEL } from './pods.js';

/** A running pipeline. */
export interface Pipeline {
  /** Resolves when the LIST is in the cache. */
  readonly synced: Promise<void>;
  /** Resolves when `frames` watch frames have been fully processed. */
  readonly done: Promise<void>;
  /** Objects in the cache now. */
  cacheSize(): number;
  /** Parent keys enqueued (deduplicated, still queued). */
  queued(): number;
  /** Stops watching and releases the connection. Idempotent. */
  stop(): Promise<void>;
}

export interface PipelineOptions {
  kubeconfig: string;
  /** Watch frames to wait for after the LIST. */
  frames: number;
  /**
   * Replay from history: the LIST is the current state, but the watch starts from this older cursor,
   * so the server streams frames it already serialized. Work per frame is unchanged; see BENCHMARKS.md.
   */
  watchFrom?: string;
  /** (a) only: `false` reads the watch through node:http instead of kube-client's bare socket (`socket-ab`). */
  watchOnBareSocket?: boolean;
  /** (a) only: kube-client's `watchBacklogReadBytes` (`backlog-ab`); its default when absent. */
  watchBacklogReadBytes?: number;
  /** (a) only, with `watchFrom`: `false` holds each LIST page's request until the page before it is read (`list-ahead-ab`). */
  listAhead?: boolean;
}

/**
 * Starts a pipeline, runs it to its last frame and stops it; returns the ms from start to the last
 * frame, after checking that every pod is cached and a parent key was enqueued.
 */
export async function timeRun(
  start: (options: PipelineOptions) => Pipeline,
  options: PipelineOptions,
  pods: number,
  label: string,
): Promise<number> {
  const begin = performance.now();
  const pipeline = start(options);
  try {
    await pipeline.synced;
    await pipeline.done;
    const ms = performance.now() - begin;
    if (pipeline.cacheSize() !== pods) throw new Error(`${label}: cache holds ${pipeline.cacheSize()} pods, expected ${pods}`);
    if (pipeline.queued() === 0) throw new Error(`${label}: no parent key was enqueued`);
    return ms;
  } finally {
    await pipeline.stop();
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

function kubeConfig(text: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  return kc;
}

const keyMap = (pod: Pod): string | undefined => pod.metadata.labels[PARENT_LABEL];

/** (a) Ours. */
export function startOurs(options: PipelineOptions): Pipeline & { store: ObjectStore<Pod, string>; reflector: Reflector<Pod> } {
  const kc = kubeConfig(options.kubeconfig);
  // As the reflector builds its client (`reflectorKubeClient`), with the watch transport's options chosen.
  const kube = new KubeApiClient(
    options.watchOnBareSocket === false || options.watchBacklogReadBytes !== undefined
      ? new KubeClient({
          kubeConfig: kc,
          maxRetries: 0,
          transport: httpTransport(kc, {
            watchOnBareSocket: options.watchOnBareSocket,
            watchBacklogReadBytes: options.watchBacklogReadBytes,
          }),
        })
      : kc,
    podResource,
  );
  // `listAhead: false`: a page is requested only once the page before it has been read, as client-go's
  // pager does (the reflector asks for the next page from inside the read of this one).
  let previousRead = Promise.resolve();
  const afterPreviousRead: typeof kube.listPage = async (request, read) => {
    await previousRead;
    let readDone!: () => void;
    previousRead = new Promise((resolve) => (readDone = resolve));
    try {
      return await kube.listPage(request, (body) => {
        try {
          return read(body);
        } finally {
          readDone();
        }
      });
    } finally {
      readDone();
    }
  };
  const client: ListWatchClient =
    options.watchFrom === undefined
      ? kube
      : {
          list: async (request) => ({ ...(await kube.list(request)), resourceVersion: options.watchFrom! }),
          // Pages read from their bytes, as the reflector reads them from a KubeApiClient.
          listPage: async (request, read) => {
            const result = await (options.listAhead === false ? afterPreviousRead(request, read) : kube.listPage(request, read));
            return result.kind === 'read'
              ? { kind: 'read', page: { ...result.page, resourceVersion: options.watchFrom! } }
              : { kind: 'exact', list: { ...result.list, resourceVersion: options.watchFrom! } };
          },
          watch: (request) => kube.watch(request),
          watchBatches: (request) => kube.watchBatches(request),
        };
  const reflector = new Reflector<Pod>({ client, schema: podSchema, namespace: NAMESPACE, name: 'bench' });
  const store = new ObjectStore<Pod, string>({ keyMap });
  const queue = new WorkQueue<string>();
  const synced = deferred();
  const done = deferred();
  let events = 0;
  const target = options.frames;
  const driver = new StreamDriver<Pod, string>({
    source: reflector,
    store: new CacheMeter(store),
    onAffected: (parents) => {
      for (const parent of parents) queue.add(parent);
      // The first event is the listing (a replace); every later one is one watch frame.
      if (events === 0) synced.resolve();
      if (events++ === target) done.resolve();
    },
  });
  if (target === 0) synced.promise.then(done.resolve, () => {});
  const controller = new AbortController();
  const running = driver.run(controller.signal).then(
    () => {
      const error = new Error(`our pipeline ended after ${events - 1} of ${target} frames`);
      synced.reject(error);
      done.reject(error);
    },
    (error: unknown) => {
      synced.reject(error);
      done.reject(error);
    },
  );
  return {
    store,
    reflector,
    synced: synced.promise,
    done: done.promise,
    cacheSize: () => store.size,
    queued: () => queue.size,
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

/** (b) @kubernetes/client-node's informer, as `makeInformer` builds it, listing through the generated client. */
export function startClientNode(options: PipelineOptions): Pipeline & { informer: ListWatch<KubernetesObject> } {
  const kc = kubeConfig(options.kubeconfig);
  const api = kc.makeApiClient(CoreV1Api);
  const queue = new WorkQueue<string>();
  const synced = deferred();
  const done = deferred();
  let frames = 0;
  const target = options.frames;
  const listFn = async (): Promise<V1PodList> => {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE });
    if (options.watchFrom !== undefined) list.metadata = { ...list.metadata, resourceVersion: options.watchFrom };
    return list;
  };
  // makeInformer is `new ListWatch(path, new Watch(kc), listFn, false)`; built by hand only to count
  // frames after ListWatch has handled each one (its own callbacks skip a frame whose
  // resourceVersion equals the cached one, so they cannot count the replay).
  const watch = new Watch(kc);
  const counting = {
    watch: (
      path: string,
      query: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, object: unknown, data: unknown) => void,
      onDone: (err: unknown) => void,
    ) =>
      watch.watch(
        path,
        query,
        (phase, object, data) => {
          callback(phase, object, data);
          if (++frames === target) done.resolve();
        },
        onDone,
      ),
  } as unknown as Watch;
  const informer = new ListWatch<KubernetesObject>(`/api/v1/namespaces/${NAMESPACE}/pods`, counting, listFn as never, false);
  const enqueue = (object: KubernetesObject): void => {
    const parent = object.metadata?.labels?.[PARENT_LABEL];
    if (parent !== undefined) queue.add(parent);
  };
  informer.on('add', enqueue);
  informer.on('update', enqueue);
  informer.on('error', (error: unknown) => {
    synced.reject(error);
    done.reject(error);
  });
  // start() resolves once the LIST is cached and the watch request is issued.
  informer.start().then(() => {
    synced.resolve();
    if (target === 0) done.resolve();
  }, synced.reject);
  return {
    informer,
    synced: synced.promise,
    done: done.promise,
    cacheSize: () => informer.list().length,
    queued: () => queue.size,
    stop: async () => {
      await informer.stop();
    },
  };
}
