import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Requests the parent sends to the apiserver child. */
export type ChildRequest = { id: number } & (
  | { cmd: 'start'; maxHistory: number; shardedListAndWatch?: boolean }
  | { cmd: 'seed'; count: number }
  | { cmd: 'modify'; count: number }
  | { cmd: 'inject'; rate: number; durationMs: number }
  | { cmd: 'clock' }
  | { cmd: 'revision' }
  | { cmd: 'waitForWatches'; count: number; timeoutMs: number }
  | { cmd: 'openWatches' }
  | { cmd: 'dropWatches' }
  | { cmd: 'startReplay'; resourceVersion: string; frames: number; poisonFrame?: number }
  | { cmd: 'heap' }
  | { cmd: 'cpu' }
  | { cmd: 'profileStart' }
  | { cmd: 'profileStop'; file: string }
  | { cmd: 'close' }
);

/** Replies from the child; id 0 announces readiness. */
export type ChildReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

type Body<C extends ChildRequest['cmd']> = Omit<Extract<ChildRequest, { cmd: C }>, 'id' | 'cmd'>;
type Pending = Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;

/**
 * The embedded apiserver in a child process. Its writes, serialization and socket writes run on
 * the other core and its heap is its own, so the measuring process sees only the client side.
 */
export class ApiServerProcess {
  readonly url: string;
  readonly kubeconfig: string;
  readonly #child: ChildProcess;
  readonly #pending: Pending;
  #next: number;

  private constructor(child: ChildProcess, pending: Pending, next: number, url: string, kubeconfig: string) {
    this.#child = child;
    this.#pending = pending;
    this.#next = next;
    this.url = url;
    this.kubeconfig = kubeconfig;
  }

  /**
   * Forks the child (same Node flags as this process: tsx and the source condition) and starts the server.
   * `shardedListAndWatch: false` starts it with that feature gate off (it ignores `shardSelector`).
   */
  static async start(maxHistory: number, options: { shardedListAndWatch?: boolean } = {}): Promise<ApiServerProcess> {
    const child = fork(fileURLToPath(new URL('./apiserver-child.ts', import.meta.url)), [], {
      execArgv: process.execArgv.filter((a) => !a.startsWith('--cpu-prof')),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const pending: Pending = new Map();
    const ready = new Promise<void>((resolve, reject) => {
      pending.set(0, { resolve: () => resolve(), reject });
      child.once('exit', (code) => reject(new Error(`apiserver child exited early (code ${String(code)})`)));
    });
    child.on('message', (reply: ChildReply) => {
      const waiter = pending.get(reply.id);
      if (waiter === undefined) return;
      pending.delete(reply.id);
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(new Error(`apiserver child: ${reply.error}`));
    });
    child.on('exit', (code) => {
      for (const w of pending.values()) w.reject(new Error(`apiserver child exited (code ${String(code)})`));
      pending.clear();
    });
    await ready;
    const send = (id: number, req: ChildRequest): Promise<unknown> =>
      new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send(req);
      });
    const started = (await send(1, { id: 1, cmd: 'start', maxHistory, ...options })) as { url: string; kubeconfig: string };
    return new ApiServerProcess(child, pending, 2, started.url, started.kubeconfig);
  }

  #call<C extends ChildRequest['cmd'], R>(cmd: C, body: Body<C>): Promise<R> {
    const id = this.#next++;
    return new Promise<R>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#child.send({ id, cmd, ...body });
    });
  }

  /** Creates `count` more realistic pods (indices continue from the last seed). */
  seed(count: number): Promise<{ revision: number }> {
    return this.#call('seed', { count });
  }

  /** `count` round-robin pod modifications, as fast as the server commits them. */
  modify(count: number): Promise<{ revision: number; ms: number }> {
    return this.#call('modify', { count });
  }

  /** Steady MODIFIED frames at `rate`/s for `durationMs` into every open watch, each stamped with its send time. */
  inject(rate: number, durationMs: number): Promise<{ frames: number; maxBehindMs: number }> {
    return this.#call('inject', { rate, durationMs });
  }

  /**
   * The child's wall clock minus ours (ms), from the IPC round trip with the smallest delay; add it
   * to a time read here to compare it with a time stamped there.
   */
  async clockOffset(samples = 25): Promise<number> {
    let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 };
    for (let i = 0; i < samples; i++) {
      const t0 = performance.timeOrigin + performance.now();
      const { wall } = await this.#call<'clock', { wall: number }>('clock', {});
      const t1 = performance.timeOrigin + performance.now();
      if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: wall - (t0 + t1) / 2 };
    }
    return best.offset;
  }

  revision(): Promise<{ revision: number }> {
    return this.#call('revision', {});
  }

  waitForWatches(count: number, timeoutMs = 30_000): Promise<{ open: number }> {
    return this.#call('waitForWatches', { count, timeoutMs });
  }

  openWatches(): Promise<{ open: number }> {
    return this.#call('openWatches', {});
  }

  /**
   * Captures the apiserver's LIST body and `frames` watch frames from `resourceVersion`, byte for
   * byte, and serves them from a replay server in this child (see replay-server.ts). Returns its URL.
   * With `poisonFrame`, that watch frame (0-based) is rewritten so its pod fails the schema
   * (`status.phase: 7`): the poison-object variant of the throughput benchmark.
   */
  startReplay(
    resourceVersion: string,
    frames: number,
    poisonFrame?: number,
  ): Promise<{ url: string; listBytes: number; watchBytes: number; poisonedKey?: string }> {
    return this.#call('startReplay', { resourceVersion, frames, ...(poisonFrame !== undefined && { poisonFrame }) });
  }

  /** Ends every open watch, on the apiserver and on the replay server. */
  dropWatches(): Promise<{ dropped: number }> {
    return this.#call('dropWatches', {});
  }

  heap(): Promise<{ heapUsed: number }> {
    return this.#call('heap', {});
  }

  /** The child's CPU time so far (user + system, ms): the server's cost of what it served in between. */
  async cpuMs(): Promise<number> {
    return ((await this.#call('cpu', {})) as { ms: number }).ms;
  }

  /** Starts the V8 CPU profiler in the child (the server's side of a measured run). */
  profileStart(): Promise<unknown> {
    return this.#call('profileStart', {});
  }

  /** Stops the child's profiler and writes its `.cpuprofile` to `file`. */
  profileStop(file: string): Promise<unknown> {
    return this.#call('profileStop', { file });
  }

  /** Closes the server and ends the child. */
  async close(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    await this.#call('close', {}).catch(() => {});
    await exited;
  }
}
