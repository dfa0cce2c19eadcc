import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './config.js';

/** A child this process started and must end (a kept environment's children are untracked). */
export interface TrackedChild {
  readonly pid: number;
  readonly binary: string;
}

interface RunRecord {
  readonly owner: number;
  readonly runDir: string;
  readonly children: TrackedChild[];
}

const children = new Map<number, TrackedChild>();
const runDirs = new Set<string>();
let handlersInstalled = false;

function recordPath(): string {
  return join(cacheRoot(), 'runs', `${process.pid}.json`);
}

function persist(): void {
  // The record outlives a SIGKILLed owner, so the next run can end what this one left.
  try {
    mkdirSync(join(cacheRoot(), 'runs'), { recursive: true });
    if (children.size === 0) {
      rmSync(recordPath(), { force: true });
      return;
    }
    const record: RunRecord = { owner: process.pid, runDir: [...runDirs].join('\n'), children: [...children.values()] };
    writeFileSync(recordPath(), JSON.stringify(record));
  } catch {
    // best effort: the record only serves the reaper
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when `pid` is alive and still runs `binary` (guards against a reused pid). */
function runs(pid: number, binary: string): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === binary;
  } catch {
    return false;
  }
}

/** SIGKILLs `child` when it still runs its binary; true when the signal was sent. */
function killIfRunning(child: TrackedChild): boolean {
  if (!runs(child.pid, child.binary)) return false;
  try {
    process.kill(child.pid, 'SIGKILL');
    return true;
  } catch {
    // raced with its exit
    return false;
  }
}

/**
 * Kills every tracked child with SIGKILL and removes the run directories still registered;
 * synchronous, so it is safe inside an 'exit' handler.
 */
export function killAllSync(): void {
  for (const child of children.values()) killIfRunning(child);
  children.clear();
  for (const runDir of runDirs) rmSync(runDir, { recursive: true, force: true });
  runDirs.clear();
  persist();
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      killAllSync();
      // Only re-raise when nobody else handles the signal, so we never change a host's policy.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, handler);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, handler);
  }
}

/** Starts tracking a child; installs the exit and signal handlers on first use. */
export function track(child: TrackedChild, runDir: string): void {
  installHandlers();
  children.set(child.pid, child);
  runDirs.add(runDir);
  persist();
}

/** Stops tracking a child that has exited. */
export function untrack(pid: number): void {
  children.delete(pid);
  persist();
}

/** Forget a run directory once its environment is torn down. */
export function forgetRunDir(runDir: string): void {
  runDirs.delete(runDir);
  persist();
}

/**
 * Hands a kept environment (RECONCILE_LOOP_E2E_KEEP) to the user: its children and run
 * directory are no longer ended or removed, by this process or by a later reaper.
 */
export function keepChildren(pids: readonly number[], runDir: string): void {
  for (const pid of pids) children.delete(pid);
  runDirs.delete(runDir);
  persist();
}

/**
 * Ends children left by earlier runs whose owner died without tearing down (SIGKILL, OOM),
 * and removes their run directories. Kept environments (untracked) and live owners are left alone.
 * Returns the pids it ended.
 */
export function reapStaleRuns(): number[] {
  const dir = join(cacheRoot(), 'runs');
  const ended: number[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return ended;
  }
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const path = join(dir, name);
    let record: RunRecord;
    try {
      record = JSON.parse(readFileSync(path, 'utf8')) as RunRecord;
    } catch {
      rmSync(path, { force: true });
      continue;
    }
    if (record.owner === process.pid || alive(record.owner)) continue;
    for (const child of record.children) if (killIfRunning(child)) ended.push(child.pid);
    for (const runDir of record.runDir.split('\n')) {
      if (runDir.includes('reconcile-loop-e2e-')) rmSync(runDir, { recursive: true, force: true });
    }
    rmSync(path, { force: true });
  }
  return ended;
}
