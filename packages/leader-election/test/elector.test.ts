import { KubeClient } from '@reconcile-loop/kube-client';
import { ManualClock, type Clock } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { LeaderElector, LeaseLock, type LeadershipLostError } from '../src/index.js';
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS, JITTER_FACTOR } from '../src/options.js';
import { resolveTimings } from '../src/options.js';
import { formatMicroTime } from '../src/record.js';
import { FakeLeaseServer } from '@reconcile-loop/test-support';
import { replica, start, type Replica } from './fakes.js';

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function setup() {
  const clock = new ManualClock(1_000_000);
  const server = new FakeLeaseServer(clock);
  const advance = (ms: number) => clock.advanceAsync(ms);
  return { clock, server, advance };
}

/** Steps in 100 ms until `predicate` holds; returns the elapsed time. Bounded: fails after `limitMs`. */
async function until(clock: ManualClock, predicate: () => boolean, limitMs: number): Promise<number> {
  const begin = clock.now();
  while (!predicate()) {
    if (clock.now() - begin > limitMs) throw new Error(`condition not met within ${limitMs} ms of fake time`);
    await clock.advanceAsync(100);
  }
  return clock.now() - begin;
}

const lockOf = () => {
  const client = new KubeClient({
    server: 'https://fake.invalid',
    rateLimit: false,
    transport: async () => ({ status: 500, header: () => undefined, body: (async function* () {})(), close() {} }),
  });
  return new LeaseLock({ client, namespace: 'default', name: 'lock', identity: 'a' });
};

/** The loop's `LeaderGate` (`@reconcile-loop/loop`), copied: leader-election does not depend on the loop. */
interface LoopLeaderGate {
  isLeader(): boolean;
  waitForLeadership(signal?: AbortSignal): Promise<AbortSignal | void>;
  onLost(listener: (reason: unknown) => void): () => void;
  track?(work: Promise<unknown>): void;
}

describe("[leader_election: gate] the elector is the loop's LeaderGate", () => {
  it("a LeaderElector assigns to a structural copy of the loop's LeaderGate", () => {
    const lock = {
      identity: 'a',
      describe: () => 'ns/l',
      get: async () => undefined,
      create: async () => {},
      update: async () => {},
    };
    const gate: LoopLeaderGate = new LeaderElector({ lock });
    expect(gate.isLeader()).toBe(false);
  });
});

describe('[leader_election: defaults] client-go timings and checks', () => {
  it('defaults are 15 s lease, 10 s renew deadline, 2 s retry period, jitter 1.2', () => {
    expect([DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS, JITTER_FACTOR]).toEqual([
      15_000, 10_000, 2_000, 1.2,
    ]);
    expect(new LeaderElector({ lock: lockOf() }).timings).toEqual({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
  });

  it('[leader_election: validation] bad options are an OptionsError with a stable code, like NewLeaderElector', () => {
    const bad: [object, RegExp][] = [
      [{ leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }, /leaseDuration must be greater than renewDeadline/],
      [{ renewDeadlineMs: 2_400, retryPeriodMs: 2_000 }, /renewDeadline must be greater than retryPeriod\*JitterFactor/],
      [{ leaseDurationMs: 0 }, /leaseDurationMs must be a finite number > 0/],
      [{ retryPeriodMs: -1 }, /retryPeriodMs/],
      [{ renewDeadlineMs: Number.NaN }, /renewDeadlineMs/],
      [{ leaseDurationMs: 15_500 }, /whole seconds/],
    ];
    for (const [timings, message] of bad) {
      expect(() => resolveTimings(timings)).toThrow(message);
      expect(() => new LeaderElector({ lock: lockOf(), ...timings })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
      );
    }
    expect(() => new LeaderElector({} as never)).toThrow(/Lock must not be nil/);
    expect(
      () =>
        new LeaderElector({
          lock: {
            ...lockOf(),
            get: lockOf().get,
            create: lockOf().create,
            update: lockOf().update,
            describe: () => '',
            identity: '',
          },
        }),
    ).toThrow(/Lock identity is empty/);
    expect(() => new LeaderElector({ lock: lockOf(), onStartedLeading: 'x' as never })).toThrow(
      /onStartedLeading must be a function/,
    );
    expect(
      () => new LeaseLock({ client: new KubeClient({ server: 'https://x.invalid' }), namespace: '', name: 'l', identity: 'a' }),
    ).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
    // The boundary client-go accepts: renewDeadline just above retryPeriod·1.2.
    expect(resolveTimings({ leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 })).toEqual({
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
    });
  });

  it('[leader_election: MicroTime] record times are RFC 3339 UTC with six fractional digits', () => {
    expect(formatMicroTime(Date.UTC(2026, 10, 30, 8, 46, 54, 123))).toBe('2026-11-30T08:46:54.123000Z');
  });

  it('[leader_election: lease lock] an update before any read is refused (it would be unconditional)', async () => {
    await expect(
      lockOf().update({ holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '', renewTime: '', leaseTransitions: 0 }),
    ).rejects.toMatchObject({ code: 'RL_INVALID_OPTIONS' });
  });

  it('[leader_election: lease metadata] labels and annotations given to the LeaseLock are written on create and on every update, read at the moment of the write', async () => {
    const clock = new ManualClock(1_000_000);
    const server = new FakeLeaseServer(clock);
    const client = new KubeClient({
      server: 'https://fake.invalid',
      rateLimit: false,
      clock,
      transport: server.transport(clock),
    });
    let generation = 1;
    const lock = new LeaseLock({
      client,
      namespace: 'default',
      name: 'member',
      identity: 'a',
      labels: { ring: 'web' },
      annotations: () => ({ generation: String(generation) }),
    });
    const record = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '', renewTime: '', leaseTransitions: 0 };
    const created = lock.create(record);
    await clock.advanceAsync(0);
    await created;
    const metadata = () => server.leases.get('default/member')!['metadata'] as Record<string, Record<string, string>>;
    expect(metadata()['labels']).toEqual({ ring: 'web' });
    expect(metadata()['annotations']).toEqual({ generation: '1' });
    generation = 2;
    const updated = lock.update(record);
    await clock.advanceAsync(0);
    await updated;
    expect(metadata()['labels']).toEqual({ ring: 'web' });
    expect(metadata()['annotations']).toEqual({ generation: '2' });
    expect(() => new LeaseLock({ client, namespace: 'd', name: 'n', identity: 'a', annotations: {} as never })).toThrow(
      /annotations/,
    );
  });
});

describe('[leader_election: acquire and renew] optimistic concurrency on the Lease', () => {
  it('creates a missing Lease holding it, then renews: renewTime moves, acquireTime and leaseTransitions stay', async () => {
    const { server, advance } = setup();
    const started: AbortSignal[] = [];
    const leaders: string[] = [];
    const a = start(
      replica(server, 'a', {
        elector: { onStartedLeading: (s) => void started.push(s), onNewLeader: (id) => void leaders.push(id) },
      }),
    );
    await advance(0);
    expect(a.elector.isLeader()).toBe(true);
    expect(started).toHaveLength(1);
    expect(leaders).toEqual(['a']);
    const first = server.spec('default', 'lock')!;
    expect(first).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    expect(first['acquireTime']).toMatch(MICRO_TIME);
    expect(first['renewTime']).toBe(first['acquireTime']);
    await advance(2_000);
    const second = server.spec('default', 'lock')!;
    expect(second['acquireTime']).toBe(first['acquireTime']);
    expect(second['renewTime']).not.toBe(first['renewTime']);
    expect(second['leaseTransitions']).toBe(0);
    expect(server.writes.map((w) => w.holder)).toEqual(['a', 'a']);
    expect(started[0]!.aborted).toBe(false);
    a.controller.abort();
    await advance(0);
    await a.run;
  });

  it('a standby sees the holder, reports it through onNewLeader, and stays standby while it renews', async () => {
    const { server, advance } = setup();
    const a = start(replica(server, 'a'));
    await advance(0);
    const seen: string[] = [];
    const b = start(replica(server, 'b', { elector: { onNewLeader: (id) => void seen.push(id) } }));
    await advance(60_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.elector.leader).toBe('a');
    expect(seen).toEqual(['a']);
    for (const r of [a, b]) r.controller.abort();
    await advance(0);
  });

  it('[leader_election: lose on conflict] a 409 on renewal re-reads; another valid holder ends the term at once', async () => {
    const { server, advance } = setup();
    const lost: LeadershipLostError[] = [];
    let stopped = 0;
    let signal: AbortSignal | undefined;
    const a = start(
      replica(server, 'a', { elector: { onStartedLeading: (s) => void (signal = s), onStoppedLeading: () => void stopped++ } }),
    );
    await advance(0);
    a.elector.onLost((e) => void lost.push(e));
    server.put('default', 'lock', { holderIdentity: 'x', leaseDurationSeconds: 15, leaseTransitions: 1 });
    await advance(2_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(signal!.aborted).toBe(true);
    expect(signal!.reason).toMatchObject({ code: 'RL_LEADER_LOST', reason: 'other-holder' });
    expect(lost.map((e) => e.reason)).toEqual(['other-holder']);
    expect(stopped).toBe(1);
    expect(a.logger.lines.some((l) => l.level === 'warn' && /optimistically/.test(l.message))).toBe(true);
    a.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: observed-time expiry] a candidate judges expiry on its own clock from when it saw the record change', () => {
  it('a renewTime far in the past does not let a candidate take over early: it waits a lease duration from its observation', async () => {
    const { server, advance, clock } = setup();
    // Written "an hour ago" by a holder that then died; a candidate comparing timestamps would take it at once.
    server.put('default', 'lock', {
      holderIdentity: 'dead',
      leaseDurationSeconds: 15,
      acquireTime: formatMicroTime(0),
      renewTime: formatMicroTime(0),
      leaseTransitions: 3,
    });
    const b = start(replica(server, 'b', { offsetMs: 3_600_000 }));
    const begin = clock.now();
    const waited = await until(clock, () => b.elector.isLeader(), 30_000);
    expect(waited).toBeGreaterThanOrEqual(15_000);
    // Tries every retryPeriod·(1 + 0.5·1.2) = 3.2 s: the first one after expiry wins.
    expect(waited).toBeLessThanOrEqual(15_000 + 3_200 + 100);
    expect(server.spec('default', 'lock')).toMatchObject({ holderIdentity: 'b', leaseTransitions: 4 });
    expect(server.writes.at(-1)!.at - begin).toBeGreaterThanOrEqual(15_000);
    b.controller.abort();
    await advance(0);
  });

  it('a renewTime in the future (a holder whose wall clock runs ahead) does not delay the takeover either', async () => {
    const { server, clock, advance } = setup();
    server.put('default', 'lock', {
      holderIdentity: 'dead',
      leaseDurationSeconds: 15,
      renewTime: formatMicroTime(Date.UTC(2100, 0, 1)),
      leaseTransitions: 0,
    });
    const b = start(replica(server, 'b'));
    const waited = await until(clock, () => b.elector.isLeader(), 30_000);
    expect(waited).toBeGreaterThanOrEqual(15_000);
    expect(waited).toBeLessThanOrEqual(18_300);
    b.controller.abort();
    await advance(0);
  });

  it("every change of the record restarts the candidate's count; the leaseDurationSeconds of the record is what it waits", async () => {
    const { server, clock, advance } = setup();
    server.put('default', 'lock', { holderIdentity: 'x', leaseDurationSeconds: 5, leaseTransitions: 0 });
    const b = start(replica(server, 'b'));
    await advance(4_000);
    server.put('default', 'lock', {
      holderIdentity: 'x',
      leaseDurationSeconds: 5,
      renewTime: formatMicroTime(1),
      leaseTransitions: 0,
    });
    const begin = clock.now();
    await until(clock, () => b.elector.isLeader(), 20_000);
    // b observes the change at its next try (≤ 3.2 s later), then waits 5 s from there.
    expect(clock.now() - begin).toBeGreaterThanOrEqual(5_000);
    b.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: renew deadline] a leader that cannot renew steps down before anyone can take over', () => {
  it('with every request lost, the leader stops at exactly renewSentAt + renewDeadline; a candidate starts only after a lease duration from its observation', async () => {
    const { server, clock, advance } = setup();
    const events: [string, number][] = [];
    const a = start(
      replica(server, 'a', {
        elector: {
          onStartedLeading: () => void events.push(['a+', clock.now()]),
          onStoppedLeading: () => void events.push(['a-', clock.now()]),
        },
      }),
    );
    await advance(0);
    const b = start(replica(server, 'b', { elector: { onStartedLeading: () => void events.push(['b+', clock.now()]) } }));
    await advance(10);
    const lastRenewSent = server.writes.at(-1)!.at;
    a.blackHole = true; // a partition: a is alive but cannot reach the apiserver
    await until(clock, () => !a.elector.isLeader(), 20_000);
    await until(clock, () => b.elector.isLeader(), 30_000);
    const aStopped = events.find(([e]) => e === 'a-')![1];
    const bStarted = events.find(([e]) => e === 'b+')![1];
    expect(aStopped - lastRenewSent).toBeLessThanOrEqual(10_000);
    expect(bStarted - aStopped).toBeGreaterThanOrEqual(5_000 - 2_000); // lease − renew deadline, less one renewal's age
    expect(a.logger.lines.some((l) => l.level === 'warn' && /renew deadline/.test(l.message))).toBe(true);
    for (const r of [a, b]) r.controller.abort();
    await advance(0);
  });

  it('isLeader() turns false at the deadline even when no timer has run (a blocked event loop): it is computed from the clock', async () => {
    const { server, clock, advance } = setup();
    const a = start(replica(server, 'a'));
    await advance(0);
    expect(a.elector.isLeader()).toBe(true);
    clock.jump(9_999);
    expect(a.elector.isLeader()).toBe(true);
    clock.jump(1);
    expect(a.elector.isLeader()).toBe(false);
    a.controller.abort();
    await advance(0);
  });

  it('[leader_election: frozen leader] a leader frozen past the lease duration answers isLeader() false on resume before any of its timers run; a late renewal answer does not revive the term', async () => {
    const { server, clock, advance } = setup();
    let aStopped = -1;
    const a = start(replica(server, 'a', { elector: { onStoppedLeading: () => void (aStopped = clock.now()) } }));
    await advance(0);
    const b = start(replica(server, 'b'));
    await advance(1_990); // a's renewal request is about to go out
    await advance(20);
    a.clock.freeze(); // SIGSTOP, with the renewal's answer on its way
    await until(clock, () => b.elector.isLeader(), 30_000);
    // What a answers on its first call after SIGCONT, before its held timers (the late answer among them) run:
    expect(a.elector.isLeader()).toBe(false);
    a.clock.thaw();
    await advance(0);
    expect(a.elector.isLeader()).toBe(false);
    expect(aStopped).toBeGreaterThan(0);
    expect(b.elector.isLeader()).toBe(true);
    await advance(10_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(server.spec('default', 'lock')).toMatchObject({ holderIdentity: 'b' });
    for (const r of [a, b]) r.controller.abort();
    await advance(0);
  });

  it('a renewal answered after the renew deadline ends the term instead of extending it', async () => {
    const { server, clock, advance } = setup();
    let slow = false;
    const stops: number[] = [];
    const a = start(
      replica(server, 'a', {
        faults: () => (slow ? { responseDelayMs: 11_000 } : {}),
        elector: { onStoppedLeading: () => void stops.push(clock.now()) },
      }),
    );
    await advance(0);
    slow = true;
    await advance(13_000);
    expect(stops).toHaveLength(1);
    expect(a.elector.isLeader()).toBe(false);
    a.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: ReleaseOnCancel] a graceful stop releases the Lease once the leading work settled', () => {
  async function handover(releaseOnCancel: boolean, workMs = 0) {
    const { server, clock, advance } = setup();
    const order: string[] = [];
    const a = start(
      replica(server, 'a', {
        elector: {
          releaseOnCancel,
          onStartedLeading: (signal) =>
            new Promise<void>((resolve) =>
              signal.addEventListener(
                'abort',
                () => void clock.setTimeout(() => (order.push('work settled'), resolve()), workMs),
              ),
            ),
          onStoppedLeading: () => void order.push('stopped leading'),
        },
      }),
    );
    await advance(0);
    const b = start(replica(server, 'b'));
    await advance(5_000);
    const stoppedAt = clock.now();
    a.controller.abort();
    const took = await until(clock, () => b.elector.isLeader(), 30_000);
    await a.run;
    // Only a's writes up to b's takeover (b releases too when it stops below).
    const released = server.writes.some((w) => w.holder === '');
    b.controller.abort();
    await advance(0);
    return { took, order, released, a, stoppedAt };
  }

  it('released (no holder, 1 s): the standby takes over within about one retry period', async () => {
    const { took, order, released } = await handover(true);
    expect(took).toBeLessThanOrEqual(3_200 + 100);
    expect(order).toEqual(['stopped leading', 'work settled']);
    expect(released).toBe(true);
  });

  it('the release waits for the leading work; work still running at the renew deadline keeps the lease until it expires', async () => {
    const slowWork = await handover(true, 60_000);
    expect(slowWork.released).toBe(false);
    expect(slowWork.took).toBeGreaterThanOrEqual(15_000 - 5_000);
    expect(slowWork.a.logger.lines.some((l) => l.level === 'warn' && /did not settle/.test(l.message))).toBe(true);
    const quickWork = await handover(true, 1_000);
    expect(quickWork.released).toBe(true);
    expect(quickWork.took).toBeLessThanOrEqual(1_000 + 3_200 + 100);
  });

  it('without it the standby waits for expiry', async () => {
    const { took, released } = await handover(false);
    expect(released).toBe(false);
    expect(took).toBeGreaterThanOrEqual(15_000 - 5_000);
  });
});

describe('[leader_election: stop mid-write] a stop while a Lease write is in flight still releases what that write took', () => {
  // The apiserver commits a write whether or not its client still waits for the answer: aborting
  // the request on the stop would forget a Lease the server gave us (held until it expires), or
  // keep a stale resourceVersion that makes the release a 409.
  const slowAnswers = () => ({ responseDelayMs: 500 });

  it('an acquire committed on the server when the stop came: the answer is awaited and the Lease released at once', async () => {
    const { server, advance } = setup();
    const a = start(replica(server, 'a', { faults: slowAnswers }));
    await until(server.clock, () => server.spec('default', 'lock')?.['holderIdentity'] === 'a', 5_000); // committed; the answer 500 ms away
    expect(a.elector.isLeader()).toBe(false);
    a.controller.abort();
    await until(server.clock, () => (server.spec('default', 'lock')?.['holderIdentity'] ?? '') === '', 10_000);
    await advance(1_000); // the release's answer
    await a.run;
    expect(a.elector.isLeader()).toBe(false);
    expect(server.writes.map((w) => w.holder)).toEqual(['a', '']);
  });

  it('a renewal committed on the server when the stop came: the release carries its resourceVersion (no 409), the Lease is free', async () => {
    const { server, advance } = setup();
    const a = start(replica(server, 'a', { faults: slowAnswers }));
    await until(server.clock, () => a.elector.isLeader(), 5_000);
    await until(server.clock, () => server.writes.length === 2, 5_000); // the first renewal committed, its answer 500 ms away
    expect(server.writes.map((w) => w.holder)).toEqual(['a', 'a']);
    a.controller.abort();
    await until(server.clock, () => (server.spec('default', 'lock')?.['holderIdentity'] ?? '') === '', 10_000);
    await advance(1_000);
    await a.run;
    expect(a.logger.lines.some((l) => /failed to release/.test(l.message))).toBe(false);
  });
});

describe('[leader_election: health] client-go HealthzAdaptor', () => {
  it('a leader whose step-down cannot run (blocked event loop) is unhealthy past leaseDuration + tolerance; a standby is healthy', async () => {
    const { server, clock, advance } = setup();
    const a = start(replica(server, 'a'));
    const b = start(replica(server, 'b'));
    await advance(0);
    expect(a.elector.check(1_000)).toEqual({ healthy: true });
    clock.jump(15_000 + 1_000);
    expect(a.elector.check(1_000)).toEqual({ healthy: true });
    clock.jump(1);
    expect(a.elector.check(1_000)).toMatchObject({
      healthy: false,
      reason: expect.stringMatching(/failed election to renew leadership on lease default\/lock/),
    });
    expect(b.elector.check(0)).toEqual({ healthy: true });
    await advance(0); // the loop runs again: the overdue deadline timer steps a down
    expect(a.elector.check(0)).toEqual({ healthy: true });
    for (const r of [a, b]) r.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: gate] waitForLeadership, onLost, run', () => {
  it('waitForLeadership resolves with the term signal, honours its deadline and signal, and rejects when the elector stops', async () => {
    const { server, advance } = setup();
    server.put('default', 'lock', { holderIdentity: 'x', leaseDurationSeconds: 15, leaseTransitions: 0 });
    const a = replica(server, 'a');
    const timedOut = expect(a.elector.waitForLeadership(undefined, 1_000)).rejects.toMatchObject({
      code: 'RL_LEADER_WAIT_TIMEOUT',
    });
    const aborted = new AbortController();
    const cancelled = a.elector.waitForLeadership(aborted.signal);
    const stopped = a.elector.waitForLeadership();
    const won = a.elector.waitForLeadership(undefined, 60_000);
    start(a);
    await advance(1_000);
    await timedOut;
    aborted.abort(new Error('bye'));
    await expect(cancelled).rejects.toThrow('bye');
    await advance(20_000);
    const term = await won;
    expect(term.aborted).toBe(false);
    expect(await a.elector.waitForLeadership()).toBe(term);
    await expect(a.elector.run(new AbortController().signal)).rejects.toMatchObject({ code: 'RL_LEADER_ELECTOR_RUNNING' });
    a.controller.abort();
    await advance(0);
    await a.run;
    expect(term.aborted).toBe(true);
    expect(term.reason).toMatchObject({ reason: 'stopped' });
    await expect(stopped).resolves.toBe(term);
    const late = a.elector.waitForLeadership();
    const r: Replica = a;
    expect(r.elector.isLeader()).toBe(false);
    // Nothing runs the election any more: a waiter's own signal or deadline ends its wait.
    const c = new AbortController();
    const bounded = a.elector.waitForLeadership(c.signal);
    c.abort();
    await expect(bounded).rejects.toBeDefined();
    void late.catch(() => undefined);
  });

  it('throwing callbacks are logged and the election goes on', async () => {
    const { server, advance } = setup();
    const a = start(
      replica(server, 'a', {
        elector: {
          onStartedLeading: () => {
            throw new Error('boom start');
          },
          onNewLeader: () => {
            throw new Error('boom new');
          },
        },
      }),
    );
    await advance(4_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(a.logger.lines.filter((l) => l.level === 'error').map((l) => (l.fields['err'] as Error).message)).toEqual([
      'boom new',
      'boom start',
    ]);
    a.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: process lifetime] the default clock', () => {
  it('keeps Node alive while a standby waits for its next try: every wait the elector schedules asks the clock to keep the process alive', async () => {
    const { server, advance } = setup();
    const keepAlive: boolean[] = [];
    const recording: Clock = {
      now: () => server.clock.now(),
      setTimeout: (callback, delayMs, options) => {
        keepAlive.push(options?.keepAlive === true);
        return server.clock.setTimeout(callback, delayMs, options);
      },
      clearTimeout: (handle) => server.clock.clearTimeout(handle),
    };
    const a = start(replica(server, 'a'));
    const b = start(replica(server, 'b', { elector: { clock: recording } }));
    await advance(10_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(keepAlive.length).toBeGreaterThan(2);
    expect(keepAlive.every(Boolean)).toBe(true);
    a.controller.abort();
    b.controller.abort();
    await advance(0);
  });
});

describe("[leader_election: bounded waits] every request of an attempt has the attempt's deadline", () => {
  it('a request that is never answered fails at the renew deadline, is logged, and the candidate tries again', async () => {
    const { server, clock, advance } = setup();
    let lost = 1;
    const a = start(replica(server, 'a', { faults: () => (lost-- > 0 ? { drop: 'request' } : {}) }));
    await advance(0);
    expect(a.elector.isLeader()).toBe(false);
    await advance(10_000);
    expect(
      a.logger.lines.some(
        (l) =>
          l.level === 'error' &&
          /error retrieving the lease/.test(l.message) &&
          /10000 ms/.test((l.fields['err'] as Error).message),
      ),
    ).toBe(true);
    const took = await until(clock, () => a.elector.isLeader(), 30_000);
    expect(took).toBeLessThanOrEqual(3_200 + 100); // the next jittered try
    a.controller.abort();
    await advance(0);
  });
});

describe('[leader_election: quiet outage] failed Lease reads are logged at error once per streak, the recovery once at info', () => {
  it('an apiserver down for a minute is one error line, repeats at debug, one recovery line; a second outage is a new streak', async () => {
    const { server, clock, advance } = setup();
    const a = start(replica(server, 'a'));
    const b = replica(server, 'b');
    b.blackHole = true; // down from the start: every read b sends is lost and fails at its deadline
    start(b);
    await advance(0);
    expect(a.elector.isLeader()).toBe(true);
    const reads = (r: Replica, level: string) =>
      r.logger.lines.filter((l) => l.level === level && l.message.startsWith('error retrieving the lease'));
    const recoveries = (r: Replica) => r.logger.lines.filter((l) => l.message === 'the lease can be read again');
    await advance(60_000);
    // Every try failed (10 s deadline, then a 3.2 s jittered retry): four or more reads, one error line.
    expect(reads(b, 'error')).toHaveLength(1);
    expect(reads(b, 'debug').length).toBeGreaterThanOrEqual(3);
    expect(b.logger.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toHaveLength(1);
    expect(recoveries(b)).toHaveLength(0);
    b.blackHole = false;
    await until(clock, () => recoveries(b).length > 0, 15_000);
    const [recovery] = recoveries(b);
    expect(recovery!.level).toBe('info');
    expect(recovery!.fields['failures']).toBe(reads(b, 'error').length + reads(b, 'debug').length);
    expect(recovery!.fields['downMs']).toBeGreaterThanOrEqual(50_000); // from the first failure (at its 10 s deadline)
    await advance(20_000); // healthy reads: no more recovery lines, no more errors
    expect(recoveries(b)).toHaveLength(1);
    expect(reads(b, 'error')).toHaveLength(1);
    expect(b.elector.isLeader()).toBe(false); // a still holds it
    // A second outage: a new streak, so exactly one more error line, then one more recovery.
    b.blackHole = true;
    await advance(40_000);
    expect(reads(b, 'error')).toHaveLength(2);
    b.blackHole = false;
    await until(clock, () => recoveries(b).length === 2, 15_000);
    expect(a.logger.lines.filter((l) => l.message.startsWith('error retrieving the lease'))).toHaveLength(0);
    a.controller.abort();
    b.controller.abort();
    await advance(0);
  });
});
