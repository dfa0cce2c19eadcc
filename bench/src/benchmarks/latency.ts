import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { ReconcileLoop, type Source, type SourceEvent } from '@reconcile-loop/loop';
import { KubeApiClient, Reflector } from '@reconcile-loop/reflector';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { NAMESPACE, PARENT_LABEL, PODS_PER_PARENT, SENT_AT_ANNOTATION } from '../lib/pods.js';
import { fmt, fmtSummary, percentiles, printTable, summarize, wallNow, type Summary } from '../lib/stats.js';

/** Result of benchmark 4. */
export interface LatencyResult {
  pods: number;
  ratePerSec: number;
  durationMs: number;
  /** Per run, summarized across runs: event sent → reconcile of its parent started, ms. */
  p50Ms: Summary;
  p99Ms: Summary;
  maxMs: Summary;
  /** Events measured in the last run (every injected frame). */
  events: number;
  /** Reconciles in the last run (fewer than events: the queue coalesces a parent's events). */
  reconciles: number;
  /** Worst lag of the sender behind its schedule, ms (a late sender would hide latency). */
  senderMaxBehindMs: number;
  /** Event-loop delay of the measuring process during the last run, ms. */
  eventLoopDelayP99Ms: number;
}

interface Run {
  latencies: number[];
  reconciles: number;
  senderMaxBehindMs: number;
  eventLoopDelayP99Ms: number;
}

/**
 * One run: the full loop (reflector → driver → store → queue → worker → reconcile) on a synced
 * store of `pods`, while the apiserver sends `rate` MODIFIED frames/s. Each frame's send time rides
 * in an annotation. A pass-through source records the send times of every upsert per object key;
 * reconcile takes, for each member in its snapshot, every recorded event that snapshot already
 * reflects, so events coalesced into one reconcile are all counted (with their own, larger, latency).
 */
async function oneRun(server: ApiServerProcess, pods: number, rate: number, durationMs: number, offsetMs: number): Promise<Run> {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig);
  const reflector = new Reflector<Pod>({
    client: new KubeApiClient(kc, podResource),
    schema: podSchema,
    namespace: NAMESPACE,
    name: 'latency',
  });
  const sent = new Map<string, number[]>();
  const sentAt = (pod: Pod): number | undefined => {
    const value = pod.metadata.annotations[SENT_AT_ANNOTATION];
    return value === undefined ? undefined : Number(value) - offsetMs;
  };
  async function* track(events: AsyncIterable<SourceEvent<Pod>>): AsyncGenerator<SourceEvent<Pod>, void, undefined> {
    for await (const event of events) {
      if (event.type === 'upsert') {
        const at = sentAt(event.object);
        if (at !== undefined) {
          const list = sent.get(event.key);
          if (list === undefined) sent.set(event.key, [at]);
          else list.push(at);
        }
      }
      yield event;
    }
  }
  const source: Source<Pod> = { name: reflector.name, open: (signal) => track(reflector.open(signal)) };
  const latencies: number[] = [];
  let reconciles = 0;
  const loop = new ReconcileLoop<Pod, string>({
    source,
    keyMap: (pod) => pod.metadata.labels[PARENT_LABEL],
    reconcile: (_parent, { members }) => {
      const now = wallNow();
      reconciles++;
      for (const [key, pod] of members) {
        const list = sent.get(key);
        if (list === undefined || list.length === 0) continue;
        const seen = sentAt(pod) ?? Number.NEGATIVE_INFINITY;
        let taken = 0;
        while (taken < list.length && list[taken]! <= seen) latencies.push(now - list[taken++]!);
        if (taken > 0) list.splice(0, taken);
      }
    },
  });
  await loop.start();
  try {
    const parents = Math.ceil(pods / PODS_PER_PARENT);
    while (reconciles < parents) await delay(5);
    await server.waitForWatches(1);
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    const injected = await server.inject(rate, durationMs);
    const giveUp = performance.now() + 30_000;
    while (latencies.length < injected.frames) {
      if (performance.now() > giveUp)
        throw new Error(`latency: ${latencies.length} of ${injected.frames} events reached reconcile within 30 s`);
      await delay(5);
    }
    histogram.disable();
    return {
      latencies,
      reconciles,
      senderMaxBehindMs: injected.maxBehindMs,
      eventLoopDelayP99Ms: histogram.percentile(99) / 1e6,
    };
  } finally {
    await loop.stop();
    await server.dropWatches();
  }
}

/** Benchmark 4: event → reconcile latency under a steady event rate. */
export async function runLatency(ctx: BenchContext): Promise<LatencyResult> {
  const pods = ctx.smoke ? 200 : 5_000;
  const rate = 2_000;
  const durationMs = ctx.smoke ? 500 : 10_000;
  const runs = ctx.smoke ? 1 : Math.min(ctx.runs, 3);
  const server = await ApiServerProcess.start(pods + 100);
  try {
    await server.seed(pods);
    const offsetMs = await server.clockOffset();
    await oneRun(server, pods, rate, Math.min(durationMs, 1_000), offsetMs); // warm-up
    const results: Run[] = [];
    for (let r = 0; r < runs; r++) results.push(await oneRun(server, pods, rate, durationMs, offsetMs));
    const per = results.map((r) => percentiles(r.latencies));
    const last = results[results.length - 1]!;
    const result: LatencyResult = {
      pods,
      ratePerSec: rate,
      durationMs,
      p50Ms: summarize(per.map((p) => p.p50)),
      p99Ms: summarize(per.map((p) => p.p99)),
      maxMs: summarize(per.map((p) => p.max)),
      events: last.latencies.length,
      reconciles: last.reconciles,
      senderMaxBehindMs: Math.max(...results.map((r) => r.senderMaxBehindMs)),
      eventLoopDelayP99Ms: last.eventLoopDelayP99Ms,
    };
    printTable(
      `4. Event → reconcile latency: ${rate.toLocaleString('en-US')} MODIFIED frames/s for ${durationMs / 1000} s over ${pods.toLocaleString('en-US')} cached pods, full loop (ms, min / median / max of ${runs} runs)`,
      ['measure', 'value'],
      [
        ['p50', fmtSummary(result.p50Ms, 'ms')],
        ['p99', fmtSummary(result.p99Ms, 'ms')],
        ['max', fmtSummary(result.maxMs, 'ms')],
        [
          'events / reconciles (last run)',
          `${result.events.toLocaleString('en-US')} / ${result.reconciles.toLocaleString('en-US')}`,
        ],
        ['event-loop delay p99 (last run)', fmt(result.eventLoopDelayP99Ms, 'ms')],
        ['sender max lag behind schedule', fmt(result.senderMaxBehindMs, 'ms')],
        ['clock offset to the apiserver process', fmt(offsetMs, 'ms')],
      ],
    );
    return result;
  } finally {
    await server.close();
  }
}
