import { podSchema, parseWatchLine, readWatchFrame, compileSchema } from '@reconcile-loop/k8s-types';
import { makePod, modifyPod } from './src/lib/pods.js';
const M = 20000;
const lines = Array.from({ length: M }, (_, i) => JSON.stringify({ type: 'MODIFIED', object: { ...modifyPod(makePod(i % 5000), i), metadata: { ...makePod(i % 5000).metadata, resourceVersion: String(10000 + i) } } }));
const schema = compileSchema(podSchema);
let sink: unknown;
function parseOnly() { const t = performance.now(); for (const l of lines) sink = JSON.parse(l); return performance.now() - t; }
function full() { const t = performance.now(); for (const l of lines) sink = parseWatchLine(l, schema); return performance.now() - t; }
const raws = lines.map((l) => JSON.parse(l));
function validateOnly() { const t = performance.now(); for (const r of raws) sink = readWatchFrame(r, schema); return performance.now() - t; }
for (let r = 0; r < 5; r++) {
  const a = parseOnly(), b = full(), c = validateOnly();
  console.log(`JSON.parse ${(a / M * 1000).toFixed(1)} µs/frame; parseWatchLine ${(b / M * 1000).toFixed(1)} µs/frame (${(b / a).toFixed(2)}×); validate only ${(c / M * 1000).toFixed(1)} µs/frame`);
}
void sink;
