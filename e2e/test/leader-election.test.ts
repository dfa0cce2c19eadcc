import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';
import { spawnTsxScript } from '../src/index.js';

// @reconcile-loop/leader-election against the real kube-apiserver: replicas are separate processes
// (e2e/scripts/leader-replica.ts) competing for one Lease with lease 3 s, renew deadline 2 s, retry
// 0.5 s. Each prints its leadership events and its "reconciles" (ticks, done only when isLeader()
// says so at that instant) with wall-clock times; the test kills -9, stops gracefully and freezes
// (SIGSTOP past the lease duration, then SIGCONT) the leader, stalls its connection, kills etcd under
// the apiserver past the lease duration, measures failover, and checks from the records that no two
// replicas ever acted as leader at once. Each e2e file provisions its own control plane and the e2e
// project runs files one at a time (fileParallelism: false), so killing etcd here touches no other file.

const availability = e2eAvailability();
const describeE2e = availability.run ? describe : describe.skip;
const environment = useE2eEnvironment(availability);

const LEASE_MS = 3_000;
const RETRY_MS = 500;

interface Event {
  readonly e: string;
  readonly t: number;
  readonly [key: string]: unknown;
}

class Replica {
  readonly events: Event[] = [];
  readonly child: ChildProcess;
  killedAt: number | undefined;
  frozen: { from: number; to: number } | undefined;

  constructor(
    readonly id: string,
    kubeconfigPath: string,
    namespace: string,
    lease = 'e2e-lock',
  ) {
    this.child = spawnTsxScript(
      'leader-replica',
      [kubeconfigPath, namespace, lease, id],
      (event) => this.events.push(event as Event),
      (line) => process.stderr.write(`[${this.id}] ${line}\n`),
    );
  }

  has(e: string, after = 0): Event | undefined {
    return this.events.find((x) => x.e === e && x.t >= after);
  }

  get exited(): Promise<void> {
    return this.child.exitCode !== null || this.child.signalCode !== null
      ? Promise.resolve()
      : new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  /** Leadership terms by the ticks actually done: [started, last tick of that term]. */
  actingIntervals(): [number, number][] {
    const out: [number, number][] = [];
    let current: [number, number] | undefined;
    for (const x of this.events) {
      if (x.e === 'started') {
        current = [x.t, x.t];
        out.push(current);
      } else if (x.e === 'tick') {
        if (current === undefined) throw new Error(`${this.id} ticked outside a term at ${x.t}`);
        current[1] = x.t;
      } else if (x.e === 'stopped') {
        current = undefined;
      }
    }
    return out;
  }
}

async function until<V>(what: string, probe: () => V | undefined, timeoutMs: number): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const leaderOf = (replicas: Replica[]): Replica | undefined =>
  replicas.find(
    (r) =>
      r.killedAt === undefined &&
      r.child.exitCode === null &&
      r.actingIntervals().length > 0 &&
      r.events.filter((x) => x.e === 'started').length > r.events.filter((x) => x.e === 'stopped').length,
  );

/** The elector's error lines for failed Lease reads since `after`. */
const outageErrors = (r: Replica, after: number): Event[] =>
  r.events.filter(
    (x) => x.t >= after && x.e === 'log' && x['level'] === 'error' && x['message'] === 'error retrieving the lease',
  );

/** Every tick lies in its replica's term (actingIntervals throws otherwise) and no two terms overlap. */
function noOverlap(replicas: Replica[]): void {
  const intervals = replicas.flatMap((r) => r.actingIntervals().map(([s, e]) => ({ id: r.id, s, e })));
  intervals.sort((a, b) => a.s - b.s);
  expect(intervals.length).toBeGreaterThanOrEqual(2);
  let latest = intervals[0]!;
  for (const cur of intervals.slice(1)) {
    // Same machine, one wall clock: the documented clock bound here is 0.
    expect(cur.s, `${cur.id} started at ${cur.s} while ${latest.id} acted until ${latest.e}`).toBeGreaterThan(latest.e);
    if (cur.e > latest.e) latest = cur;
  }
}

describeE2e('leader-election against the real kube-apiserver (separate processes)', () => {
  let ns: string;
  let kubeconfigPath: string;
  const replicas: Replica[] = [];
  const stallReplicas: Replica[] = [];
  const measured: Record<string, number> = {};
  let counter = 0;
  const spawnReplica = (): Replica => {
    const r = new Replica(`replica-${counter++}-${randomBytes(2).toString('hex')}`, kubeconfigPath, ns);
    replicas.push(r);
    return r;
  };
  /** The first start by anyone but `except` at or after `after`. */
  const nextStart = (after: number, except: Replica): { r: Replica; t: number } | undefined => {
    for (const r of replicas) {
      if (r === except) continue;
      const started = r.has('started', after);
      if (started) return { r, t: started.t };
    }
    return undefined;
  };

  beforeAll(async () => {
    const env = environment();
    kubeconfigPath = env.endpoint.kubeconfigPath;
    const kc = new KubeConfig();
    kc.loadFromString(env.endpoint.kubeconfig);
    const client = new KubeClient({ kubeConfig: kc });
    ns = `le-${randomBytes(3).toString('hex')}`;
    await client
      .resource({ group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace' })
      .create({ metadata: { name: ns } });
    for (let i = 0; i < 3; i++) spawnReplica();
    await until('three replicas ready', () => (replicas.every((r) => r.has('ready')) ? true : undefined), 90_000);
  }, 120_000);

  afterAll(async () => {
    for (const r of [...replicas, ...stallReplicas]) {
      if (r.frozen && r.child.exitCode === null) r.child.kill('SIGCONT');
      r.child.kill('SIGKILL');
    }
    await Promise.all(
      [...replicas, ...stallReplicas].map((r) => Promise.race([r.exited, new Promise((resolve) => setTimeout(resolve, 5_000))])),
    );
    process.stderr.write(`[leader-election e2e] measured failover (ms): ${JSON.stringify(measured)}\n`);
    if (process.env['LE_E2E_DUMP']) {
      for (const r of [...replicas, ...stallReplicas])
        process.stderr.write(
          `[${r.id}] exit=${r.child.exitCode}/${r.child.signalCode} ${JSON.stringify(r.events.filter((x) => x.e !== 'tick'))}\n`,
        );
    }
  }, 30_000);

  it('[leader_election: e2e] one leader is elected; kill -9 of the leader: another takes over within leaseDuration + retryPeriod·2.2', async () => {
    const first = await until('a first leader', () => leaderOf(replicas), 30_000);
    await new Promise((r) => setTimeout(r, 1_500)); // a few renewals
    expect(replicas.filter((r) => leaderOf([r])).length).toBe(1);
    first.child.kill('SIGKILL');
    first.killedAt = Date.now();
    const next = await until('a takeover after kill -9', () => nextStart(first.killedAt!, first), 20_000);
    measured['kill -9'] = next.t - first.killedAt;
    // A standby observed the last renewal at most retryPeriod·2.2 before the kill; it waits leaseDuration from then.
    expect(next.t - first.killedAt).toBeGreaterThanOrEqual(LEASE_MS - RETRY_MS * 2.2 - 200);
    expect(next.t - first.killedAt).toBeLessThanOrEqual(LEASE_MS + RETRY_MS * 2.2 + 1_500); // + loaded-machine slack
    spawnReplica();
  });

  it('[leader_election: e2e] graceful stop (SIGTERM, ReleaseOnCancel): the Lease is released and a standby takes over in about a retry period', async () => {
    const leader = await until('a leader', () => leaderOf(replicas), 30_000);
    await until(
      'a ready standby',
      () =>
        replicas.filter((r) => r !== leader && r.has('ready') && r.child.exitCode === null && r.killedAt === undefined).length >=
        2
          ? true
          : undefined,
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    const stopAt = Date.now();
    leader.child.kill('SIGTERM');
    const released = await until('the release', () => leader.has('released', stopAt), 10_000);
    const next = await until('a takeover after release', () => nextStart(stopAt, leader), 10_000);
    await leader.exited;
    leader.killedAt = Date.now();
    measured['graceful'] = next.t - stopAt;
    expect(leader.has('stopped', stopAt)!.t).toBeLessThanOrEqual(released.t);
    expect(next.t).toBeGreaterThanOrEqual(released.t);
    // Without the release it could not be under leaseDuration − retryPeriod·2.2.
    expect(next.t - stopAt).toBeLessThan(LEASE_MS);
    spawnReplica();
  });

  it('[leader_election: e2e] a leader frozen (SIGSTOP) past the lease duration is replaced, and after SIGCONT it does not reconcile before it observed the loss', async () => {
    const leader = await until('a leader', () => leaderOf(replicas), 30_000);
    await until(
      'two ready standbys',
      () =>
        replicas.filter((r) => r !== leader && r.has('ready') && r.child.exitCode === null && r.killedAt === undefined).length >=
        2
          ? true
          : undefined,
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    const frozenAt = Date.now();
    leader.child.kill('SIGSTOP');
    const next = await until('a takeover while frozen', () => nextStart(frozenAt, leader), 20_000);
    measured['SIGSTOP'] = next.t - frozenAt;
    await new Promise((r) => setTimeout(r, 1_000));
    const resumedAt = Date.now();
    leader.child.kill('SIGCONT');
    leader.frozen = { from: frozenAt, to: resumedAt };
    await until('the ex-leader stops leading', () => leader.has('stopped', resumedAt), 10_000);
    await new Promise((r) => setTimeout(r, 1_000));
    // Its first event after resuming is the step-down: no reconcile in between.
    const after = leader.events.filter((x) => x.t >= resumedAt && ['started', 'stopped', 'tick'].includes(x.e));
    expect(after[0]?.e).toBe('stopped');
    expect(after.some((x) => x.e === 'tick' && x.t < leader.has('stopped', resumedAt)!.t)).toBe(false);
  });

  it('[leader_election: e2e] a leader whose connection stalls (TCP proxy) steps down at its renew deadline, before a standby takes over', async (context) => {
    const controlPlane = requireControlPlane(context, environment());
    const proxied = await controlPlane.proxy();
    const stalled = new Replica(`stalled-${randomBytes(2).toString('hex')}`, proxied.kubeconfigPath, ns, 'e2e-stall');
    stallReplicas.push(stalled);
    await until('the proxied replica leads', () => stalled.has('started'), 60_000);
    const standby = new Replica(`direct-${randomBytes(2).toString('hex')}`, kubeconfigPath, ns, 'e2e-stall');
    stallReplicas.push(standby);
    await until('the direct standby is ready', () => standby.has('ready'), 60_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const stallAt = Date.now();
    proxied.proxy.stall();
    const stepDown = await until('the stalled leader steps down', () => stalled.has('stopped', stallAt), 10_000);
    const takeover = await until('the standby takes over', () => standby.has('started', stallAt), 15_000);
    proxied.proxy.resume();
    measured['stall: step-down'] = stepDown.t - stallAt;
    measured['stall: takeover'] = takeover.t - stallAt;
    // Renew deadline 2 s from the last renewal sent (≤ 0.5 s + latency before the stall).
    expect(stepDown.t - stallAt).toBeLessThanOrEqual(2_000 + 500);
    expect(takeover.t).toBeGreaterThan(stepDown.t);
    expect(takeover.t - stepDown.t).toBeGreaterThanOrEqual(LEASE_MS - 2_000 - 200);
    await new Promise((r) => setTimeout(r, 1_500));
    noOverlap(stallReplicas);
  });

  it('[leader_election: e2e] etcd killed past the lease duration, then started: the leader steps down, no one leads while etcd is down, a leader is back after, and each replica logs the outage once', async (context) => {
    const controlPlane = requireControlPlane(context, environment());
    const live = (): Replica[] => replicas.filter((r) => r.killedAt === undefined && r.child.exitCode === null);
    const leader = await until('a leader', () => leaderOf(replicas), 30_000);
    await until(
      'two ready standbys',
      () => (live().filter((r) => r !== leader && r.has('ready')).length >= 2 ? true : undefined),
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    const downAt = Date.now();
    await controlPlane.etcd.kill();
    const stepDown = await until('the leader steps down with etcd down', () => leader.has('stopped', downAt), 15_000);
    // Down past the lease duration, so the old term has expired for every candidate by the time etcd is back.
    await new Promise((r) => setTimeout(r, Math.max(0, downAt + LEASE_MS + 2_000 - Date.now())));
    const startingAt = Date.now();
    await controlPlane.etcd.startProcess(); // bounded: waits for /health at most 60 s
    const upAt = Date.now();
    const firstStart = (after: number) =>
      live()
        .map((r) => ({ r, t: r.has('started', after)?.t }))
        .filter((x): x is { r: Replica; t: number } => x.t !== undefined)
        .sort((a, b) => a.t - b.t)[0];
    const next = await until('a leader after etcd is back', () => firstStart(downAt), 60_000);
    measured['etcd down: step-down'] = stepDown.t - downAt;
    measured['etcd back: leader again'] = next.t - upAt;
    measured['etcd down→leader again'] = next.t - downAt;
    // Renew deadline 2 s from the last renewal sent (≤ retry 0.5 s·2.2 before the kill), + loaded-machine slack.
    expect(stepDown.t - downAt).toBeLessThanOrEqual(2_000 + 1_100 + 1_500);
    // A term starts only on a committed write, and nothing commits while etcd is down.
    expect(next.t).toBeGreaterThan(startingAt);
    // The apiserver reconnects to etcd, then any candidate takes the expired Lease at its next try.
    expect(next.t - upAt).toBeLessThanOrEqual(30_000);
    // Quiet outage: each replica's failed reads are one error line and one recovery line, not one per retry.
    await until(
      'every replica that logged the outage logged its recovery',
      () => (live().every((r) => !outageErrors(r, downAt).length || r.has('recovered', startingAt)) ? true : undefined),
      20_000,
    );
    for (const r of live()) expect(outageErrors(r, downAt).length, r.id).toBeLessThanOrEqual(1);
    expect(live().some((r) => outageErrors(r, downAt).length === 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_500));
  });

  it('[leader_election: e2e] from all records: no two replicas ever reconciled as leader at once', () => {
    noOverlap(replicas);
    // The first leader, and one after each of kill -9, SIGTERM, SIGSTOP and the etcd restart.
    expect(replicas.flatMap((r) => r.actingIntervals()).length).toBeGreaterThanOrEqual(5);
    for (const r of replicas)
      for (const x of r.events)
        if (x.e === 'log' && x['level'] === 'error') process.stderr.write(`[${r.id}] ${JSON.stringify(x)}\n`);
  });
});
