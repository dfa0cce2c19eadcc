/**
 * Lease renewals under a burst of writes on the same manager (issue 23 item 4): one `Manager` with a
 * controller over pods and leader election on a Lease, the embedded apiserver in a child process.
 * Once it leads, 1,000 ConfigMap creates are fired at once through `manager.client` (client-go's
 * 5 QPS / burst 10 write limiter: 990 of them wait ~200 s, so the queue never empties within the
 * window), and every Lease renewal in the next `windowMs` is timed at the transport.
 *
 * Renewal delay = the gap between two consecutive renewal PUTs minus the retry period: the elector
 * sleeps one retry period after a renewal is answered, so the delay is the previous renewal's
 * latency (rate-limit wait + round trip) plus the timer's lateness. The target: p99 ≤ retry period.
 *
 * Three wirings of the same burst: the manager as shipped (the Lease on its own limiter lane), the
 * Lease sharing the writes' limiter (`LeaseLock({ rateLimit: 'shared' })`, the wiring before the
 * lane), and no client-side limit at all (`rateLimit: false`, controller-runtime's default since
 * v0.21: the 1,000 writes all reach the apiserver at once and compete with the Lease there).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { KubeClient, httpTransport, type Transport } from '@reconcile-loop/kube-client';
import { LeaderElector, LeaseLock } from '@reconcile-loop/leader-election';
import { Manager } from '@reconcile-loop/manager';
import { ApiServerProcess } from '../lib/apiserver-process.js';
import type { BenchContext } from '../lib/context.js';
import { NAMESPACE } from '../lib/pods.js';
import { fmt, percentiles, printTable, summarize, type Summary } from '../lib/stats.js';

type Wiring = 'manager (Lease lane)' | 'Lease on the shared limiter' | 'no client limit';
const WIRINGS: readonly Wiring[] = ['manager (Lease lane)', 'Lease on the shared limiter', 'no client limit'];

/** Lease timings: whole seconds for the lease, renew deadline > 1.2 × retry period (client-go's checks). */
const LEASE = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 } as const;

interface WiringResult {
  wiring: Wiring;
  /** Renewals sent within the window (all runs). */
  renewals: number;
  /** Renewal delay (gap − retry period), ms, per run: p50 / p99 / max, summarized across runs. */
  delayP50Ms: Summary;
  delayP99Ms: Summary;
  delayMaxMs: Summary;
  /** A renewal's own time (send → answer), ms, p99 per run. */
  latencyP99Ms: Summary;
  /** Runs in which leadership was lost during the window. */
  lostLeadership: number;
  /** Writes answered within the window (per run, median). */
  writesDone: number;
}

/** Result of the lease-cadence benchmark. */
export interface LeaseCadenceResult {
  writes: number;
  windowMs: number;
  retryPeriodMs: number;
  wirings: WiringResult[];
}

interface RunStats {
  delays: number[];
  latencies: number[];
  renewals: number;
  lost: boolean;
  writesDone: number;
}

async function waitFor(condition: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`lease-cadence: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function oneRun(
  server: ApiServerProcess,
  wiring: Wiring,
  run: number,
  writes: number,
  windowMs: number,
): Promise<RunStats> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig);
  const base = httpTransport(kubeConfig);
  // Every Lease PUT, timed where it leaves and where it is answered.
  const puts: { sentAt: number; answeredAt: number | undefined }[] = [];
  const transport: Transport = async (request) => {
    if (request.method !== 'PUT' || !request.url.pathname.includes('/leases/')) return base(request);
    const put = { sentAt: performance.now(), answeredAt: undefined as number | undefined };
    puts.push(put);
    const response = await base(request);
    put.answeredAt = performance.now();
    return response;
  };
  const client = new KubeClient({
    kubeConfig,
    transport,
    ...(wiring === 'no client limit' && { rateLimit: false as const }),
    requestTimeoutMs: 0, // queued writes wait as long as the window lasts; none fails on a deadline
  });
  const leaseName = `cadence-${run}-${WIRINGS.indexOf(wiring)}`;
  const manager = new Manager({
    client,
    signals: false,
    ...(wiring !== 'Lease on the shared limiter' && { leaderElection: { namespace: NAMESPACE, name: leaseName, ...LEASE } }),
  });
  // The wiring before the Lease lane: the same elector, its Lease through the writes' limiter.
  const elector =
    manager.elector ??
    new LeaderElector({
      lock: new LeaseLock({ client, namespace: NAMESPACE, name: leaseName, identity: `bench-${run}`, rateLimit: 'shared' }),
      ...LEASE,
    });
  const electing = new AbortController();
  const standalone = manager.elector === undefined ? elector.run(electing.signal) : undefined;
  manager.controller<Pod, string>({
    controller: { name: 'pods' },
    source: manager.source({ resource: podResource, schema: podSchema, namespace: NAMESPACE }),
    keyMap: (pod) => pod.metadata.name,
    reconcile: () => {},
    ...(standalone !== undefined && { leadership: { gate: elector } }),
  });
  const running = manager.run();
  await waitFor(() => elector.isLeader(), 'leadership', 20_000);
  const configMaps = client
    .resource({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' })
    .inNamespace(NAMESPACE);
  const burst = new AbortController();
  let writesDone = 0;
  const startedAt = performance.now();
  const inFlight = Array.from({ length: writes }, (_, i) =>
    configMaps
      .create({ metadata: { name: `burst-${run}-${leaseName}-${i}` }, data: { i: String(i) } }, { signal: burst.signal })
      .then(
        () => void writesDone++,
        () => {},
      ),
  );
  let lost = false;
  const watchLoss = setInterval(() => (lost ||= !elector.isLeader()), 20);
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  clearInterval(watchLoss);
  const done = writesDone;
  burst.abort();
  await Promise.all(inFlight);
  const renewals = puts.filter((p) => p.sentAt >= startedAt && p.sentAt < startedAt + windowMs);
  // The gap from the last renewal before the burst counts too: the first renewal after it is the one queued behind it.
  const before = puts.filter((p) => p.sentAt < startedAt).at(-1);
  const sends = [...(before ? [before] : []), ...renewals].map((p) => p.sentAt);
  const delays = sends.slice(1).map((at, i) => at - sends[i]! - LEASE.retryPeriodMs);
  // A window without a renewal at all is one delay as long as the window (the renewal never went).
  if (renewals.length === 0) delays.push(windowMs);
  const latencies = renewals.map((p) => (p.answeredAt ?? startedAt + windowMs) - p.sentAt);
  manager.stop();
  electing.abort();
  await running;
  await standalone;
  return { delays, latencies, renewals: renewals.length, lost, writesDone: done };
}

export async function runLeaseCadence(ctx: BenchContext): Promise<LeaseCadenceResult> {
  const writes = ctx.smoke ? 50 : 1_000;
  const windowMs = ctx.smoke ? 1_500 : 10_000;
  const server = await ApiServerProcess.start(100_000);
  const wirings: WiringResult[] = [];
  try {
    await server.seed(8); // the namespace, and a few pods for the controller to cache
    for (const wiring of WIRINGS) {
      const runs: RunStats[] = [];
      for (let run = 0; run < ctx.runs; run++) runs.push(await oneRun(server, wiring, run, writes, windowMs));
      const per = runs.map((r) => percentiles(r.delays.length > 0 ? r.delays : [0]));
      const sortedDone = runs.map((r) => r.writesDone).sort((a, b) => a - b);
      wirings.push({
        wiring,
        renewals: runs.reduce((n, r) => n + r.renewals, 0),
        delayP50Ms: summarize(per.map((p) => p.p50)),
        delayP99Ms: summarize(per.map((p) => p.p99)),
        delayMaxMs: summarize(per.map((p) => p.max)),
        latencyP99Ms: summarize(runs.map((r) => percentiles(r.latencies.length > 0 ? r.latencies : [0]).p99)),
        lostLeadership: runs.filter((r) => r.lost).length,
        writesDone: sortedDone[Math.floor(sortedDone.length / 2)]!,
      });
    }
  } finally {
    await server.close();
  }
  printTable(
    `Lease renewals under a burst of ${writes} writes on one manager (retry period ${LEASE.retryPeriodMs} ms, ${windowMs / 1000} s window; ms)`,
    ['wiring', 'renewals', 'delay p50', 'delay p99', 'delay max', 'renewal p99', 'lost leadership', 'writes done in window'],
    wirings.map((w) => [
      w.wiring,
      String(w.renewals),
      fmt(w.delayP50Ms.median),
      fmt(w.delayP99Ms.median),
      fmt(w.delayMaxMs.median),
      fmt(w.latencyP99Ms.median),
      `${w.lostLeadership} of ${ctx.runs}`,
      String(w.writesDone),
    ]),
  );
  return { writes, windowMs, retryPeriodMs: LEASE.retryPeriodMs, wirings };
}
