/**
 * What `@reconcile-loop/metrics` costs a running loop: the same stream of source events through a
 * ReconcileLoop without an observer and with `controllerMetrics()`, alternated run by run so load
 * drift hits both alike. Each event touches its own parent key (one add, one get, one reconcile,
 * one done: every hook fires), and the reconcile does nothing, so the loop's own bookkeeping is
 * all there is to compare against — a much smaller base than the watch pipeline (HTTP, JSON parse,
 * validation), which the 3 % budget is stated against. Also times one scrape.
 *
 *   pnpm --filter @reconcile-loop/bench bench:metrics -- --events=20000 --runs=5
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as immediate } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { InProcessSource, ReconcileLoop } from '@reconcile-loop/loop';
import { controllerMetrics } from '@reconcile-loop/metrics';
import { Registry } from 'prom-client';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '20000' }, runs: { type: 'string', default: '5' } },
  allowPositionals: true,
}); // pnpm passes a lone '--'
const events = Number(values.events);
const runs = Number(values.runs);

interface Obj {
  metadata: { name: string; namespace: string };
  v: number;
}

async function once(withMetrics: boolean): Promise<{ ms: number; cpuMs: number; reconciles: number; scrapeMs: number }> {
  const source = new InProcessSource<Obj>(
    'objs',
    Array.from({ length: events }, (_, i) => [`ns/o${i}`, { metadata: { name: `o${i}`, namespace: 'ns' }, v: 0 }] as const),
  );
  const registry = new Registry();
  let reconciles = 0;
  const loop = new ReconcileLoop<Obj, string>({
    controller: { name: 'bench' },
    sources: { resyncPeriodMs: 0 },
    source,
    keyMap: (_, key) => key,
    reconcile: () => void (reconciles += 1),

    ...(withMetrics && { observer: controllerMetrics<string>({ registry }) }),
  });
  await loop.start();
  await idle(loop);
  reconciles = 0;
  global.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < events; i++) source.upsert(`ns/o${i}`, { metadata: { name: `o${i}`, namespace: 'ns' }, v: 1 });
  await idle(loop);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const s0 = performance.now();
  if (withMetrics) await registry.metrics();
  const scrapeMs = withMetrics ? performance.now() - s0 : 0;
  await loop.stop();
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, reconciles, scrapeMs };
}

/** Until every upserted event is applied and reconciled (bounded: a stuck loop throws). */
async function idle(loop: ReconcileLoop<Obj, string>): Promise<void> {
  const deadline = performance.now() + 120_000;
  let quiet = 0;
  while (quiet < 3) {
    const h = loop.health();
    quiet = h.queueDepth === 0 && h.inFlight.length === 0 ? quiet + 1 : 0;
    if (performance.now() > deadline) throw new Error('loop did not go idle within 120 s');
    await immediate();
  }
}

/**
 * The hooks alone, called directly as the loop calls them for one event (add, get, reconcile end,
 * done), with the scrape-time gauges out of the picture: ns per event, stable under load because
 * it is CPU time of this process only.
 */
function hooksNsPerEvent(n: number): number {
  const registry = new Registry();
  const observer = controllerMetrics<string>({ registry });
  observer.bind?.({
    controller: 'bench',
    snapshot: () => {
      throw new Error('not scraped');
    },
  });
  const { onAdd, onGet, onDone } = observer.queue!;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const key = `k${i & 1023}`;
    onAdd!({ key, at: i, depth: 1, dirty: false, priority: 'normal' });
    onGet!({ key, at: i, depth: 0, queuedMs: 0.05, priority: 'normal' });
    observer.onReconcileEnd!({
      controller: 'bench',
      parentKey: key,
      at: i,
      durationMs: 0.02,
      result: 'success',
      terminal: false,
      timedOut: false,
      parked: false,
      error: undefined,
    });
    onDone!({ key, at: i, workMs: 0.03, requeued: false });
  }
  const cpu = process.cpuUsage(cpu0);
  observer.unregister();
  return ((cpu.user + cpu.system) * 1000) / n;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: Record<'without' | 'with', Array<Awaited<ReturnType<typeof once>>>> = { without: [], with: [] };
await once(false); // warm-up (JIT)
await once(true);
for (let r = 0; r < runs; r++) {
  for (const variant of r % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const))
    rows[variant].push(await once(variant === 'with'));
}
hooksNsPerEvent(200_000); // warm-up
const hooksNs = median(Array.from({ length: 5 }, () => hooksNsPerEvent(1_000_000)));
const [load1] = (await import('node:os')).loadavg();
const summary = (variant: 'without' | 'with') => ({
  ms: median(rows[variant].map((x) => x.ms)),
  cpuMs: median(rows[variant].map((x) => x.cpuMs)),
  eventsPerSec: Math.round(events / (median(rows[variant].map((x) => x.ms)) / 1000)),
  reconciles: median(rows[variant].map((x) => x.reconciles)),
});
const a = summary('without');
const b = summary('with');
console.log(
  JSON.stringify(
    {
      events,
      runs,
      node: process.versions.node,
      loadAverage1m: Number(load1!.toFixed(2)),
      without: a,
      with: b,
      wallOverheadPct: Number(((b.ms / a.ms - 1) * 100).toFixed(1)),
      cpuOverheadPct: Number(((b.cpuMs / a.cpuMs - 1) * 100).toFixed(1)),
      hooksNsPerEvent: Math.round(hooksNs),
      scrapeMs: Number(median(rows.with.map((x) => x.scrapeMs)).toFixed(2)),
      wallMsPerRun: { without: rows.without.map((x) => Math.round(x.ms)), with: rows.with.map((x) => Math.round(x.ms)) },
    },
    null,
    2,
  ),
);
