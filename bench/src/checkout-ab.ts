/**
 * This checkout's decode path against another checkout's, both loaded into one process and measured
 * in interleaved rounds (the order swapped every round), so a loaded machine's drift falls on both
 * alike: main-thread CPU per frame (`process.threadCpuUsage`). For a change that moves or reshapes
 * the decoder or the reflector without meaning to change their speed (BENCHMARKS.md (24)).
 *   - k8s-types: `parseWatchFrame` of 5,000 MODIFIED pod frames (bench/src/hot-path.ts's case) and
 *     `parseListPage` of one unpaged LIST (bench/src/list-read.ts's), each with the WebAssembly
 *     scanner and with the JavaScript one only;
 *   - k8s-types, metadata only: the same frames and LIST as `PartialObjectMetadata` (the pods'
 *     metadata, as the apiserver sends them for `as=PartialObjectMetadata`), read into
 *     `partialObjectMetadataSchema` by `parseWatchFrame` and by `parseListPage` (a checkout whose view
 *     has no byte reader reads the page the exact way: `JSON.parse`, then `parseObject` per item);
 *   - reflector: a `Reflector` over a client that hands the same frames over as bytes in batches of
 *     64 (as kube-client hands a socket read over), one upsert yielded per frame;
 *   - object-store: an `ObjectStore` keyed by each pod's ReplicaSet (one parent per object, the
 *     primary's shape) applying the pods' create, update and delete events (issue 24's one store type);
 *   - loop: a started `ReconcileLoop` over an `InProcessSource` of `--parents` objects, one worker and a
 *     no-op reconcile, every parent enqueued and reconciled once per pass: the worker path's own cost
 *     per reconcile (queue, admission, context, runner, booking).
 *
 *   git worktree add --detach ../base <commit> && (cd ../base && pnpm install --frozen-lockfile)
 *   node --conditions=@reconcile-loop/source --import tsx bench/src/checkout-ab.ts --base=../base [--rounds=11] [--repeat=4] [--only=store]
 *
 * `--only=<text>` keeps the cases whose name contains the text (e.g. `store`, `parseListPage`).
 *
 * Run it from both sides too (this checkout as `--base` from the other): a bias of the harness
 * (which side loads first) then shows as a difference of the same sign both ways.
 *
 * The other checkout must have the same `packages/*` entry points (`src/index.ts`, `src/internal.ts`).
 */
import { resolve } from 'node:path';
import { makePod, modifyPod } from './lib/pods.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const base = resolve(arg('base', ''));
if (arg('base', '') === '') throw new Error('--base=<path of the other checkout> is required');
const here = resolve(import.meta.dirname, '..', '..');
const pods = Number(arg('pods', '5000'));
const listPods = Number(arg('list-pods', '2000'));
const rounds = Number(arg('rounds', '11'));
// Passes per sample: the thread CPU clock ticks in milliseconds (4 ms here), so a sample must be long.
const repeat = Number(arg('repeat', '4'));
const parents = Number(arg('parents', '5000'));

interface Decoder {
  readonly podSchema: object;
  readonly partialObjectMetadataSchema: object;
  parseWatchFrame(bytes: Uint8Array, view: object): { type: string };
  parseListPage(bytes: Uint8Array, view: object): { items: readonly { view?: unknown; raw?: unknown }[] } | undefined;
  parseObject(view: object, raw: unknown, what: string): unknown;
  useWasmScan(on: boolean): void;
}
interface Stream {
  next(): Promise<IteratorResult<{ type: string }>>;
}

const frames = Array.from({ length: pods }, (_, i) =>
  Buffer.from(JSON.stringify({ type: 'MODIFIED', object: modifyPod(makePod(i), i + 1) })),
);
const body = Buffer.from(
  JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '999999' },
    items: Array.from({ length: listPods }, (_, i) => makePod(i)),
  }),
);
const partial = (pod: ReturnType<typeof makePod>) => ({
  kind: 'PartialObjectMetadata',
  apiVersion: 'meta.k8s.io/v1',
  metadata: pod.metadata,
});
const metadataFrames = Array.from({ length: pods }, (_, i) =>
  Buffer.from(JSON.stringify({ type: 'MODIFIED', object: partial(modifyPod(makePod(i), i + 1)) })),
);
const metadataBody = Buffer.from(
  JSON.stringify({
    kind: 'PartialObjectMetadataList',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '999999' },
    items: Array.from({ length: listPods }, (_, i) => partial(makePod(i))),
  }),
);
const batches: Buffer[][] = [];
for (let i = 0; i < frames.length; i += 64) batches.push(frames.slice(i, i + 64));
const client = {
  list: async () => ({ items: [], resourceVersion: '1' }),
  watch: (): never => {
    throw new Error('read in batches only');
  },
  async *watchBatches() {
    for (const batch of batches) yield batch;
  },
};

interface Store {
  apply(event: { type: 'upsert'; key: string; object: unknown } | { type: 'delete'; key: string }): ReadonlySet<string>;
}
interface StoreModule {
  ObjectStore: new (options: { keyMap: (object: never, key: string) => string | undefined }) => Store;
}
type PodLike = { metadata: { namespace?: string; name: string; ownerReferences?: readonly { name: string }[] } };
const storeKeyMap = (pod: PodLike): string | undefined => pod.metadata.ownerReferences?.[0]?.name;

interface LoopModule {
  InProcessSource: new (name: string, objects: Iterable<readonly [string, unknown]>) => object;
  ReconcileLoop: new (options: {
    source: object;
    keyMap: (object: unknown, key: string) => string;
    reconcile: () => void;
    sources: { resyncPeriodMs: number };
  }) => { start(): Promise<void>; enqueue(key: string): void };
}
const parentKeys = Array.from({ length: parents }, (_, i) => `ns/p${i}`);
/** A started loop and one pass of it: every parent enqueued, resolved once each was reconciled. */
async function loopPass(module: LoopModule): Promise<() => Promise<void>> {
  let left = parents;
  let wake = (): void => {};
  const source = new module.InProcessSource(
    'parents',
    parentKeys.map((key) => [key, { metadata: { namespace: 'ns', name: key.slice(3) } }] as const),
  );
  const loop = new module.ReconcileLoop({
    source,
    keyMap: (_object, key) => key,
    reconcile: () => {
      if (--left === 0) wake();
    },
    sources: { resyncPeriodMs: 0 },
  });
  const listed = new Promise<void>((resolve) => (wake = resolve)); // the listing queues every parent once
  await loop.start();
  await listed;
  return async () => {
    left = parents;
    const done = new Promise<void>((resolve) => (wake = resolve));
    for (const key of parentKeys) loop.enqueue(key);
    await done;
  };
}

async function load(root: string): Promise<{ decoder: Decoder; stream: Stream; store: StoreModule; loop: () => Promise<void> }> {
  const types = await import(`${root}/packages/k8s-types/src/index.ts`);
  const internal = await import(`${root}/packages/k8s-types/src/internal.ts`);
  const { Reflector } = await import(`${root}/packages/reflector/src/index.ts`);
  const reflector = new Reflector({ client, schema: types.podSchema, initialList: 'list', watchTimeoutSeconds: 3600 });
  const stream = reflector.open(new AbortController().signal)[Symbol.asyncIterator]() as Stream;
  if ((await stream.next()).value?.type !== 'replace') throw new Error(`${root}: the stream did not start with a replace`);
  const store = (await import(`${root}/packages/object-store/src/index.ts`)) as StoreModule;
  const decoder = { podSchema: types.podSchema, partialObjectMetadataSchema: types.partialObjectMetadataSchema, ...internal };
  const loop = await loopPass((await import(`${root}/packages/loop/src/index.ts`)) as LoopModule);
  return { decoder: decoder as Decoder, stream, store, loop };
}
const sides = { base: await load(base), here: await load(here) };
type Side = keyof typeof sides;

let sink = 0;
const cpu = (): number => {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
};
const readList = (d: Decoder): void => {
  const page = d.parseListPage(body, d.podSchema)!;
  if (page.items.some((item) => item.view === undefined)) throw new Error('an item was not read by the byte reader');
  sink += page.items.length;
};
/** A metadata-only LIST page into views, as the reflector reads one: from its bytes, else the exact way. */
const readMetadataList = (d: Decoder): void => {
  const view = d.partialObjectMetadataSchema;
  const page = d.parseListPage(metadataBody, view);
  const items: readonly { view?: unknown; raw?: unknown }[] =
    page?.items ?? (JSON.parse(metadataBody.toString()) as { items: unknown[] }).items.map((raw) => ({ raw }));
  for (const item of items) sink += item.view === undefined ? (d.parseObject(view, item.raw, 'LIST') === undefined ? 0 : 1) : 1;
};
const created = Array.from({ length: pods }, (_, i) => makePod(i) as unknown as PodLike);
const updated = Array.from({ length: pods }, (_, i) => modifyPod(makePod(i), i + 1) as unknown as PodLike);
const storeKeys = created.map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`);
const storeCycle = (side: Side): void => {
  const store = new sides[side].store.ObjectStore({ keyMap: storeKeyMap as (object: never) => string | undefined });
  for (let i = 0; i < pods; i++) sink += store.apply({ type: 'upsert', key: storeKeys[i]!, object: created[i] }).size;
  for (let i = 0; i < pods; i++) sink += store.apply({ type: 'upsert', key: storeKeys[i]!, object: updated[i] }).size;
  for (let i = 0; i < pods; i++) sink += store.apply({ type: 'delete', key: storeKeys[i]! }).size;
};
const readFrames = (side: Side, list: readonly Buffer[], view: 'podSchema' | 'partialObjectMetadataSchema'): void => {
  const d = sides[side].decoder;
  for (const frame of list) sink += d.parseWatchFrame(frame, d[view]).type.length;
};
const cases: { name: string; wasm: boolean; per: number; run: (side: Side) => Promise<void> | void }[] = [
  { name: 'object-store create, update, delete', wasm: true, per: pods * 3, run: storeCycle },
  { name: 'loop reconcile, no-op, one worker', wasm: true, per: parents, run: (side) => sides[side].loop() },
  { name: 'k8s-types parseWatchFrame, WebAssembly', wasm: true, per: pods, run: (side) => readFrames(side, frames, 'podSchema') },
  { name: 'k8s-types parseWatchFrame, JavaScript', wasm: false, per: pods, run: (side) => readFrames(side, frames, 'podSchema') },
  { name: `k8s-types parseListPage, WebAssembly`, wasm: true, per: listPods, run: (side) => readList(sides[side].decoder) },
  { name: `k8s-types parseListPage, JavaScript`, wasm: false, per: listPods, run: (side) => readList(sides[side].decoder) },
  {
    name: 'k8s-types metadata-only parseWatchFrame',
    wasm: true,
    per: pods,
    run: (side) => readFrames(side, metadataFrames, 'partialObjectMetadataSchema'),
  },
  { name: 'k8s-types metadata-only LIST', wasm: true, per: listPods, run: (side) => readMetadataList(sides[side].decoder) },
  {
    name: 'reflector watch, frames as bytes',
    wasm: true,
    per: pods,
    run: async (side) => {
      const { stream } = sides[side];
      for (let i = 0; i < pods; i++) {
        const next = await stream.next();
        if (next.value?.type !== 'upsert') throw new Error(`${side}: ${String(next.value?.type)} where an upsert was due`);
      }
    },
  },
];

const only = arg('only', '');
if (only !== '') cases.splice(0, cases.length, ...cases.filter((c) => c.name.includes(only)));
if (cases.length === 0) throw new Error(`--only=${only} matches no case`);
const samples = new Map<string, number[]>();
for (const c of cases)
  for (const side of ['base', 'here'] as const) {
    sides[side].decoder.useWasmScan(c.wasm);
    await c.run(side); // warm-up, not measured
  }
for (let r = 0; r < rounds; r++) {
  const order: Side[] = r % 2 === 0 ? ['base', 'here'] : ['here', 'base'];
  for (const c of cases) {
    for (const side of order) {
      sides[side].decoder.useWasmScan(c.wasm);
      const start = cpu();
      for (let k = 0; k < repeat; k++) await c.run(side);
      const key = `${c.name}|${side}`;
      samples.set(key, [...(samples.get(key) ?? []), (cpu() - start) / (c.per * repeat)]);
    }
  }
}
const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const pct = (after: number, before: number): string => `${(((after - before) / before) * 100).toFixed(1)} %`.padStart(7);
console.log(
  `node ${process.version}; base ${base}; ${pods} frames of ${Math.round(frames.reduce((n, f) => n + f.length, 0) / pods)} B, a LIST of ${listPods} pods (${(body.length / 1e6).toFixed(1)} MB); ${rounds} interleaved rounds of ${repeat} passes; CPU µs per frame or item`,
);
for (const c of cases) {
  const before = samples.get(`${c.name}|base`)!;
  const after = samples.get(`${c.name}|here`)!;
  console.log(
    `  ${c.name.padEnd(40)} median base ${median(before).toFixed(2).padStart(6)} here ${median(after).toFixed(2).padStart(6)} ${pct(median(after), median(before))}` +
      ` | fastest base ${Math.min(...before)
        .toFixed(2)
        .padStart(6)} here ${Math.min(...after)
        .toFixed(2)
        .padStart(6)} ${pct(Math.min(...after), Math.min(...before))}`,
  );
}
if (sink === 0) console.log('');
process.exit(0);
