/**
 * Child-process entry: one replica of the sharding benchmark, on its own event loop and heap, so its
 * heap and the bytes it receives are its own. A ReconcileLoop whose shard gate is a ShardMember on
 * its own Lease, over the bench namespace's pods through a reflector with the `shard` option (the
 * server filters when its ShardedListAndWatch gate is on; otherwise the reflector falls back to the
 * client-side filter). Driven over IPC by {@link ./shard-replicas.ts}.
 *
 * The reconcile is I/O-bound: a fixed await of `reconcileMs` for a pod written after the `arm`
 * revision (the measured burst), nothing for the rest (the initial listing is not measured).
 *
 * Bytes received are counted on the client's transport: `socket.bytesRead` summed over every TCP
 * socket this process opens (`net.client.socket` diagnostics channel, which `net.connect` publishes
 * for every client socket, whatever HTTP client opened it): HTTP headers and chunk framing
 * included, the member's Lease traffic included.
 *
 * Itemising the heap figure (BENCHMARKS.md (27), "What the part that does not scale is"):
 * `RL_BENCH_SHARDING_HEAP_DIR=<dir>` writes, per replica, `<identity>-base.json` and
 * `<identity>-measure.json` (`process.memoryUsage()`, V8's used size per heap space, stored objects)
 * right after each of the two settled readings, and with `RL_BENCH_SHARDING_HEAP_SNAPSHOTS=1` a heap
 * snapshot beside each (object ids are stable between the two, so the objects allocated since the
 * base can be told apart). Off by default: the snapshots' own collections change the next reading.
 */
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { ReconcileLoop } from '@reconcile-loop/loop';
import { sleep, systemClock } from '@reconcile-loop/primitives';
import { kubeReflector } from '@reconcile-loop/reflector';
import { ShardMember } from '@reconcile-loop/sharding';
import { settledHeapInUse } from './memory.js';

/** The replica's configuration, the parent's first message. */
export interface ReplicaJob {
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly ring: string;
  readonly identity: string;
  readonly reconcileMs: number;
  readonly concurrency: number;
  /** The member's Lease timings (client-go's ratios). */
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** The member's `expectedMembers`: the replica count, as a Deployment's `replicas` would be passed. */
  readonly expectedMembers: number;
}

/** Requests after the job. */
export type ReplicaRequest =
  | { readonly cmd: 'status' }
  | { readonly cmd: 'arm'; readonly afterRevision: number }
  | { readonly cmd: 'measure' }
  | { readonly cmd: 'stop' };

export interface ReplicaStatus {
  readonly members: number;
  readonly handover: boolean;
  readonly holdsLease: boolean;
  readonly stored: number;
  readonly filter: string | undefined;
  /** Reconciles of pods written after the armed revision that completed, and their first start / last end (epoch ms). */
  readonly done: number;
  readonly firstStartMs: number;
  readonly lastEndMs: number;
  /** Bytes read on every client socket since the member and loop started. */
  readonly bytesReceived: number;
}

export interface ReplicaMeasure {
  /** Settled heap in use (`heapUsed + external`, after forced GCs) over the settled heap before the member and loop started. */
  readonly heapBytes: number;
  /** The settled heap in use, absolute (code and the runtime included). */
  readonly heapAbsoluteBytes: number;
  /** Bytes read on every client socket since the member and loop started. */
  readonly bytesReceived: number;
}

const sockets = new Set<Socket>();
let closedBytes = 0;
subscribe('net.client.socket', (message) => {
  const socket = (message as { socket: Socket }).socket;
  sockets.add(socket);
  socket.once('close', () => {
    closedBytes += socket.bytesRead;
    sockets.delete(socket);
  });
});
/** With `RL_BENCH_SHARDING_HEAP_DIR` set: the heap by space (and a snapshot) after a settled reading (see the module comment). */
function recordHeap(identity: string, when: 'base' | 'measure', stored: number): void {
  const dir = process.env['RL_BENCH_SHARDING_HEAP_DIR'];
  if (dir === undefined || dir === '') return;
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
  const file = `${dir}/${identity}-${when}`;
  writeFileSync(`${file}.json`, JSON.stringify({ memoryUsage: process.memoryUsage(), spaces, stored }, null, 1));
  if (process.env['RL_BENCH_SHARDING_HEAP_SNAPSHOTS'] === '1') writeHeapSnapshot(`${file}.heapsnapshot`);
}

function bytesReceived(): number {
  let sum = closedBytes;
  for (const s of sockets) sum += s.bytesRead;
  return sum;
}

async function run(job: ReplicaJob): Promise<void> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(job.kubeconfig);
  const client = new KubeClient({ kubeConfig, rateLimit: false });
  const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  const member = new ShardMember({
    client,
    namespace: job.namespace,
    ring: job.ring,
    identity: job.identity,
    leaseDurationMs: job.leaseDurationMs,
    renewDeadlineMs: job.renewDeadlineMs,
    retryPeriodMs: job.retryPeriodMs,
    // No listing before the ring settled: every replica of this configuration seen, or the ring
    // unchanged for one retry period (the default settle window) if one never shows up.
    expectedMembers: job.expectedMembers,
    logger: quiet,
  });
  const source = kubeReflector({
    name: 'pods',
    kubeClient: client,
    resource: podResource,
    schema: podSchema,
    namespace: job.namespace,
    // Replaced by the member's ranges once it has read the ring.
    shard: { field: 'uid', ranges: [{ start: '0x0000000000000000', end: '0x10000000000000000' }] },
  });
  let afterRevision = Number.POSITIVE_INFINITY;
  let done = 0;
  let firstStartMs = Number.POSITIVE_INFINITY;
  let lastEndMs = 0;
  const loop = new ReconcileLoop({
    source,
    keyMap: (_object, key) => key,
    shard: { gate: member, retryDelayMs: 250 },
    controller: { concurrency: job.concurrency },
    logger: quiet,
    reconcile: async (_key, ctx) => {
      const rv = Number(ctx.parent?.metadata.resourceVersion ?? 0);
      if (!(rv > afterRevision)) return;
      firstStartMs = Math.min(firstStartMs, Date.now());
      await sleep(systemClock, job.reconcileMs, ctx.signal);
      done++;
      lastEndMs = Math.max(lastEndMs, Date.now());
    },
  });

  const base = await settledHeapInUse();
  recordHeap(job.identity, 'base', 0);
  const bytesBase = bytesReceived();
  const stop = new AbortController();
  const running = member.run(stop.signal);
  await loop.start();

  const handle = async (req: ReplicaRequest): Promise<unknown> => {
    switch (req.cmd) {
      case 'status': {
        const s = member.status();
        return {
          members: s.members.length,
          handover: s.handover !== undefined,
          holdsLease: s.holdsLease,
          stored: loop.store.size,
          filter: source.health().shard?.filter,
          done,
          firstStartMs: Number.isFinite(firstStartMs) ? firstStartMs : 0,
          lastEndMs,
          bytesReceived: bytesReceived() - bytesBase,
        } satisfies ReplicaStatus;
      }
      case 'arm':
        afterRevision = req.afterRevision;
        return {};
      case 'measure': {
        const absolute = await settledHeapInUse();
        recordHeap(job.identity, 'measure', loop.store.size);
        return {
          heapBytes: absolute - base,
          heapAbsoluteBytes: absolute,
          bytesReceived: bytesReceived() - bytesBase,
        } satisfies ReplicaMeasure;
      }
      case 'stop':
        stop.abort();
        await loop.stop();
        await running;
        setImmediate(() => process.exit(0));
        return {};
    }
  };
  process.on('message', (message: { id: number; req: ReplicaRequest }) => {
    handle(message.req).then(
      (value) => process.send!({ id: message.id, ok: true, value }),
      (error: unknown) => process.send!({ id: message.id, ok: false, error: String((error as Error)?.stack ?? error) }),
    );
  });
  process.send!({ id: 0, ok: true, value: 'started' });
}

process.once('message', (job: ReplicaJob) => {
  run(job).catch((error: unknown) => {
    process.send!({ id: 0, ok: false, error: String((error as Error)?.stack ?? error) });
    process.exit(1);
  });
});
process.on('disconnect', () => process.exit(0));
process.send!('ready');
