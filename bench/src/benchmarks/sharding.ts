/**
 * sharding (issue 27): reconcile throughput, heap and bytes received per replica with 1, 2 and 4
 * replicas sharing the parents by uid, each a ReconcileLoop with `shard: { gate: ShardMember }` on
 * its own Lease, over a reflector with the `shard` option.
 *
 * - The embedded apiserver runs in a child process, and so does every replica
 *   (`lib/shard-replica-child.ts`): each heap and each socket count is one replica's own.
 * - Two servers: the ShardedListAndWatch gate on (server-side filtering, the default) and off (the
 *   reflector's client-side fallback: every replica receives every pod and keeps its share).
 * - For each replica count: start the replicas on a fresh ring (each member's `expectedMembers` is
 *   the count, as a Deployment's `replicas`: no member lists before it has seen them all), wait until the ring settled (every
 *   member sees N members, no handover pending, the stores hold every parent exactly once between
 *   them), then write every parent once (the burst) and wait until every written parent was
 *   reconciled. The reconcile is I/O-bound: a fixed await of `reconcileMs` at `concurrency` per
 *   replica, for the pods written in the burst only (the initial listing's reconciles return at once).
 * - Throughput = reconciles of the burst / (last end − first start) over all replicas (one machine clock).
 * - Heap per replica = settled heap in use (`heapUsed + external` after forced GCs, as in
 *   `lib/memory.ts`) after the burst, over the settled heap before the member and loop started: the
 *   store, the watch, the queue and the member; the mean over the replicas.
 * - Bytes received per replica = `bytesRead` of every client socket of the replica from its start to
 *   after the burst (the LIST, the watch, the Lease traffic; HTTP framing included); the mean.
 * One run per configuration (each takes seconds to settle); `ctx.runs` is not repeated here. The smoke
 * runs a two-member ring in each mode, 200 parents; `--pods=N` sets the parent count (default 3,000);
 * `RL_BENCH_SHARDING_MODES=server` (or `clientSide`) runs one mode only.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { NAMESPACE } from '../lib/pods.js';
import type { ReplicaJob, ReplicaMeasure, ReplicaRequest, ReplicaStatus } from '../lib/shard-replica-child.js';

export interface ShardingRow {
  readonly replicas: number;
  readonly reconcilesPerSec: number;
  readonly heapPerReplicaMB: number;
  readonly bytesReceivedPerReplica: number;
  /** The largest replica's figures (shares are uneven: virtual nodes, not exact splits). */
  readonly maxHeapPerReplicaMB: number;
  readonly maxBytesReceivedPerReplica: number;
  /** Settled heap in use of a replica process, absolute (mean), MB. */
  readonly heapAbsolutePerReplicaMB: number;
  /** Bytes received per replica (mean) from the ring settled to after the burst: the steady share, without the start's listings. */
  readonly bytesAfterSettledPerReplica: number;
  /**
   * The busiest replica's part of the reconciles: the ring's virtual nodes split the keyspace unevenly,
   * and the burst ends when the busiest replica is through, so `1 / largestShare` bounds the speed-up.
   */
  readonly largestShare: number;
  /** Reconciles measured, and from the replicas' start to the ring settled, ms. */
  readonly reconciles: number;
  readonly settleMs: number;
}

export interface ShardingResult {
  readonly parents: number;
  readonly reconcileMs: number;
  readonly concurrency: number;
  /** ShardedListAndWatch on: the server filters. */
  readonly server: readonly ShardingRow[];
  /** The gate off: the reflector filters on the client. */
  readonly clientSide: readonly ShardingRow[];
}

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** One replica process. */
class Replica {
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #next = 1;

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.on('message', (reply: Reply | 'ready') => {
      if (reply === 'ready') return;
      const waiter = this.#pending.get(reply.id);
      if (waiter === undefined) return;
      this.#pending.delete(reply.id);
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(new Error(`shard replica: ${reply.error}`));
    });
    child.on('exit', (code) => {
      for (const w of this.#pending.values()) w.reject(new Error(`shard replica exited (code ${String(code)})`));
      this.#pending.clear();
    });
  }

  static async start(job: ReplicaJob): Promise<Replica> {
    const execArgv = process.execArgv.filter(
      (a) => !a.startsWith('--cpu-prof') && !a.startsWith('--max-old-space-size') && a !== '--expose-gc',
    );
    const child = fork(fileURLToPath(new URL('../lib/shard-replica-child.ts', import.meta.url)), [], {
      execArgv: ['--expose-gc', ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const replica = new Replica(child);
    const started = new Promise<void>((resolve, reject) => replica.#pending.set(0, { resolve: () => resolve(), reject }));
    child.once('message', () => child.send(job));
    await started;
    return replica;
  }

  call<T>(req: ReplicaRequest): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#child.send({ id, req });
    });
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 15_000);
    await this.call({ cmd: 'stop' }).catch(() => {});
    await exited;
    clearTimeout(timer);
  }
}

const MB = 1024 * 1024;
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`sharding: ${what} not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function measure(
  server: ApiServerProcess,
  replicas: number,
  ring: string,
  parents: number,
  timing: Omit<ReplicaJob, 'kubeconfig' | 'namespace' | 'ring' | 'identity' | 'expectedMembers'>,
): Promise<ShardingRow> {
  const started = performance.now();
  const members = await Promise.all(
    Array.from({ length: replicas }, (_, i) =>
      Replica.start({
        kubeconfig: server.kubeconfig,
        namespace: NAMESPACE,
        ring,
        identity: `${ring}-${i}`,
        expectedMembers: replicas,
        ...timing,
      }),
    ),
  );
  try {
    const statuses = () => Promise.all(members.map((m) => m.call<ReplicaStatus>({ cmd: 'status' })));
    const settled = await waitFor('the ring settled', Math.max(60_000, parents * 10), async () => {
      const s = await statuses();
      const settled =
        s.every((x) => x.members === replicas && !x.handover && x.holdsLease) && s.reduce((a, x) => a + x.stored, 0) === parents;
      return settled ? s : undefined;
    });
    const settleMs = performance.now() - started;
    const { revision } = await server.revision();
    await Promise.all(members.map((m) => m.call({ cmd: 'arm', afterRevision: revision })));
    await server.modify(parents);
    // One replica works through the burst at concurrency / reconcileMs (80/s): allow twice that.
    const burstMs = Math.max(120_000, (2 * parents * timing.reconcileMs) / timing.concurrency);
    const done = await waitFor('every written parent reconciled', burstMs, async () => {
      const s = await statuses();
      return s.reduce((a, x) => a + x.done, 0) >= parents ? s : undefined;
    });
    const reconciles = done.reduce((a, x) => a + x.done, 0);
    const active = done.filter((x) => x.done > 0);
    const windowMs = Math.max(...active.map((x) => x.lastEndMs)) - Math.min(...active.map((x) => x.firstStartMs));
    const m = await Promise.all(members.map((r) => r.call<ReplicaMeasure>({ cmd: 'measure' })));
    return {
      replicas,
      reconcilesPerSec: (reconciles * 1000) / windowMs,
      heapPerReplicaMB: mean(m.map((x) => x.heapBytes)) / MB,
      bytesReceivedPerReplica: Math.round(mean(m.map((x) => x.bytesReceived))),
      maxHeapPerReplicaMB: Math.max(...m.map((x) => x.heapBytes)) / MB,
      maxBytesReceivedPerReplica: Math.max(...m.map((x) => x.bytesReceived)),
      heapAbsolutePerReplicaMB: mean(m.map((x) => x.heapAbsoluteBytes)) / MB,
      bytesAfterSettledPerReplica: Math.round(mean(m.map((x, i) => x.bytesReceived - settled[i]!.bytesReceived))),
      largestShare: Math.max(...done.map((x) => x.done)) / reconciles,
      reconciles,
      settleMs,
    };
  } finally {
    await Promise.all(members.map((m) => m.stop()));
  }
}

function print(label: string, rows: readonly ShardingRow[]): void {
  const one = rows[0]!;
  for (const r of rows) {
    console.log(
      `  ${label} ${r.replicas} replica(s): ${r.reconcilesPerSec.toFixed(0)} reconciles/s (${(r.reconcilesPerSec / one.reconcilesPerSec).toFixed(2)}×), ` +
        `heap/replica ${r.heapPerReplicaMB.toFixed(1)} MB (${((100 * r.heapPerReplicaMB) / one.heapPerReplicaMB).toFixed(0)} %, max ${r.maxHeapPerReplicaMB.toFixed(1)}), ` +
        `bytes/replica ${(r.bytesReceivedPerReplica / MB).toFixed(2)} MB (${((100 * r.bytesReceivedPerReplica) / one.bytesReceivedPerReplica).toFixed(0)} %; ` +
        `after settled ${(r.bytesAfterSettledPerReplica / MB).toFixed(2)} MB, ${((100 * r.bytesAfterSettledPerReplica) / one.bytesAfterSettledPerReplica).toFixed(0)} %), ` +
        `largest share ${(100 * r.largestShare).toFixed(0)} %, settled in ${(r.settleMs / 1000).toFixed(1)} s`,
    );
  }
}

export async function runSharding(ctx: BenchContext): Promise<ShardingResult> {
  // --pods=N sets the parent count (the first given); default 3,000.
  const parents = ctx.smoke ? 200 : ctx.pods === undefined ? 3_000 : [...ctx.pods][0]!;
  const reconcileMs = ctx.smoke ? 10 : 100;
  const concurrency = 8;
  // The smoke proves both modes still run a two-member ring; the full run is issue 27's 1, 2 and 4.
  const counts = ctx.smoke ? [2] : [1, 2, 4];
  // Short Lease timings so a ring settles in seconds, in client-go's ratios (lease > renew deadline > retry).
  const timing = ctx.smoke
    ? { reconcileMs, concurrency, leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 }
    : { reconcileMs, concurrency, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
  // RL_BENCH_SHARDING_MODES=server (or clientSide) runs one mode only: a large --pods run takes minutes per replica count.
  const only = process.env['RL_BENCH_SHARDING_MODES']?.split(',');
  const modes = (
    [
      ['server', true],
      ['clientSide', false],
    ] as const
  ).filter(([mode]) => only === undefined || only.includes(mode));
  const rows: Record<'server' | 'clientSide', ShardingRow[]> = { server: [], clientSide: [] };
  console.log(`\nsharding (${parents} parent pods, reconcile ${reconcileMs} ms at concurrency ${concurrency} per replica)`);
  for (const [mode, gate] of modes) {
    // Each parent is written once per replica count: history for all of them.
    const server = await ApiServerProcess.start(parents * (counts.length + 1) + 100, { shardedListAndWatch: gate });
    try {
      await server.seed(parents);
      for (const n of counts) rows[mode].push(await measure(server, n, `bench-${mode}-${n}`.toLowerCase(), parents, timing));
    } finally {
      await server.close();
    }
    print(mode === 'server' ? 'server-side' : 'client-side', rows[mode]);
  }
  return { parents, reconcileMs, concurrency, server: rows.server, clientSide: rows.clientSide };
}
