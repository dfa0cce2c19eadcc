/**
 * One initial sync measured for memory: a pod reflector (the LIST path, paged or not, or the
 * streaming watch-list path) over the embedded apiserver in a child process, its events applied to
 * an `ObjectStore` with the bench's key map, as a loop's stream driver would. Reports the peak heap
 * during the sync and the heap the synced store keeps, both over the heap before it started.
 *
 * Peak: the most heap that survived a garbage collection while the sync ran (V8's `GCProfiler`:
 * `usedHeapSize` after each GC), i.e. what was live at the fullest moment a collector saw, not the
 * young garbage the allocator piles up between scavenges (which a scavenge frees for free and
 * which depends on the semi-space size, not on the code). The before-GC high-water mark is
 * reported beside it as `peakUsedBytes`, informational.
 */
import { GCProfiler } from 'node:v8';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore } from '@reconcile-loop/object-store';
import { KubeApiClient, Reflector, type InitialListMode } from '@reconcile-loop/reflector';
import { heapAfterGc } from './heap.js';
import { NAMESPACE, PARENT_LABEL } from './pods.js';

/** How the initial list is fetched in one measurement. */
export interface InitialSyncPath {
  readonly initialList: Exclude<InitialListMode, 'auto'>;
  /** LIST page size; 0 for one unpaged LIST. Ignored by watch-list. */
  readonly listPageSize: number;
}

/** One measurement, in bytes over the heap before the sync. */
export interface InitialSyncSample {
  /** Most heap live after any GC during the sync (at least the final store). */
  readonly peakBytes: number;
  /** Most heap in use just before any GC during the sync (garbage included); informational. */
  readonly peakUsedBytes: number;
  /** Heap the synced store (and the idle reflector) keeps after a forced GC. */
  readonly storeBytes: number;
  /** Garbage collections during the sync. */
  readonly gcs: number;
}

type GcStats = { heapStatistics: { usedHeapSize: number } };
type GcEntry = { gcType: string; beforeGC: GcStats; afterGC: GcStats };

/** Every GC a full one (`node --gc-global`): what the memory gate runs under. */
const GC_GLOBAL = process.execArgv.includes('--gc-global');

/** Syncs `pods` pods from `kubeconfig` along `path` and measures it. The server must hold exactly `pods` pods in the bench namespace. */
export async function measureInitialSync(kubeconfig: string, pods: number, path: InitialSyncPath): Promise<InitialSyncSample> {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const base = await heapAfterGc();
  const profiler = new GCProfiler();
  profiler.start();
  const reflector = new Reflector<Pod>({
    client: new KubeApiClient(kc, podResource),
    schema: podSchema,
    namespace: NAMESPACE,
    name: 'initial-sync',
    initialList: path.initialList,
    listPageSize: path.listPageSize,
  });
  const store = new ObjectStore<Pod, string>({ keyMap: (pod) => pod.metadata.labels[PARENT_LABEL] });
  const controller = new AbortController();
  const iterator = reflector.open(controller.signal)[Symbol.asyncIterator]();
  let profile: { statistics: GcEntry[] } | undefined;
  try {
    const first = await iterator.next();
    if (first.done || first.value.type !== 'replace')
      throw new Error(`initial sync (${path.initialList}): expected a replace first`);
    store.apply(first.value);
    profile = profiler.stop() as unknown as { statistics: GcEntry[] };
    if (store.size !== pods)
      throw new Error(`initial sync (${path.initialList}): the store holds ${store.size} pods, expected ${pods}`);
    const expected = path.initialList === 'watch-list' ? { watchLists: 1, lists: 0 } : { watchLists: 0, lists: 1 };
    const stats = reflector.stats;
    if (stats.watchLists !== expected.watchLists || stats.lists !== expected.lists)
      throw new Error(`initial sync (${path.initialList}): took the wrong path ${JSON.stringify(stats)}`);
    // The watch is open and idle; let in-flight chunks land before measuring.
    await delay(50);
    const storeBytes = (await heapAfterGc()) - base;
    const entries = profile.statistics;
    // Under --gc-global (the memory gate) only full collections are read: their after-size is live
    // heap. An IncrementalMarking step or a scavenge reports the old generation's garbage as used
    // (measured: 15–26 MB "after" such a step where the full collections beside it say 1–5 MB), so
    // without the flag the peak is an upper estimate.
    const live = GC_GLOBAL ? entries.filter((e) => e.gcType === 'MarkSweepCompact') : entries;
    const peakLive = Math.max(0, ...live.map((e) => e.afterGC.heapStatistics.usedHeapSize - base));
    const peakUsed = Math.max(0, ...entries.map((e) => e.beforeGC.heapStatistics.usedHeapSize - base));
    // Keep the store reachable until it was measured.
    if (store.size !== pods) throw new Error('unreachable');
    return {
      peakBytes: Math.max(peakLive, storeBytes),
      peakUsedBytes: Math.max(peakUsed, storeBytes),
      storeBytes,
      gcs: entries.length,
    };
  } finally {
    if (profile === undefined) profiler.stop();
    controller.abort();
    await iterator.return?.();
  }
}
