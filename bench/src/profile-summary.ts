/**
 * Summarizes a `.cpuprofile`: self time per function and per source file, top entries first.
 *
 *   node --import tsx bench/src/profile-summary.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary <file.cpuprofile> [top]');
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const totalUs = profile.endTime - profile.startTime;

function shortUrl(url: string, functionName: string): string {
  // Functions without a script: zod's compiled validators (z.compile uses new Function) and the like.
  if (url === '' && !functionName.startsWith('(')) return '(generated code, e.g. zod compiled validators)';
  const m = /\/(packages\/[^/]+\/src\/[^?]+|node_modules\/\.pnpm\/([^/]+)\/.*?([^/]+\.[cm]?js))/.exec(url);
  if (m?.[1]?.startsWith('packages/')) return m[1];
  if (m?.[2]) return `${m[2].split('@').slice(0, -1).join('@') || m[2]}:${m[3]}`;
  if (url.startsWith('node:')) return url;
  return url.split('/').slice(-2).join('/') || '(vm)';
}

const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  const where = shortUrl(node.callFrame.url, node.callFrame.functionName);
  const fn = `${node.callFrame.functionName || '(anonymous)'}  ${where}:${node.callFrame.lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  byFile.set(where, (byFile.get(where) ?? 0) + us);
}
const print = (title: string, m: Map<string, number>): void => {
  console.log(`\n${title} (of ${(totalUs / 1000).toFixed(0)} ms profiled)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(us / 1000).toFixed(0).padStart(7)} ms  ${((us / totalUs) * 100).toFixed(1).padStart(5)} %  ${k}`);
  }
};
print('self time by file', byFile);
print('self time by function', byFunction);
