/**
 * Prints the markdown results tables of BENCHMARKS.md from a results file (default
 * bench/results/latest.json), so the document's numbers are the file's numbers:
 *
 *   node --import tsx bench/src/report.ts [bench/results/latest.json]
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LatencyResult } from './benchmarks/latency.js';
import type { QueueResult } from './benchmarks/queue.js';
import type { RelistResult } from './benchmarks/relist.js';
import type { RetryResult } from './benchmarks/retry.js';
import type { MemorySizeResult, ThroughputSizeResult } from './benchmarks/watch.js';
import type { Summary } from './lib/stats.js';

const file = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'results', 'latest.json');
const r = JSON.parse(readFileSync(file, 'utf8')) as {
  node: string;
  cpus: number;
  date: string;
  runs: number;
  machine: { cpuModel: string; memoryGB: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[] };
  throughput?: { sizes: ThroughputSizeResult[] };
  heapPerPodBytes?: { sizes: MemorySizeResult[] };
  relist?: RelistResult;
  latencyMs?: { detail: LatencyResult };
  retry?: RetryResult;
  queue?: QueueResult;
};

const n = (v: number, digits = 0): string =>
  v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ms = (s: Summary, digits = 0): string => `${n(s.median, digits)} (${n(s.min, digits)}–${n(s.max, digits)})`;
const kb = (bytes: number): string => n(bytes / 1024, 2);
const x = (v: number): string => `${n(v, 2)}×`;
const row = (cells: Array<string | number>): string => `| ${cells.join(' | ')} |`;
const out: string[] = [];

out.push(
  `Machine: ${r.cpus} vCPU ${r.machine.cpuModel}, ${r.machine.memoryGB} GB, Node ${r.node}; ${r.date.slice(0, 16).replace('T', ' ')} UTC; ` +
    `load average ${r.machine.loadAverageAtStart[0]} at start, ${r.machine.loadAverageAtEnd[0]} at end; ${r.runs} runs, median (min–max).`,
  '',
);

if (r.throughput) {
  out.push('**1. Watch pipeline throughput** (ms from start until the last frame is cached and its parent enqueued)', '');
  out.push(
    row([
      'served by',
      'N',
      'M',
      'MB',
      '(a) ours',
      '(b) client-node',
      '(c) JSON.parse',
      '(d) http+parse',
      '(e) (d)+validate+store+queue',
      '(a)/(c)',
      '(a)/(b)',
      '(b)/(c)',
      '(d)/(c)',
      '(e)/(c)',
    ]),
  );
  out.push(row(Array(14).fill('---')));
  for (const t of r.throughput.sizes) {
    out.push(
      row([
        t.via,
        n(t.pods),
        n(t.frames),
        n((t.listBytes + t.watchBytes) / 1e6),
        ms(t.oursMs),
        ms(t.clientNodeMs),
        ms(t.floorMs),
        ms(t.rawHttpMs),
        ms(t.syncMs),
        x(t.oursOverFloor),
        x(t.oursOverClientNode),
        x(t.clientNodeOverFloor),
        x(t.rawHttpMs.median / t.floorMs.median),
        x(t.syncMs.median / t.floorMs.median),
      ]),
    );
  }
  out.push('');
}
if (r.heapPerPodBytes) {
  out.push('**2. Heap held per cached pod after a forced GC** (KB, median of runs)', '');
  out.push(
    row([
      'N',
      '(a) ours, after LIST',
      '(b) client-node, after LIST',
      '(a) ours, after M frames',
      '(b) client-node, after M frames',
    ]),
  );
  out.push(row(Array(5).fill('---')));
  for (const m of r.heapPerPodBytes.sizes) {
    out.push(
      row([
        n(m.pods),
        kb(m.oursAfterList.median),
        kb(m.clientNodeAfterList.median),
        kb(m.oursAfterWatch.median),
        kb(m.clientNodeAfterWatch.median),
      ]),
    );
  }
  out.push('');
}
if (r.relist) {
  out.push('**3. Relist** (`ObjectStore.apply` of a replace of N against a store of N: 10 % changed, 10 % gone, 10 % new)', '');
  out.push(row(['N', 'apply ms', 'parents re-driven', 'store MB', 'store + replace MB', 'transient peak MB', 'after GC MB']));
  out.push(row(Array(7).fill('---')));
  const mb = (b: number): string => n(b / 1024 / 1024, 1);
  for (const s of r.relist.sizes) {
    out.push(
      row([
        n(s.pods),
        ms(s.applyMs, 1),
        n(s.affectedParents),
        mb(s.storeBytes),
        mb(s.storePlusReplaceBytes),
        mb(s.peakBytes.median),
        mb(s.afterBytes),
      ]),
    );
  }
  out.push('');
}
if (r.latencyMs) {
  const l = r.latencyMs.detail;
  out.push(
    `**4. Event → reconcile latency** (${n(l.ratePerSec)} frames/s for ${l.durationMs / 1000} s, ${n(l.pods)} cached pods, full loop; ms)`,
    '',
  );
  out.push(row(['p50', 'p99', 'max', 'events / reconciles', 'event-loop delay p99', 'sender max lag']));
  out.push(row(Array(6).fill('---')));
  out.push(
    row([
      ms(l.p50Ms, 2),
      ms(l.p99Ms, 2),
      ms(l.maxMs, 1),
      `${n(l.events)} / ${n(l.reconciles)}`,
      n(l.eventLoopDelayP99Ms, 2),
      n(l.senderMaxBehindMs, 1),
    ]),
  );
  out.push('');
}
if (r.retry) {
  const t = r.retry;
  out.push(`**5. Retry timing** (${n(t.keys)} keys, real clock; ms)`, '');
  out.push(
    row([
      'lateness p50',
      'lateness p99',
      'lateness max',
      'p99 at the worker',
      'timer wakeups (run)',
      'idle wakeups/s (scheduler, loop)',
    ]),
  );
  out.push(row(Array(6).fill('---')));
  out.push(
    row([
      ms(t.latenessP50Ms, 2),
      ms(t.latenessP99Ms, 2),
      ms(t.latenessMaxMs, 1),
      ms(t.dequeueLatenessP99Ms, 2),
      `${n(t.wakeupsWhilePending)} for ${n(t.keys)} deadlines`,
      `${n(t.idleWakeupsPerSec.scheduler, 2)}, ${n(t.idleWakeupsPerSec.loop, 2)} (over ${t.idleWindowMs / 1000} s)`,
    ]),
  );
  out.push('');
}
if (r.queue) {
  const q = r.queue;
  const mops = (s: Summary): string => `${n(s.median / 1e6, 1)} (${n(s.min / 1e6, 1)}–${n(s.max / 1e6, 1)})`;
  out.push(
    `**6. Queue** (${n(q.distinctKeys)} parent keys, ${n(q.adds)} adds, ${n(q.duplicateShare * 100, 1)} % duplicates; million ops/s)`,
    '',
  );
  out.push(row(['WorkQueue add + tryGet', 'bare Set (floor)', 'WorkQueue add + awaiting get']));
  out.push(row(Array(3).fill('---')));
  out.push(row([mops(q.syncOpsPerSec), mops(q.floorOpsPerSec), mops(q.asyncOpsPerSec)]));
  out.push('');
}
console.log(out.join('\n'));
