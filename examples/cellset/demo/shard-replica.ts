/**
 * One replica of `./dev demo --shards N` (shards.ts starts it as a process of its own, so kill -9
 * and SIGSTOP are real): the CellSet controller of src/, unchanged, with a `ShardMember` on its own
 * Lease as its shard gate. Everything the story narrates leaves this process as one JSON line on
 * stdout with `t: Date.now()` (one clock for every process of the machine):
 *
 *   {"e":"loaded"}                                modules loaded; it joins on a `join` line on stdin
 *   {"e":"synced"}                                the member runs and the loop's caches are synced
 *   {"e":"ranges","members","ranges","share"}     its view of the ring changed (the member's observer)
 *   {"e":"handover","gained","waitedMs","waitedFor","expired"}   gained ranges are admitted from now on
 *   {"e":"ack","members"}                         it published (acknowledged) this ring in its Lease
 *   {"e":"member","holds","pending","members","acknowledged"}   its member's state changed: its own Lease
 *                                                 valid, a handover pending, its view, the ring it acknowledged
 *   {"e":"ring-read","sent"}                      a LIST of the ring's Leases was answered (`sent`: when it was sent)
 *   {"e":"lease-write","sent"}                    a write of its own Lease (a renewal) succeeded
 *   {"e":"enter","h"} / {"e":"release","h"}       the gate admitted a reconcile of the CellSet whose uid
 *                                                 hashes to `h` / that reconcile settled (the interval
 *                                                 the member counts it in flight, around the call)
 *   {"e":"cache","cellSets","pods"}               what its caches hold, when that changes
 *   {"e":"log","level","message"}                 warnings and errors of the controller, the loop and the member
 *   {"e":"metrics","lines"}                       its shard series from /metrics, at a graceful stop
 *   {"e":"exit"}                                  after a graceful stop (SIGTERM, or stdin closed): its Lease released
 *
 * Environment: shard-config.ts's ENV (the kubeconfig's YAML, its identity, the namespace).
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { ShardGate } from '@reconcile-loop/loop';
import { shardMetrics } from '@reconcile-loop/metrics';
import { ShardMember, type ShardObserver } from '@reconcile-loop/sharding';
import { observedGate } from './observed-gate.js';
import { Registry } from 'prom-client';
import { createCellSetController, type CellSetController } from '../src/controller.js';
import { DEFAULT_WRITE_BURST, DEFAULT_WRITE_QPS, stopController } from './run.js';
import { ENV, REPLICA_PACE, RING, SHARD_TIMINGS } from './shard-config.js';
import { tappedClient } from './tap.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`shard-replica: ${name} is not set (shards.ts starts this process)`);
  return value;
};
// Synchronous on a pipe: a line written before a SIGSTOP or a kill -9 reaches the story.
const emit = (e: string, fields: Record<string, unknown> = {}): void =>
  void process.stdout.write(`${JSON.stringify({ e, t: Date.now(), ...fields })}\n`);

const identity = env(ENV.identity);
const namespace = env(ENV.namespace);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(env(ENV.kubeconfig));

const LEASES = /\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases(?:\/([^/]+))?$/;
const client = tappedClient(
  kubeConfig,
  {
    afterResponse: (method, url, status, sent) => {
      const lease = LEASES.exec(url.pathname);
      if (lease === null || status >= 300) return;
      if (method === 'GET' && lease[1] === undefined && url.searchParams.has('labelSelector')) emit('ring-read', { sent });
      if ((method === 'PUT' || method === 'POST') && lease[1] === `${RING}-${identity}`) emit('lease-write', { sent });
    },
  },
  { rateLimit: { qps: DEFAULT_WRITE_QPS, burst: DEFAULT_WRITE_BURST } },
);
const log =
  (level: string) =>
  (fields: Record<string, unknown>, message: string): void => {
    const err = fields['err'];
    emit('log', {
      level,
      message: `${message}${err === undefined ? '' : `: ${err instanceof Error ? err.message : String(err)}`}`,
    });
  };
const logger = { debug: () => {}, info: () => {}, warn: log('warn'), error: log('error') };

const registry = new Registry();
let loop: CellSetController['loop'] | undefined;
// The member's series (handovers, their waits, expiries), and the loop's shard health read at scrape time.
const metrics = shardMetrics({ ring: RING, registry, loops: [{ name: 'cellset', health: () => loop?.health() ?? {} }] });
const narrate: ShardObserver = {
  onRanges: (x) => {
    metrics.onRanges(x);
    emit('ranges', { members: x.members, ranges: x.ranges, share: x.share });
  },
  onHandover: (x) => {
    metrics.onHandover(x);
    emit('handover', { gained: x.gained, waitedMs: x.waitedMs, waitedFor: x.waitedFor, expired: x.expired });
  },
  onAcknowledged: (x) => {
    metrics.onAcknowledged(x);
    emit('ack', { members: x.members });
  },
};
const member = new ShardMember({ client, namespace, ring: RING, identity, ...SHARD_TIMINGS, logger, observer: narrate });

// Compile-time: the member is the loop's `ShardGate` as it is (the match is structural: neither
// package imports the other), so a drift of either side breaks the typecheck here.
const gate: ShardGate = member satisfies ShardGate;

/**
 * The member as the gate, each admission told as an interval that encloses the member's own: its
 * start read before `enter`, its end after the release (overlaps.ts checks these across replicas).
 */
const recordingGate = observedGate(gate, {
  admitted: (h, t) => emit('enter', { h, t }),
  released: (h) => emit('release', { h }),
});

const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
process.on('SIGINT', () => stop.abort());
// The story's process is gone (its pipe closed): stop, so no replica outlives the demo.
process.stdin.on('end', () => stop.abort());
process.stdin.setEncoding('utf8');
emit('loaded');
await new Promise<void>((resolve) => {
  process.stdin.on('data', (chunk: string) => {
    if (chunk.includes('join')) resolve();
  });
  stop.signal.addEventListener('abort', () => resolve(), { once: true });
});

const controller = createCellSetController({
  client,
  namespace,
  registry,
  eventsClient: client.withLane('events'),
  shardGate: recordingGate,
  ...REPLICA_PACE,
  logger,
});
loop = controller.loop;
const running = stop.signal.aborted ? Promise.resolve() : member.run(stop.signal);
// The member's state and the caches' contents, told when they change (polled: neither has a hook).
let told = { member: '', cache: '' };
const watch = setInterval(() => {
  const s = member.status();
  const state = { holds: s.holdsLease, pending: s.handover !== undefined, members: s.members, acknowledged: s.acknowledged };
  const cache = { cellSets: controller.loop.store.size, pods: controller.loop.stores.pods.size };
  const now = { member: JSON.stringify(state), cache: JSON.stringify(cache) };
  if (now.member !== told.member) emit('member', state);
  if (now.cache !== told.cache) emit('cache', cache);
  told = now;
}, 100);
try {
  if (!stop.signal.aborted) {
    await controller.loop.start();
    emit('synced');
    await new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }));
  }
} finally {
  clearInterval(watch);
  await stopController(controller, { graceMs: 5_000 });
  await running;
  const text = await registry.metrics();
  emit('metrics', {
    lines: text.split('\n').filter((l) => /^reconcile_loop_shard_(handovers_total|members_expired_total|keys_owned)\{/.test(l)),
  });
  emit('exit');
}
process.exit(0);
