/**
 * Preloaded (`node --expose-gc --import <this file>`) into a process the bench does not own the code
 * of — the built CellSet controller (`dist/main.js`) or a bare `node -e 'await import(…)'` — to read
 * its memory from inside. Node strips this file's types itself: it imports only `node:` modules,
 * so the process needs no tsx and loads nothing of the bench.
 *
 * A reading is one JSON line appended to the file named by `RL_PROBE_OUT`:
 * - on SIGUSR2 (the controller, once it has synced and gone idle); Node does not use SIGUSR2;
 * - at exit when `RL_PROBE_AT_EXIT=1` (an import child: its modules are loaded, nothing keeps it up).
 *
 * What costs the process: the `--expose-gc` flag (no memory) and this module (a few kB of heap).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

/** One probe reading, bytes. */
export interface ProbeReading {
  /** `heapUsed + external` as the process held it, before any forced GC (garbage included). */
  readonly heldHeapBytes: number;
  /** `heapUsed + external` after four forced full GCs: what is reachable. */
  readonly liveHeapBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  readonly heapTotalBytes: number;
  /** RSS now, after the forced GCs. */
  readonly rssBytes: number;
  /** The kernel's high-water RSS of the process (`VmHWM`), over its whole life. */
  readonly peakRssBytes: number;
  /** V8's heap limit: Node sizes it from the cgroup's limit (`process.constrainedMemory()`). */
  readonly heapLimitBytes: number;
  /** The limit Node saw; absent when unconstrained. */
  readonly containerLimitBytes?: number;
}

const out = process.env['RL_PROBE_OUT'];
const gc = (globalThis as { gc?: () => void }).gc;

function statusKb(field: string): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

function read(): ProbeReading {
  const held = process.memoryUsage();
  for (let i = 0; i < 4; i++) gc?.();
  const m = process.memoryUsage();
  const constrained = process.constrainedMemory();
  return {
    heldHeapBytes: held.heapUsed + held.external,
    liveHeapBytes: m.heapUsed + m.external,
    heapUsedBytes: m.heapUsed,
    externalBytes: m.external,
    heapTotalBytes: m.heapTotal,
    rssBytes: m.rss,
    peakRssBytes: Math.max(statusKb('VmHWM'), m.rss),
    heapLimitBytes: getHeapStatistics().heap_size_limit,
    // Node reports a huge number (or 0) when no limit is set: only a real limit is recorded.
    ...(constrained > 0 && constrained < 2 ** 50 && { containerLimitBytes: constrained }),
  };
}

function write(): void {
  if (out !== undefined) appendFileSync(out, `${JSON.stringify(read())}\n`);
}

if (out !== undefined) {
  process.on('SIGUSR2', write);
  if (process.env['RL_PROBE_AT_EXIT'] === '1') process.once('exit', write);
}
