import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { track, untrack } from './registry.js';

/** How to start one control-plane process; restart reuses it unchanged (same ports, same data). */
export interface ProcessSpec {
  readonly name: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly runDir: string;
}

/** Raised when a process exits while the harness expects it up; carries the log tail. */
export class ProcessExitedError extends Error {
  readonly code = 'E2E_PROCESS_EXITED';
  constructor(message: string) {
    super(message);
    this.name = 'ProcessExitedError';
  }
}

/**
 * One child process (etcd or kube-apiserver) with stop / kill / start. Output goes to a log
 * file, never to a pipe, so a kept environment survives the test process, and the child runs
 * in its own process group so a terminal's Ctrl-C reaches the harness first, which ends it.
 */
export class ManagedProcess {
  readonly spec: ProcessSpec;
  #child: ChildProcess | undefined;
  #exit: Promise<void> = Promise.resolve();
  #lastExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(spec: ProcessSpec) {
    this.spec = spec;
  }

  /** Pid of the running child, or undefined when stopped. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** True between start() and the child's exit. */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /** How the previous child ended, if one did. */
  get lastExit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.#lastExit;
  }

  /** Spawns the child; a no-op when it is already running. */
  start(): void {
    if (this.#child !== undefined) return;
    const fd = openSync(this.spec.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(this.spec.binary, [...this.spec.args], { stdio: ['ignore', fd, fd], detached: true });
    } finally {
      closeSync(fd);
    }
    child.unref();
    // A spawn failure (ENOENT, EACCES) arrives as an 'error' event; unhandled it would crash the run.
    child.on('error', () => undefined);
    const pid = child.pid;
    if (pid === undefined) throw new ProcessExitedError(`${this.spec.name}: could not spawn ${this.spec.binary}`);
    this.#child = child;
    track({ pid, binary: this.spec.binary }, this.spec.runDir);
    this.#exit = new Promise<void>((resolveExit) => {
      child.once('exit', (code, signal) => {
        this.#lastExit = { code, signal };
        untrack(pid);
        if (this.#child === child) this.#child = undefined;
        resolveExit();
      });
    });
  }

  /** Resolves when the current child has exited (immediately when none runs). */
  exited(): Promise<void> {
    return this.#exit;
  }

  /** Graceful stop: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const escalated = new Promise<void>((resolveTimer) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolveTimer();
      }, graceMs);
    });
    await Promise.race([this.#exit, escalated]);
    clearTimeout(timer);
    await this.#exit;
  }

  /** Abrupt death: SIGKILL, no chance to flush or close connections. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    child.kill('SIGKILL');
    await this.#exit;
  }

  /** The last `lines` lines of the log, for error messages. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.spec.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** Throws with the log tail when the child is not running. */
  assertRunning(): void {
    if (this.#child === undefined) {
      const how =
        this.#lastExit === undefined
          ? 'never started'
          : `exited (code ${String(this.#lastExit.code)}, signal ${String(this.#lastExit.signal)})`;
      throw new ProcessExitedError(`${this.spec.name} ${how}; last log lines (${this.spec.logFile}):\n${this.logTail()}`);
    }
  }
}

/**
 * A control-plane server over one ManagedProcess: stop, kill and restart are the process's,
 * readiness is the subclass's. Restart reuses the spec, so ports, data and certificates survive.
 */
export abstract class ManagedService {
  readonly process: ManagedProcess;

  protected constructor(proc: ManagedProcess) {
    this.process = proc;
  }

  /** Starts the (stopped) process and waits until it is ready. */
  abstract startProcess(): Promise<void>;

  /** Graceful stop (SIGTERM, SIGKILL after the grace period). */
  stop(): Promise<void> {
    return this.process.stop();
  }

  /** SIGKILL: no chance to flush, connections drop without a goodbye. */
  kill(): Promise<void> {
    return this.process.kill();
  }

  /** Stop (graceful unless `kill`) and start again with the same ports and data. */
  async restart(options: { kill?: boolean } = {}): Promise<void> {
    await (options.kill === true ? this.process.kill() : this.process.stop());
    await this.startProcess();
  }
}

/**
 * Polls `probe` until it returns true, failing early when `proc` exits and with the log tail
 * after `timeoutMs`. Real time on purpose: this waits for a real process.
 */
export async function waitUntil(
  proc: ManagedProcess,
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    proc.assertRunning();
    try {
      if (await probe()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new ProcessExitedError(
        `${proc.spec.name}: ${what} not reached in ${timeoutMs} ms (last error: ${String(last)}); log ${proc.spec.logFile}:\n${proc.logTail()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
