/**
 * owned-metadata: heap per owned pod when a controller caches owned pods as full views (podSchema)
 * versus metadata only (`metadataReflector`: PartialObjectMetadata over the wire), and how close
 * the store's running `CacheMeter` estimate (a loop's `health().sources[name].cache.bytesEstimate`)
 * comes to that heap. The apiserver runs in a child process, so only the client's heap is measured,
 * as the one memory method reads a store (`lib/memory.ts`: heap in use = `heapUsed + external`,
 * after forced GCs): a settled heap before the listing, the store filled by one listing through its
 * meter (as a loop writes every store), the stream closed (the reflector's buffers gone), a settled
 * heap with the store, its meter and the reflector held (what a controller holds per owned pod: the
 * view, the store's entries), the listing's event let go. Measured in this process after an
 * unmeasured round of each mode, so a per-pod figure carries no first-run cost (code, decoder
 * tables). Modes alternate round by round so drift hits both alike.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, type KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { CacheMeter, ObjectStore } from '@reconcile-loop/object-store';
import { metadataReflector, podReflector, type Reflector } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { settledHeapInUse } from '../lib/memory.js';
import { NAMESPACE } from '../lib/pods.js';
import { fmt, summarize, type Summary } from '../lib/stats.js';

type Mode = 'full' | 'metadata';

export interface OwnedMetadataResult {
  readonly pods: number;
  /** Heap per owned pod held as the full pod view (median over rounds), bytes. */
  readonly fullBytesPerPod: number;
  /** Heap per owned pod held as PartialObjectMetadata (median over rounds), bytes. */
  readonly metadataBytesPerPod: number;
  /** The store's `CacheMeter` estimate per pod (`cache.bytesEstimate`), and its ratio to the measured heap. */
  readonly estimate: {
    readonly fullBytesPerPod: number;
    readonly metadataBytesPerPod: number;
    readonly fullToHeap: number;
    readonly metadataToHeap: number;
  };
  readonly rounds: { readonly full: Summary; readonly metadata: Summary };
}

async function measure(server: ApiServerProcess, mode: Mode, pods: number): Promise<{ heap: number; estimate: number }> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig);
  const before = await settledHeapInUse();
  const reflector: Reflector<KubernetesObjectView> =
    mode === 'full'
      ? (podReflector({ kubeConfig, namespace: NAMESPACE }) as unknown as Reflector<KubernetesObjectView>)
      : (metadataReflector({
          kubeConfig,
          namespace: NAMESPACE,
          resource: podResource,
        }) as unknown as Reflector<KubernetesObjectView>);
  const store = new ObjectStore<KubernetesObjectView, string>({ keyMap: () => 'all' });
  const meter = new CacheMeter(store);
  await fill(reflector, meter);
  if (store.size !== pods) throw new Error(`owned-metadata: ${mode} listing held ${store.size} of ${pods} pods`);
  const estimate = meter.cost().bytesEstimate;
  const after = await settledHeapInUse();
  // The store, its meter and the reflector are held across the second measurement, as a controller holds them.
  if (store.size === 0 || meter.cost().objects === 0 || reflector.health() === undefined) throw new Error('unreachable');
  return { heap: (after - before) / pods, estimate: estimate / pods };
}

/**
 * Lists every pod into the store through `meter` and closes the stream. In a function of its own so that nothing is
 * left holding the listing's replace event (and its map of every object by key, ≈ 46 B a pod at
 * 20,000) when the heap is read: a controller applies it and lets it go; a loop variable of the
 * measuring function kept it alive until 2026-12-02, and the per-pod figures before then include it.
 */
async function fill(reflector: Reflector<KubernetesObjectView>, meter: CacheMeter<KubernetesObjectView, string>): Promise<void> {
  const controller = new AbortController();
  for await (const event of reflector.open(controller.signal)) {
    meter.apply(event);
    if (event.type === 'replace') break; // ends the stream: the WATCH is never opened
  }
  controller.abort();
}

export async function runOwnedMetadata(ctx: BenchContext): Promise<OwnedMetadataResult> {
  const pods = ctx.smoke ? 500 : 20_000;
  const server = await ApiServerProcess.start(pods + 100);
  try {
    await server.seed(pods);
    const heaps: Record<Mode, number[]> = { full: [], metadata: [] };
    const estimates: Record<Mode, number[]> = { full: [], metadata: [] };
    // One unmeasured round each: module loading and the decoder's tables are not a pod's cost.
    await measure(server, 'full', pods);
    await measure(server, 'metadata', pods);
    for (let round = 0; round < ctx.runs; round++) {
      for (const mode of round % 2 === 0 ? (['full', 'metadata'] as const) : (['metadata', 'full'] as const)) {
        const m = await measure(server, mode, pods);
        heaps[mode].push(m.heap);
        estimates[mode].push(m.estimate);
      }
    }
    const full = summarize(heaps.full);
    const metadata = summarize(heaps.metadata);
    const fullEstimate = summarize(estimates.full).median;
    const metadataEstimate = summarize(estimates.metadata).median;
    console.log(
      `\nowned-metadata (${pods} owned pods, ${ctx.runs} rounds): heap per pod full ${fmt(full.median, ' B')} ` +
        `(${fmt(full.min)}–${fmt(full.max)}), metadata only ${fmt(metadata.median, ' B')} (${fmt(metadata.min)}–${fmt(metadata.max)}); ` +
        `estimate per pod full ${fmt(fullEstimate, ' B')} (${(fullEstimate / full.median).toFixed(2)}× heap), ` +
        `metadata ${fmt(metadataEstimate, ' B')} (${(metadataEstimate / metadata.median).toFixed(2)}× heap)`,
    );
    return {
      pods,
      fullBytesPerPod: full.median,
      metadataBytesPerPod: metadata.median,
      estimate: {
        fullBytesPerPod: fullEstimate,
        metadataBytesPerPod: metadataEstimate,
        fullToHeap: fullEstimate / full.median,
        metadataToHeap: metadataEstimate / metadata.median,
      },
      rounds: { full, metadata },
    };
  } finally {
    await server.close();
  }
}
