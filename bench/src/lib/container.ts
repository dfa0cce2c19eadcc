/**
 * A memory limit for one measuring child, the way a pod's `resources.limits.memory` sets one: a
 * Linux memory cgroup the child joins before Node starts. Node reads the limit
 * (`process.constrainedMemory()`) and sizes V8's heap from it, and V8 sizes its young generation from
 * the heap: on this 24 GiB machine an unconstrained Node lets new space grow to 64 MB, in a 1 GiB
 * container to 16 MB, in 512 MiB to about 10 MB. A controller runs in a container, so the memory
 * method measures it in one (BENCHMARKS (28f)). The limit is enforced too: a child that goes over
 * it is killed by the kernel, as the pod would be.
 *
 * cgroup v1 (`memory.limit_in_bytes`) and v2 (`memory.max`) are both tried; creating a cgroup needs
 * write access to the process's own cgroup directory (root in a container or VM, or a delegated
 * subtree). Where that is missing {@link openContainer} says why, and the caller falls back to
 * {@link limitFlags} (set `RL_BENCH_CONTAINER=flags` to choose them): V8 flags that size the heap
 * close to what Node picks under the limit (Node 26 under 512 MiB: a 281 MB heap, new space up to
 * 8.4 MB; the flags give 262 MB and 6.8 MB), without the kernel's enforcement. A reading says which
 * of the two it ran under.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Container {
  /** Passed to `fork` as `execPath`: joins the cgroup, then execs this Node with the same arguments. */
  readonly execPath: string;
  /** Merged into the child's environment: where to join and which Node to exec. */
  readonly env: Readonly<Record<string, string>>;
  /** Whether the kernel killed a process of this cgroup for going over the limit. */
  oomKilled(): boolean;
  /**
   * The cgroup's memory now: its high-water usage since it was made (v1 `memory.max_usage_in_bytes`,
   * v2 `memory.peak`, kernel ≥ 5.19), its usage, and the anonymous and file-backed parts of it from
   * `memory.stat`. Usage is what the limit is enforced on; its file part is page cache the kernel
   * reclaims before it kills, so a process is killed only when the anonymous part cannot fit.
   * Undefined fields: the kernel has no such file.
   */
  memory(): CgroupMemory;
  /** Removes the cgroup (its processes must have exited) and the wrapper. */
  close(): void;
}

/** One reading of a memory cgroup's own accounting, bytes. */
export interface CgroupMemory {
  readonly peakBytes?: number;
  readonly usageBytes?: number;
  /** v1 `rss` (anonymous, this cgroup alone), v2 `anon`. */
  readonly anonBytes?: number;
  /** v1 `cache`, v2 `file`: page cache charged to this cgroup. */
  readonly fileBytes?: number;
}

/**
 * The `name value` lines of a cgroup counter file (`memory.stat`, `memory.events`,
 * `memory.oom_control`) as numbers; lines of another shape are skipped.
 */
export function parseCgroupCounters(text: string): Map<string, number> {
  const counters = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\w+) (\d+)$/.exec(line.trim());
    if (m !== null) counters.set(m[1]!, Number(m[2]));
  }
  return counters;
}

/** A single-number cgroup file (`memory.peak`, `memory.usage_in_bytes`); `max` and anything else: undefined. */
export function parseCgroupBytes(text: string): number | undefined {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

const WRAPPER = `#!/bin/sh
# Joins the memory cgroup named by RL_BENCH_CGROUP, then runs Node: the limit is in force before
# Node reads it at start-up.
echo $$ > "$RL_BENCH_CGROUP/cgroup.procs" || { echo "cannot join the memory cgroup $RL_BENCH_CGROUP" >&2; exit 97; }
exec "$RL_BENCH_NODE" "$@"
`;

/** This process's cgroup directory holding the memory controller, and the file that sets a limit. */
function memoryCgroup(): { dir: string; limitFile: string } | string {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch {
    return 'no /proc/self/cgroup (not Linux)';
  }
  for (const line of lines) {
    const [, controllers, path] = line.split(':', 3) as [string, string, string];
    if (controllers.split(',').includes('memory')) {
      return { dir: join('/sys/fs/cgroup/memory', path), limitFile: 'memory.limit_in_bytes' };
    }
  }
  const unified = lines.find((l) => l.startsWith('0::'));
  if (unified !== undefined) {
    const dir = join('/sys/fs/cgroup', unified.slice(3));
    try {
      if (readFileSync(join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) {
        return { dir, limitFile: 'memory.max' };
      }
    } catch {
      // fall through
    }
  }
  return 'no memory cgroup controller for this process';
}

/** V8 flags approximating Node's heap sizing under a `limitMb` container (see the module's comment). */
export function limitFlags(limitMb: number): string[] {
  return [`--max-old-space-size=${Math.round(limitMb / 2)}`, `--max-semi-space-size=${Math.max(1, Math.round(limitMb / 256))}`];
}

let opened = 0;

/** A fresh memory cgroup limited to `limitMb` MiB, or the reason one cannot be made here. */
export function openContainer(limitMb: number): Container | string {
  if (process.env['RL_BENCH_CONTAINER'] === 'flags') return 'RL_BENCH_CONTAINER=flags';
  const parent = memoryCgroup();
  if (typeof parent === 'string') return parent;
  const limitBytes = limitMb * 1024 * 1024;
  const dir = join(parent.dir, `rl-bench-${process.pid}-${++opened}`);
  const scratch = mkdtempSync(join(tmpdir(), 'rl-container-'));
  try {
    writeFileSync(join(scratch, 'node'), WRAPPER);
    chmodSync(join(scratch, 'node'), 0o755);
    // A read-only cgroupfs or a missing delegation answers EROFS/EACCES here: reported, not thrown.
    if (!existsSync(dir)) mkdirSync(dir);
    writeFileSync(join(dir, parent.limitFile), String(limitBytes));
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    try {
      rmdirSync(dir);
    } catch {
      // never made
    }
    return `cannot make a memory cgroup under ${parent.dir}: ${(error as Error).message}`;
  }
  return {
    execPath: join(scratch, 'node'),
    env: { RL_BENCH_CGROUP: dir, RL_BENCH_NODE: process.execPath },
    oomKilled() {
      try {
        // v1: memory.oom_control has "oom_kill N"; v2: memory.events has "oom_kill N".
        const file = parent.limitFile === 'memory.max' ? 'memory.events' : 'memory.oom_control';
        return (parseCgroupCounters(readFileSync(join(dir, file), 'utf8')).get('oom_kill') ?? 0) > 0;
      } catch {
        return false;
      }
    },
    memory() {
      const v2 = parent.limitFile === 'memory.max';
      const read = (file: string): string | undefined => {
        try {
          return readFileSync(join(dir, file), 'utf8');
        } catch {
          return undefined;
        }
      };
      const bytes = (file: string): number | undefined => {
        const text = read(file);
        return text === undefined ? undefined : parseCgroupBytes(text);
      };
      const stat = parseCgroupCounters(read('memory.stat') ?? '');
      const peakBytes = bytes(v2 ? 'memory.peak' : 'memory.max_usage_in_bytes');
      const usageBytes = bytes(v2 ? 'memory.current' : 'memory.usage_in_bytes');
      const anonBytes = stat.get(v2 ? 'anon' : 'rss');
      const fileBytes = stat.get(v2 ? 'file' : 'cache');
      return {
        ...(peakBytes !== undefined && { peakBytes }),
        ...(usageBytes !== undefined && { usageBytes }),
        ...(anonBytes !== undefined && { anonBytes }),
        ...(fileBytes !== undefined && { fileBytes }),
      };
    },
    close() {
      rmSync(scratch, { recursive: true, force: true });
      try {
        rmdirSync(dir);
      } catch {
        // a process still in it (or already gone): the kernel removes nothing by itself, but an
        // empty leftover cgroup costs nothing and the next run uses a fresh name
      }
    },
  };
}
