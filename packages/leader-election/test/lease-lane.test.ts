import { KubeClient, type KubeClientOptions, type Transport } from '@reconcile-loop/kube-client';

type RateLimitWait = Parameters<NonNullable<KubeClientOptions['onRateLimitWait']>>[1];
import { ManualClock } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { LeaderElector, LeaseLock } from '../src/index.js';
import { LEASE_LANE } from '../src/lease-lock.js';
import { FakeLeaseServer } from '@reconcile-loop/test-support';

/** One client whose reconcile writes (pods) are answered at once and whose Lease traffic goes to a fake Lease server. */
function setup(rateLimit?: 'shared') {
  const clock = new ManualClock(1_000_000);
  const server = new FakeLeaseServer(clock);
  const leases = server.transport(clock);
  const sent: string[] = [];
  const transport: Transport = (request) => {
    const lease = request.url.pathname.includes('/leases');
    sent.push(`${request.method} ${lease ? 'lease' : 'pod'}`);
    if (lease) return leases(request);
    const body = JSON.stringify({ metadata: { name: 'p', resourceVersion: '1' } });
    return Promise.resolve({
      status: 201,
      header: () => undefined,
      body: (async function* () {
        yield body;
      })(),
      close: () => {},
    });
  };
  const waits: (RateLimitWait & { ms: number })[] = [];
  // client-go's default limiter (5 writes/s, burst 10); no request deadline, so all 1,000 writes stay queued.
  const client = new KubeClient({
    server: 'https://fake.invalid',
    clock,
    transport,
    requestTimeoutMs: 0,
    onRateLimitWait: (ms, wait) => waits.push({ ms, ...wait }),
  });
  const lock = new LeaseLock({ client, namespace: 'default', name: 'lock', identity: 'a', ...(rateLimit && { rateLimit }) });
  const elector = new LeaderElector({ lock, clock, wallClock: () => 1_800_000_000_000 + clock.now(), random: () => 0.5 });
  const pods = client.resource({ group: '', version: 'v1', plural: 'pods', kind: 'Pod' }).inNamespace('default');
  return { clock, server, client, elector, pods, sent, waits };
}

/** Lets pending promise chains run; no clock moves. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Steps the clock 100 ms at a time for `ms`, calling `each` after every step. */
async function run(clock: ManualClock, ms: number, each: () => void = () => {}): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    await clock.advanceAsync(100);
    each();
  }
}

describe('[kube_client: Lease lane] Lease traffic has a rate limiter of its own: renewals never wait behind reconcile writes', () => {
  it('1,000 writes queued on the same client: the next renewal is sent before any of them, and every renewal keeps its 2 s cadence for 30 s', async () => {
    const { clock, server, elector, pods, sent, waits } = setup();
    const controller = new AbortController();
    const electing = elector.run(controller.signal);
    await run(clock, 100);
    expect(elector.isLeader()).toBe(true);
    const writes = Array.from({ length: 1_000 }, (_, i) => pods.create({ metadata: { name: `p${i}` } }).catch((e: unknown) => e));
    await settle();
    const queuedAt = sent.length;
    expect(sent.filter((s) => s === 'POST pod')).toHaveLength(10); // the burst went; 990 wait at 5/s
    const renewalsBefore = server.writes.length;
    await run(clock, 2_000);
    // The renewal at the next retry period was sent while 980 writes still waited.
    const firstLeaseAfter = sent.indexOf('PUT lease', queuedAt);
    expect(firstLeaseAfter).toBeGreaterThan(-1);
    expect(sent.slice(queuedAt, firstLeaseAfter).filter((s) => s === 'POST pod').length).toBeLessThanOrEqual(10);
    let lost = false;
    await run(clock, 28_000, () => (lost ||= !elector.isLeader()));
    expect(lost).toBe(false);
    const renewals = server.writes.slice(renewalsBefore).filter((w) => w.holder === 'a');
    expect(renewals.length).toBeGreaterThanOrEqual(14); // one per 2 s retry period
    const gaps = renewals.slice(1).map((w, i) => w.at - renewals[i]!.at);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(2_000);
    // The queue wait is observable per lane: the Lease's never waited, the writes' did.
    const leaseWaits = waits.filter((w) => w.lane === LEASE_LANE);
    expect(leaseWaits.length).toBeGreaterThan(0);
    expect(Math.max(...leaseWaits.map((w) => w.ms))).toBe(0);
    expect(Math.max(...waits.filter((w) => w.lane === 'default').map((w) => w.ms))).toBeGreaterThan(20_000);
    controller.abort();
    await run(clock, 1_000);
    await electing;
    await run(clock, 200_000); // let the queued writes drain so nothing is left pending
    await Promise.all(writes);
  });

  it("rateLimit: 'shared' puts the Lease behind the writes: the renewal cannot get a token before the renew deadline and leadership is lost (why the lane is the default)", async () => {
    const { clock, elector, pods } = setup('shared');
    const controller = new AbortController();
    const electing = elector.run(controller.signal);
    await run(clock, 100);
    expect(elector.isLeader()).toBe(true);
    const writes = Array.from({ length: 1_000 }, (_, i) => pods.create({ metadata: { name: `p${i}` } }).catch((e: unknown) => e));
    let lost = false;
    await run(clock, 30_000, () => (lost ||= !elector.isLeader()));
    expect(lost).toBe(true);
    controller.abort();
    await run(clock, 1_000);
    await electing;
    await run(clock, 200_000);
    await Promise.all(writes);
  });

  it('withLane shares the server, transport and clock and has its own limiter; the lane name is validated', async () => {
    const { client } = setup();
    const lane = client.withLane('x', false);
    expect(lane.lane).toBe('x');
    expect(client.lane).toBe('default');
    expect(lane.clock).toBe(client.clock);
    expect(lane.currentServer()).toBe(client.currentServer());
    expect(() => new KubeClient({ server: 'https://x', lane: '' })).toThrow(/lane/);
  });
});
