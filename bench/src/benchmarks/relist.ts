import { podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore, replaceEvent, type ObjectKey } from '@reconcile-loop/object-store';
import type { BenchContext } from '../lib/context.js';
import { heapAfterGc, heapUsed } from '../lib/heap.js';
import { makePod, modifyPod, NAMESPACE, PARENT_LABEL } from '../lib/pods.js';
import { fmt, fmtSummary, printTable, summarize, type Summary } from '../lib/stats.js';

/** Result of benchmark 3 at one size. */
export interface RelistSizeResult {
  pods: number;
  /** `ObjectStore.apply` of the replace, ms. */
  applyMs: Summary;
  /** Parent keys the replace returned (all of them: a relist re-drives every parent it touches). */
  affectedParents: number;
  /** Heap of the store alone (after GC), bytes. */
  storeBytes: number;
  /** Heap of the store plus the materialized replace (after GC): the relist's resting peak, bytes. */
  storePlusReplaceBytes: number;
  /** Heap right after apply, before any GC (adds apply's own garbage): the transient peak, bytes. */
  peakBytes: Summary;
  /** Heap after apply and GC, with the replace dropped, bytes. */
  afterBytes: number;
}

/** Result of benchmark 3. */
export interface RelistResult {
  sizes: RelistSizeResult[];
}

const keyMap = (pod: Pod): string | undefined => pod.metadata.labels[PARENT_LABEL];
const keyOf = (pod: Pod): ObjectKey => `${pod.metadata.namespace ?? NAMESPACE}/${pod.metadata.name}`;

function views(indices: Iterable<number>, change: (i: number) => boolean): Map<ObjectKey, Pod> {
  const out = new Map<ObjectKey, Pod>();
  for (const i of indices) {
    const raw = change(i) ? modifyPod(makePod(i), i) : makePod(i);
    const pod = podSchema.parse(raw);
    out.set(keyOf(pod), pod);
  }
  return out;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, k) => from + k);
}

async function oneRun(
  n: number,
): Promise<Omit<RelistSizeResult, 'pods' | 'applyMs' | 'peakBytes'> & { applyMs: number; peakBytes: number }> {
  const tenth = Math.max(1, Math.floor(n / 10));
  const base = await heapAfterGc();
  const store = new ObjectStore<Pod, string>({ keyMap });
  store.apply(replaceEvent(views(range(0, n), () => false)));
  const withStore = await heapAfterGc();
  // The relist's world: the first tenth is gone, the next tenth changed, a tenth is new; every
  // object is a fresh instance, as a LIST yields.
  let world: Map<ObjectKey, Pod> | undefined = views(range(tenth, n + tenth), (i) => i < 2 * tenth);
  let event: ReturnType<typeof replaceEvent<Pod>> | undefined = replaceEvent(world);
  const withReplace = await heapAfterGc();
  const start = performance.now();
  const affected = store.apply(event);
  const applyMs = performance.now() - start;
  const peak = heapUsed();
  if (store.size !== n) throw new Error(`relist: store holds ${store.size} objects after the replace, expected ${n}`);
  const affectedParents = affected.size;
  world = undefined;
  event = undefined;
  const after = await heapAfterGc();
  // Keep the store reachable until here, so the GC above cannot take it.
  if (store.size !== n) throw new Error('relist: store changed');
  return {
    applyMs,
    affectedParents,
    storeBytes: withStore - base,
    storePlusReplaceBytes: withReplace - base,
    peakBytes: peak - base,
    afterBytes: after - base,
  };
}

/** Benchmark 3: a replace of N against a store of N with 10 % changed and 10 % gone. */
export async function runRelist(ctx: BenchContext): Promise<RelistResult> {
  const sizes = (ctx.smoke ? [200] : [5_000, 20_000]).filter((n) => ctx.pods === undefined || ctx.pods.has(n));
  const out: RelistSizeResult[] = [];
  for (const n of sizes) {
    await oneRun(Math.min(n, 1_000)); // warm-up
    const runs = [];
    for (let r = 0; r < ctx.runs; r++) runs.push(await oneRun(n));
    const last = runs[runs.length - 1]!;
    out.push({
      pods: n,
      applyMs: summarize(runs.map((r) => r.applyMs)),
      affectedParents: last.affectedParents,
      storeBytes: last.storeBytes,
      storePlusReplaceBytes: last.storePlusReplaceBytes,
      peakBytes: summarize(runs.map((r) => r.peakBytes)),
      afterBytes: last.afterBytes,
    });
  }
  const mb = (b: number): string => fmt(b / 1024 / 1024);
  printTable(
    `3. Relist: ObjectStore.apply(replace of N) against a store of N, 10 % changed, 10 % gone, 10 % new (min / median / max of ${ctx.runs})`,
    ['N', 'apply ms', 'parents re-driven', 'store MB', 'store + replace MB', 'transient peak MB (median)', 'after GC MB'],
    out.map((r) => [
      r.pods.toLocaleString('en-US'),
      fmtSummary(r.applyMs),
      String(r.affectedParents),
      mb(r.storeBytes),
      mb(r.storePlusReplaceBytes),
      mb(r.peakBytes.median),
      mb(r.afterBytes),
    ]),
  );
  return { sizes: out };
}
