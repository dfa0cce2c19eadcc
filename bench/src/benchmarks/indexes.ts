/**
 * Indexes (issue 23 item 2): what a user-defined index costs per event on the store's hot path, and
 * what a query through it saves against a scan. Realistic pods (`lib/pods.ts`) in an `ObjectStore`
 * keyed by their cell label; the events are kubelet-style updates, one in eight also moving the pod
 * to another node and another cell (so index entries move, not only get rewritten).
 */
import { labelIndexValues } from '@reconcile-loop/k8s-types';
import { ObjectStore, replaceEvent, upsertEvent, type Indexers, type UpsertEvent } from '@reconcile-loop/object-store';
import type { BenchContext } from '../lib/context.js';
import { PARENT_LABEL, makePod, modifyPod, podName, type PodJson } from '../lib/pods.js';
import { fmt, fmtSummary, printTable, summarize, type Summary } from '../lib/stats.js';

/** One index configuration's cost. */
export interface IndexCaseResult {
  indexes: string;
  /** ns per applied upsert. */
  nsPerEvent: Summary;
  /** Median ns per event above the store without indexes. */
  overheadNs: number;
}

/** Result of the indexes benchmark. */
export interface IndexesResult {
  pods: number;
  events: number;
  cases: IndexCaseResult[];
  /** µs per query for the pods of one node (pods / 64 of them). */
  query: { byIndexUs: Summary; listFilterUs: Summary; snapshotScanUs: Summary; matches: number };
}

const byNode = (pod: PodJson): string | undefined => pod.spec.nodeName;
const byLabel = (pod: PodJson): string[] => labelIndexValues(pod.metadata.labels);
const CASES: ReadonlyArray<readonly [string, Indexers<PodJson>]> = [
  ['none', {}],
  ['field (spec.nodeName)', { node: byNode }],
  ['one label (cell)', { cell: (pod) => pod.metadata.labels[PARENT_LABEL] }],
  ['labels (4 key=value)', { label: byLabel }],
  ['field + labels', { node: byNode, label: byLabel }],
];

function newStore(indexers: Indexers<PodJson>, world: ReadonlyArray<readonly [string, PodJson]>): ObjectStore<PodJson, string> {
  const store = new ObjectStore<PodJson, string>({ keyMap: (pod) => pod.metadata.labels[PARENT_LABEL], indexers });
  store.apply(replaceEvent(world));
  return store;
}

/** The events, built before any timing: one in eight moves its pod to another node and cell. */
function buildEvents(pods: readonly PodJson[], count: number): UpsertEvent<PodJson>[] {
  const events: UpsertEvent<PodJson>[] = [];
  for (let seq = 0; seq < count; seq++) {
    const i = (seq * 7919) % pods.length;
    let pod = modifyPod(pods[i]!, seq);
    if (seq % 8 === 0) {
      pod = {
        ...pod,
        metadata: { ...pod.metadata, labels: { ...pod.metadata.labels, [PARENT_LABEL]: `moved-${seq % 16}` } },
        spec: { ...pod.spec, nodeName: `gpu-node-${String((seq >> 3) % 64).padStart(3, '0')}` },
      };
    }
    events.push(upsertEvent(`bench/${podName(i)}`, pod));
  }
  return events;
}

function timeApply(store: ObjectStore<PodJson, string>, events: readonly UpsertEvent<PodJson>[]): number {
  const start = performance.now();
  for (const event of events) store.apply(event);
  return ((performance.now() - start) * 1e6) / events.length;
}

function timeQueries(run: (node: string) => number, queries: number): { us: number; matches: number } {
  let matches = 0;
  const start = performance.now();
  for (let q = 0; q < queries; q++) matches = run(`gpu-node-${String(q % 64).padStart(3, '0')}`);
  return { us: ((performance.now() - start) * 1e3) / queries, matches };
}

export async function runIndexes(ctx: BenchContext): Promise<IndexesResult> {
  const n = ctx.smoke ? 500 : 10_000;
  const eventCount = ctx.smoke ? 2_000 : 200_000;
  const pods = Array.from({ length: n }, (_, i) => makePod(i));
  const world = pods.map((pod, i) => [`bench/${podName(i)}`, pod] as const);
  const events = buildEvents(pods, eventCount);

  const samples = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
  // Warm-up: every case once on a slice, so the first measured run is not the interpreter's.
  for (const [, indexers] of CASES) timeApply(newStore(indexers, world), events.slice(0, Math.min(events.length, 20_000)));
  for (let r = 0; r < ctx.runs; r++) {
    // Interleaved, so a slow moment of the machine hits every case alike.
    for (const [name, indexers] of CASES) samples.get(name)!.push(timeApply(newStore(indexers, world), events));
  }
  const none = summarize(samples.get('none')!).median;
  const cases = CASES.map(([name]): IndexCaseResult => {
    const nsPerEvent = summarize(samples.get(name)!);
    return { indexes: name, nsPerEvent, overheadNs: Math.max(0, nsPerEvent.median - none) };
  });

  const store = newStore({ node: byNode }, world);
  const queries = ctx.smoke ? 64 : 2_000;
  const q = { byIndex: [] as number[], list: [] as number[], snapshot: [] as number[] };
  for (let r = 0; r < ctx.runs + 1; r++) {
    const a = timeQueries((node) => store.byIndex('node', node).size, queries);
    const b = timeQueries((node) => store.list((pod) => pod.spec.nodeName === node).size, Math.ceil(queries / 10));
    const c = timeQueries(
      (node) => {
        let count = 0;
        for (const pod of store.snapshot().values()) if (pod.spec.nodeName === node) count++;
        return count;
      },
      Math.ceil(queries / 10),
    );
    if (r === 0) continue; // warm-up round
    q.byIndex.push(a.us);
    q.list.push(b.us);
    q.snapshot.push(c.us);
    if (a.matches + b.matches + c.matches === 0) throw new Error('no pod matched any query');
  }
  // The three queries must agree (checked on one node, outside the timing).
  const node = 'gpu-node-000';
  const matches = store.byIndex('node', node).size;
  const scanned = store.list((pod) => pod.spec.nodeName === node).size;
  if (matches !== scanned) throw new Error(`byIndex found ${matches} pods on ${node}, a scan ${scanned}`);
  const result: IndexesResult = {
    pods: n,
    events: eventCount,
    cases,
    query: { byIndexUs: summarize(q.byIndex), listFilterUs: summarize(q.list), snapshotScanUs: summarize(q.snapshot), matches },
  };
  printTable(
    `Indexes: ${n.toLocaleString('en-US')} cached pods, ${eventCount.toLocaleString('en-US')} upserts (1 in 8 moves node and cell); ns per event, min / median / max of ${ctx.runs}`,
    ['indexes', 'ns / event', 'over none'],
    cases.map((c) => [c.indexes, fmtSummary(c.nsPerEvent), c.indexes === 'none' ? '—' : `+${fmt(c.overheadNs)}`]),
  );
  printTable(
    `Index queries: the pods of one node (${matches} on ${node}) among ${n.toLocaleString('en-US')} (µs per query, min / median / max of ${ctx.runs})`,
    ['query', 'µs / query'],
    [
      ["byIndex('node', n)", fmtSummary(result.query.byIndexUs)],
      ['list(pod => pod.spec.nodeName === n)', fmtSummary(result.query.listFilterUs)],
      ['snapshot() then filter', fmtSummary(result.query.snapshotScanUs)],
    ],
  );
  return result;
}
