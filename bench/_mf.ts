import { makePod, modifyPod } from './src/lib/pods.js';
const M = 20000;
const lines = Array.from({ length: M }, (_, i) => JSON.stringify({ type: 'MODIFIED', object: modifyPod(makePod(i % 5000), i) }));
const stripped = lines.map((l) => { const o = JSON.parse(l); delete o.object.metadata.managedFields; return JSON.stringify(o); });
function skipManaged(line: string): string {
  const key = '"managedFields":[';
  const at = line.indexOf(key);
  if (at < 0) return line;
  let i = at + key.length, depth = 1, inStr = false;
  for (; i < line.length && depth > 0; i++) {
    const c = line.charCodeAt(i);
    if (inStr) { if (c === 92) i++; else if (c === 34) inStr = false; }
    else if (c === 34) inStr = true; else if (c === 91 || c === 123) depth++; else if (c === 93 || c === 125) depth--;
  }
  if (line.charCodeAt(i) === 44) return line.slice(0, at) + line.slice(i + 1);
  return line.slice(0, at - 1) + line.slice(i);
}
let sink: unknown;
JSON.parse(skipManaged(lines[0]!));
const time = (f: () => void) => { const t = performance.now(); f(); return performance.now() - t; };
for (let r = 0; r < 5; r++) {
  const a = time(() => { for (const l of lines) sink = JSON.parse(l); });
  const b = time(() => { for (const l of stripped) sink = JSON.parse(l); });
  const c = time(() => { for (const l of lines) sink = JSON.parse(skipManaged(l)); });
  console.log(`full ${a.toFixed(0)} ms | without managedFields ${b.toFixed(0)} (${(b/a).toFixed(2)}×) | scan-skip + parse ${c.toFixed(0)} (${(c/a).toFixed(2)}×) | bytes ${(stripped[5]!.length/lines[5]!.length).toFixed(2)}`);
}
void sink;
