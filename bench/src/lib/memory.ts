/**
 * The one memory method of the benchmarks (issue 28, item 5): every initial-sync figure in
 * `pnpm bench`, the memory gate and BENCHMARKS.md is read this way.
 *
 * - **One sync per process.** Each measured sync runs cold in a child process of its own
 *   (`memory-child.ts`), so no path inherits another's grown heap, JIT state or kernel high-water
 *   mark: what a container sees when a controller starts. The apiserver is another child, so its
 *   memory is never counted.
 * - **Heap in use = `heapUsed + external`** of `process.memoryUsage()`. `external` is the off-heap
 *   memory V8 is told about, and it already includes `arrayBuffers` (every Buffer: socket chunks,
 *   LIST page bodies), so adding `arrayBuffers` again would count them twice. Garbage not yet
 *   collected is counted: it is memory the process holds, which is how a memory limit bites.
 * - **Peak heap** is the most heap in use during the sync, over the settled heap before it.
 *   Heap in use grows between collections and falls only in one, so its maxima are the moments
 *   just before each GC: the meter reads every GC's before-size from V8's `GCProfiler`
 *   (`usedHeapSize + externalMemory`), and a 2 ms timer reads `process.memoryUsage()` for the
 *   stretch after the last GC (and as a cross-check of the GC readings).
 * - **Peak RSS** is the kernel's high-water mark (`VmHWM` in `/proc/self/status`), reset with
 *   `/proc/self/clear_refs` when the sync starts: exact, not sampled. Off Linux the timer's largest
 *   `rss` reading stands in. Reported absolute (what the limit sees) and over the RSS before.
 * - **Store** is the heap in use after the sync, after repeated forced full GCs, with the store
 *   (and the idle watch) held, over the same base. The target (peak ≤ 1.5× the store) is
 *   `peakHeapBytes / storeHeapBytes`.
 */
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GCProfiler } from 'node:v8';
import { settleHeap } from './heap.js';

/** Heap in use right now: the JS heap and the off-heap memory V8 accounts (Buffers included). */
export function heapInUse(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

/** Heap in use after forced, settled full GCs. */
export async function settledHeapInUse(): Promise<number> {
  await settleHeap();
  return heapInUse();
}

/** One measured sync, in bytes (heap figures over the settled heap before it). */
export interface MemoryReading {
  /** Most heap in use (`heapUsed + external`) during the sync, over the base. */
  readonly peakHeapBytes: number;
  /** Heap in use once synced, after forced GCs, with the store held, over the base. */
  readonly storeHeapBytes: number;
  /** Kernel high-water RSS of the process during the sync (absolute). */
  readonly peakRssBytes: number;
  /** `peakRssBytes` minus the RSS before the sync. */
  readonly peakRssOverBaseBytes: number;
  /** From constructing the informer to its store holding every object. */
  readonly syncMs: number;
  /** Objects in the store (checked against the expected count). */
  readonly objects: number;
  /** GCs during the sync (each read at its start), and timer readings. */
  readonly gcs: number;
  readonly timerSamples: number;
}

const HWM_RESET = '/proc/self/clear_refs';
const STATUS = '/proc/self/status';

function resetHighWater(): boolean {
  try {
    writeFileSync(HWM_RESET, '5'); // Linux ≥ 4.0: "5" resets the peak RSS (VmHWM) to the current RSS
    return true;
  } catch {
    return false;
  }
}

function highWaterRss(): number | undefined {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(STATUS, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

type GcHeap = { heapStatistics: { usedHeapSize: number; externalMemory: number } };

/**
 * Measures `sync` by the method above. `sync` resolves once its store holds every object and
 * returns the object count and a release function (called after the store was measured).
 */
export async function measureSync(
  sync: () => Promise<{ objects: number; release: () => Promise<void> }>,
): Promise<MemoryReading> {
  const base = await settledHeapInUse();
  const rssBase = process.memoryUsage().rss;
  const exactRss = resetHighWater();
  let peak = base;
  let peakRss = rssBase;
  let timerSamples = 0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    timerSamples++;
    peak = Math.max(peak, m.heapUsed + m.external);
    peakRss = Math.max(peakRss, m.rss);
  }, 2);
  const profiler = new GCProfiler();
  profiler.start();
  const started = performance.now();
  let synced: { objects: number; release: () => Promise<void> };
  let gcs: number;
  try {
    synced = await sync();
  } finally {
    clearInterval(timer);
    const profile = profiler.stop() as unknown as { statistics: Array<{ beforeGC: GcHeap }> } | undefined;
    gcs = profile?.statistics.length ?? 0;
    for (const entry of profile?.statistics ?? []) {
      const h = entry.beforeGC.heapStatistics;
      peak = Math.max(peak, h.usedHeapSize + h.externalMemory);
    }
  }
  const syncMs = performance.now() - started;
  peak = Math.max(peak, heapInUse());
  const hwm = exactRss ? highWaterRss() : undefined;
  const peakRssBytes = Math.max(hwm ?? peakRss, process.memoryUsage().rss);
  const store = (await settledHeapInUse()) - base;
  const objects = synced.objects;
  await synced.release();
  return {
    peakHeapBytes: Math.max(peak - base, store),
    storeHeapBytes: store,
    peakRssBytes,
    peakRssOverBaseBytes: peakRssBytes - rssBase,
    syncMs,
    objects,
    gcs,
    timerSamples,
  };
}

/** What a measuring child syncs. */
export type SyncJob = (
  | {
      readonly kind: 'reflector';
      readonly kubeconfig: string;
      readonly pods: number;
      readonly initialList: 'list' | 'watch-list';
      /** LIST page size; 0 for one unpaged LIST. */
      readonly listPageSize: number;
      /** The reflector's `listTimeoutMs`; its default (90 s) when absent. */
      readonly listTimeoutMs?: number;
    }
  | { readonly kind: 'client-node'; readonly kubeconfig: string; readonly pods: number }
) & {
  /** `--max-old-space-size` for the child; Node's default (by the machine's memory) when absent. */
  readonly heapLimitMb?: number;
};

/**
 * Runs `job` in a fresh child process (`memory-child.ts`) and returns its reading. The child gets
 * this process's module flags (tsx, the source condition) and `--expose-gc`, and Node's default
 * heap limits unless the job sets one: no `--gc-global`, as a controller would run.
 */
export function measureInChild(job: SyncJob, timeoutMs = 600_000): Promise<MemoryReading> {
  const execArgv = process.execArgv.filter(
    (a) => !a.startsWith('--cpu-prof') && !a.startsWith('--max-old-space-size') && a !== '--gc-global' && a !== '--expose-gc',
  );
  const child = fork(fileURLToPath(new URL('./memory-child.ts', import.meta.url)), [], {
    execArgv: ['--expose-gc', ...(job.heapLimitMb === undefined ? [] : [`--max-old-space-size=${job.heapLimitMb}`]), ...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise<MemoryReading>((resolve, reject) => {
    let reading: MemoryReading | undefined;
    let failure: string | undefined;
    const timer = setTimeout(() => {
      failure = `measuring child did not finish within ${timeoutMs / 1000} s`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('message', (message: { ok: true; reading: MemoryReading } | { ok: false; error: string } | 'ready') => {
      if (message === 'ready') child.send(job);
      else if (message.ok) reading = message.reading;
      else failure = message.error;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (reading !== undefined) resolve(reading);
      else reject(new Error(`measuring child (${job.kind}): ${failure ?? `exited with code ${String(code)}`}`));
    });
  });
}
