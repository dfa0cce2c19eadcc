/**
 * The built CellSet controller (`examples/cellset/dist/main.js`, as `start:prod` runs it: plain
 * `node`, no tsx, no pnpm) in a memory cgroup of its own (`container.ts`), with `memory-probe.ts`
 * preloaded to read its heap from inside; and bare `node` importing a package, the same way, for the
 * import floor. Only the child is in the cgroup: the apiserver lives elsewhere.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CgroupMemory, type Container, openContainer } from './container.js';
import { collectLines, EXAMPLE, terminate } from './cellset-child.js';
import type { ProbeReading } from './memory-probe.js';

const PROBE = join(dirname(fileURLToPath(import.meta.url)), 'memory-probe.ts');

/**
 * The reference run's cgroup limit: 64 GiB, above this machine's memory (24 GiB), so Node sizes
 * V8's heap from the machine as it would without a limit, while the cgroup still counts the peak.
 */
export const UNCONSTRAINED_MB = 65_536;

/**
 * A copy of this Node binary whose pages are in no page cache: written with `O_DIRECT` (`dd
 * oflag=direct`), so the first process to run it faults its 150 MB in and the kernel charges those
 * pages to that process's cgroup, as in a container started on a node that never ran the image. A
 * binary every run shares is cached already and charged to whichever cgroup read it first (here the
 * bench's), so the warm runs count none of it. Returns the path and a cleanup, or why not.
 */
export function coldNodeCopy(): { path: string; remove: () => void } | string {
  const dir = mkdtempSync(join(tmpdir(), 'rl-cold-node-'));
  const path = join(dir, 'node');
  try {
    execFileSync('dd', [`if=${process.execPath}`, `of=${path}`, 'bs=4M', 'oflag=direct', 'status=none']);
    execFileSync('chmod', ['755', path]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot write an uncached copy of node: ${(error as Error).message}`;
  }
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** How a child ended up. */
export type Outcome = 'synced' | 'oom-killed' | 'heap-oom' | 'stalled' | 'failed';

/** A child in a fresh memory cgroup, its output kept, its probe file beside it. */
export class ContainedNode {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #child: ChildProcess;
  readonly #container: Container;
  readonly #scratch: string;
  readonly #probeFile: string;
  /** The cgroup's last word, read just before {@link stop} removes it (an OOM kill is counted there only). */
  #final: { oomKilled: boolean; memory: CgroupMemory } | undefined;

  /** Throws when no memory cgroup can be made here: this benchmark measures the kernel's limit, not an approximation. */
  constructor(limitMb: number, args: readonly string[], env: Readonly<Record<string, string>> = {}) {
    const container = openContainer(limitMb);
    if (typeof container === 'string') throw new Error(`controller-memory needs a memory cgroup: ${container}`);
    this.#container = container;
    this.#scratch = mkdtempSync(join(tmpdir(), 'rl-ctrl-mem-'));
    this.#probeFile = join(this.#scratch, 'probe.jsonl');
    writeFileSync(this.#probeFile, '');
    const base = { ...process.env };
    delete base['NODE_OPTIONS']; // the child is `node` with exactly the flags below, as in a container
    this.#child = spawn(container.execPath, ['--expose-gc', '--import', PROBE, ...args], {
      cwd: EXAMPLE,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...base, ...container.env, ...env, RL_PROBE_OUT: this.#probeFile },
    });
    collectLines(this.#child, this.lines);
    this.exited = new Promise((resolve) => this.#child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get alive(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  has(pattern: RegExp): boolean {
    return this.lines.some((l) => pattern.test(l));
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.#child.kill(signal);
  }

  /** The probe's readings so far (one per SIGUSR2, or the one at exit). */
  readings(): ProbeReading[] {
    return readFileSync(this.#probeFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as ProbeReading);
  }

  /** Asks the probe for a reading and waits for it (at most `timeoutMs`). */
  async probe(timeoutMs = 20_000): Promise<ProbeReading | undefined> {
    const before = this.readings().length;
    this.signal('SIGUSR2');
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline && this.alive) {
      const all = this.readings();
      if (all.length > before) return all.at(-1);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return undefined;
  }

  oomKilled(): boolean {
    return this.#final?.oomKilled ?? this.#container.oomKilled();
  }

  cgroup(): CgroupMemory {
    return this.#final?.memory ?? this.#container.memory();
  }

  /** SIGTERM, SIGKILL after `graceMs`; then the cgroup and scratch files go. Safe to call twice. */
  async stop(graceMs = 20_000): Promise<void> {
    await terminate((signal) => this.signal(signal), this.exited, graceMs);
    this.#final ??= { oomKilled: this.#container.oomKilled(), memory: this.#container.memory() };
    this.#container.close();
    rmSync(this.#scratch, { recursive: true, force: true });
  }

  /** How the child ended, from its exit and the cgroup's OOM counter. */
  outcome(exit: { code: number | null; signal: NodeJS.Signals | null }): Outcome {
    if (this.oomKilled()) return 'oom-killed';
    // V8's own limit (sized from the cgroup's) reached first: Node prints this and aborts.
    if (this.has(/JavaScript heap out of memory|Reached heap limit/)) return 'heap-oom';
    return exit.code === 0 ? 'synced' : 'failed';
  }
}

/** Polls `ok` every 100 ms; false when `timeoutMs` passes or `alive` turns false first. */
export async function waitFor(ok: () => boolean | Promise<boolean>, alive: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await ok()) return true;
    if (!alive()) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** The sum of every sample of `metric` in a Prometheus text exposition. */
export function metricSum(text: string, metric: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${metric}{`) || line.startsWith(`${metric} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** What one import child measured: the probe at exit and the cgroup after it. */
export interface ImportReading {
  readonly probe: ProbeReading;
  readonly cgroup: CgroupMemory;
}

/**
 * Bare `node` (in `examples/cellset`, so packages resolve as the controller's do: its
 * `@kubernetes/client-node` 2.x, the workspace packages' built `dist`) importing `specifiers` in
 * order, then exiting: the probe reads it at exit, after forced GCs.
 */
export async function measureImport(limitMb: number, specifiers: readonly string[]): Promise<ImportReading> {
  const code = specifiers.map((s) => `await import(${JSON.stringify(s)});`).join(' ');
  return measureContained(limitMb, ['--input-type=module', '-e', code]);
}

/** `node dist/main.js --help`: the built entry's modules evaluated, usage printed, nothing started. */
export function measureEntryLoad(limitMb: number): Promise<ImportReading> {
  return measureContained(limitMb, ['dist/main.js', '--help']);
}

async function measureContained(limitMb: number, args: readonly string[]): Promise<ImportReading> {
  const child = new ContainedNode(limitMb, args, { RL_PROBE_AT_EXIT: '1' });
  const exit = await child.exited;
  const probe = child.readings().at(-1);
  const cgroup = child.cgroup();
  const outcome = child.outcome(exit);
  await child.stop();
  if (probe === undefined || outcome !== 'synced')
    throw new Error(`import child (${args.join(' ')}) under ${limitMb} MiB: ${outcome}\n${child.lines.slice(-10).join('\n')}`);
  return { probe, cgroup };
}
