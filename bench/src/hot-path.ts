/**
 * The watch hot path's levers, one at a time, in one process (issue 15; BENCHMARKS.md (15)):
 * CPU time per frame (`process.cpuUsage`, so a loaded machine inflates every variant alike) of
 *   - `JSON.parse` of the line (the floor),
 *   - the whole line parsed then read (`readWatchFrame(JSON.parse(line))`: no cut),
 *   - `parseWatchLine(line, view, { cutUnread: true })` (the view's unread metadata cut before `JSON.parse`),
 *   - the cut itself (`cutWatchLine`), zod's validation alone, and validation plus compaction;
 *   - `parseWatchFrame(bytes, podSchema)`: the bundled view's byte reader on the frame's bytes (BENCHMARKS.md (15b)),
 *     with its WebAssembly scanner and with the JavaScript one only (`useWasmScan(false)`, (15c));
 * and heap per cached pod (forced GC) with and without compaction.
 *
 *   node --expose-gc --conditions=@reconcile-loop/source --import tsx bench/src/hot-path.ts [--pods=5000] [--rounds=11]
 */
import { objectKey, podSchema } from '@reconcile-loop/k8s-types';
import {
  cutWatchLine,
  metadataKeysRead,
  parseObject,
  parseWatchFrame,
  parseWatchLine,
  readWatchFrame,
  useWasmScan,
} from '@reconcile-loop/k8s-types/internal';
import { ObjectStore, replaceEvent } from '@reconcile-loop/object-store';
import { heapAfterGc } from './lib/heap.js';
import { makePod, modifyPod, PARENT_LABEL } from './lib/pods.js';

const arg = (name: string, fallback: number): number => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : Number(found.slice(name.length + 3));
};
const pods = arg('pods', 5_000);
const rounds = arg('rounds', 11);
const lines = Array.from({ length: pods }, (_, i) => JSON.stringify({ type: 'MODIFIED', object: modifyPod(makePod(i), i + 1) }));
const objects = lines.map((line) => (JSON.parse(line) as { object: unknown }).object);
const frames = lines.map((line) => Buffer.from(line, 'utf8'));
const keep = metadataKeysRead(podSchema)!;
let sink = 0;

const JS_SCANNER = 'parseWatchFrame, JavaScript scanner only';
const variants: Record<string, (i: number) => void> = {
  'JSON.parse (floor)': (i) => {
    sink += JSON.parse(lines[i]!) ? 1 : 0;
  },
  'whole line: JSON.parse + readWatchFrame': (i) => {
    sink += readWatchFrame(JSON.parse(lines[i]!), podSchema).type.length;
  },
  'parseWatchLine, cutUnread (cut first)': (i) => {
    sink += parseWatchLine(lines[i]!, podSchema, { cutUnread: true }).type.length;
  },
  'parseWatchFrame (bytes, byte reader)': (i) => {
    sink += parseWatchFrame(frames[i]!, podSchema).type.length;
  },
  [JS_SCANNER]: (i) => {
    // The loop below turns the WebAssembly scanner off for this variant alone.
    sink += parseWatchFrame(frames[i]!, podSchema).type.length;
  },
  'cutWatchLine alone': (i) => {
    sink += cutWatchLine(lines[i]!, keep)?.text.length ?? 0;
  },
  'zod validation alone (podSchema.parse)': (i) => {
    sink += podSchema.parse(objects[i]).metadata.name.length;
  },
  'validation + compaction (parseObject)': (i) => {
    sink += parseObject(podSchema, objects[i], 'MODIFIED').metadata.name.length;
  },
};

type Usage = { user: number; system: number };
const threadCpu = (process as unknown as { threadCpuUsage?: () => Usage }).threadCpuUsage;
const cpuNow = (): Usage => (threadCpu ? threadCpu.call(process) : process.cpuUsage());
const cpuSince = (start: Usage): Usage => {
  const now = cpuNow();
  return { user: now.user - start.user, system: now.system - start.system };
};
const samples: Record<string, number[]> = {};
const names = Object.keys(variants);
for (let r = 0; r < rounds; r++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + r) % names.length]!; // rotate, so no variant always follows another's garbage
    const run = variants[name]!;
    useWasmScan(name !== JS_SCANNER);
    // The main thread's CPU only where Node has it (22.19+ does): GC helper threads are not the variant's.
    const start = cpuNow();
    for (let i = 0; i < pods; i++) run(i);
    const used = cpuSince(start);
    (samples[name] ??= []).push((used.user + used.system) / pods);
  }
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const floor = median(samples['JSON.parse (floor)']!);
console.log(
  `node ${process.version}, ${pods} frames of ${Math.round(lines.reduce((n, l) => n + l.length, 0) / pods)} B, medians of ${rounds}; CPU µs per frame`,
);
for (const name of names) {
  const value = median(samples[name]!);
  console.log(`  ${name.padEnd(42)} ${value.toFixed(2).padStart(8)} µs  ${(value / floor).toFixed(2)}× JSON.parse`);
}

async function heapPerPod(how: 'compact' | 'plain' | 'bytes'): Promise<number> {
  const before = await heapAfterGc();
  const store = new ObjectStore<ReturnType<typeof podSchema.parse>, string>({
    keyMap: (pod) => pod.metadata.labels[PARENT_LABEL],
  });
  const world = new Map<string, ReturnType<typeof podSchema.parse>>();
  for (let i = 0; i < lines.length; i++) {
    let view: ReturnType<typeof podSchema.parse>;
    if (how === 'bytes') {
      const frame = parseWatchFrame(frames[i]!, podSchema);
      if (frame.type !== 'MODIFIED') throw new Error(`frame ${i} read as ${frame.type}`);
      view = frame.object;
    } else {
      const raw = (JSON.parse(lines[i]!) as { object: unknown }).object;
      view = how === 'compact' ? parseObject(podSchema, raw, 'LIST') : podSchema.parse(raw);
    }
    world.set(objectKey(view), view);
  }
  store.apply(replaceEvent(world));
  world.clear();
  const held = (await heapAfterGc()) - before;
  sink += store.size;
  return held / pods;
}
console.log(
  `heap per cached pod (view + store, after ${pods} MODIFIED versions): compact ${(await heapPerPod('compact')).toFixed(0)} B, byte reader ${(await heapPerPod('bytes')).toFixed(0)} B, not compacted ${(await heapPerPod('plain')).toFixed(0)} B`,
);
if (sink === 0) console.log('');
