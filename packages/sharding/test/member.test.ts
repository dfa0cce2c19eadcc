import { ManualClock, shardHash } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShardMember, type ShardObserver } from '../src/index.js';
import { memberLeaseName } from '../src/claim.js';
import { FakeLeaseServer, recordingLogger } from '@reconcile-loop/test-support';
import { replica, start, TIMINGS, type Replica } from './fakes.js';
import { KubeClient } from '@reconcile-loop/kube-client';

const HASHES = fc.sample(fc.uuid(), { seed: 28, numRuns: 200 }).map((uid) => shardHash(uid));

/** Steps in 100 ms until `predicate` holds, checking at every step that no hash is admitted twice. */
async function until(
  clock: ManualClock,
  members: readonly Replica[],
  predicate: () => boolean,
  limitMs: number,
): Promise<number> {
  const begin = clock.now();
  for (;;) {
    expectNoDoubleAdmission(members);
    if (predicate()) return clock.now() - begin;
    if (clock.now() - begin > limitMs) throw new Error(`condition not met within ${limitMs} ms of fake time`);
    await clock.advanceAsync(100);
  }
}

function expectNoDoubleAdmission(members: readonly Replica[]): void {
  for (const h of HASHES) {
    const admitting = members.filter((m) => m.member.admits(h)).map((m) => m.id);
    if (admitting.length > 1) throw new Error(`${h} admitted by ${admitting.join(', ')}`);
  }
}

const admitsAll = (members: readonly Replica[]) => HASHES.every((h) => members.some((m) => m.member.admits(h)));
const admitted = (r: Replica) => HASHES.filter((h) => r.member.admits(h));

function recordingObserver() {
  const events: { kind: string; event: Record<string, unknown> }[] = [];
  const observer: ShardObserver = {
    onRanges: (event) => void events.push({ kind: 'ranges', event }),
    onHandover: (event) => void events.push({ kind: 'handover', event }),
    onAcknowledged: (event) => void events.push({ kind: 'ack', event }),
  };
  return { events, observer };
}

function setup() {
  const clock = new ManualClock(1_000_000);
  const server = new FakeLeaseServer(clock);
  return { clock, server };
}

async function stopAll(clock: ManualClock, members: readonly Replica[]): Promise<void> {
  for (const m of members) {
    m.clock.thaw();
    m.controller.abort();
  }
  await clock.advanceAsync(TIMINGS.renewDeadlineMs + 1_000);
  await Promise.all(members.map((m) => m.run));
}

describe('[sharding: membership] members on Leases, on a fake apiserver and a manual clock', () => {
  it('[sharding: join] a lone member owns everything once it has read the ring; a joiner admits its share only after the first acknowledged the new ring', async () => {
    const { clock, server } = setup();
    const a = start(replica(server, 'a'));
    expect(HASHES.some((h) => a.member.admits(h))).toBe(false); // nothing before its Lease and a read
    await until(clock, [a], () => admitsAll([a]), 10_000);
    expect(a.member.ranges).toEqual([{ start: '0x0000000000000000', end: '0x10000000000000000' }]);
    const lease = server.leases.get('default/demo-a')!;
    expect((lease['metadata'] as Record<string, Record<string, string>>)['labels']).toEqual({
      'sharding.reconcile-loop.dev/ring': 'demo',
    });

    const { events, observer } = recordingObserver();
    const b = start(replica(server, 'b', { member: { observer } }));
    let aAcknowledgedAt: number | undefined;
    await until(
      clock,
      [a, b],
      () => {
        const claim = (server.leases.get('default/demo-a')!['metadata'] as Record<string, Record<string, string>>)[
          'annotations'
        ]!['sharding.reconcile-loop.dev/claim'];
        if (aAcknowledgedAt === undefined && claim === JSON.stringify({ members: ['a', 'b'], virtualNodes: 8 }))
          aAcknowledgedAt = clock.now();
        // The joiner admits nothing of its share until the first member's Lease says it let go.
        if (aAcknowledgedAt === undefined) expect(admitted(b)).toEqual([]);
        return admitted(b).length > 0 && admitsAll([a, b]);
      },
      20_000,
    );
    expect(aAcknowledgedAt).toBeDefined();
    expect(a.member.members).toEqual(['a', 'b']);
    expect(b.member.members).toEqual(['a', 'b']);
    // Each admits exactly its ranges of the shared view.
    for (const h of HASHES) expect(b.member.admits(h)).toBe(new Set(admitted(b)).has(h));
    const handover = events.find((e) => e.kind === 'handover')!.event;
    expect(handover['waitedFor']).toContain('peer-claim');
    expect(handover['expired']).toEqual([]);
    expect(events.some((e) => e.kind === 'ranges')).toBe(true);
    expect(b.member.status().acknowledged).toEqual(['a', 'b']);
    await stopAll(clock, [a, b]);
  });

  it('[sharding: drain] a member keeps a moved hash claimed until its in-flight reconcile released it; the new owner waits for that', async () => {
    const { clock, server } = setup();
    const a = start(replica(server, 'a'));
    await until(clock, [a], () => admitsAll([a]), 10_000);
    // In flight on a: every hash (a reconcile that is slow).
    const releases = HASHES.map((h) => a.member.enter(h)!);
    expect(releases.every((r) => typeof r === 'function')).toBe(true);
    const b = start(replica(server, 'b'));
    // b joins; a stops admitting b's share at once, but cannot acknowledge while those reconciles run.
    await until(clock, [a, b], () => a.member.members.length === 2, 10_000);
    const moved = HASHES.filter((h) => !a.member.admits(h));
    expect(moved.length).toBeGreaterThan(0);
    await clock.advanceAsync(20_000);
    expectNoDoubleAdmission([a, b]);
    expect(moved.some((h) => b.member.admits(h))).toBe(false);
    expect(a.member.status().acknowledged).toEqual(['a']); // still the ring from before the join
    for (const release of releases) release();
    await until(clock, [a, b], () => moved.every((h) => b.member.admits(h)), 10_000);
    await stopAll(clock, [a, b]);
  });

  it('[sharding: leave] a graceful stop releases the Lease once in-flight reconciles finished; the others take over without waiting for expiry', async () => {
    const { clock, server } = setup();
    const [a, b] = [start(replica(server, 'a')), start(replica(server, 'b'))];
    await until(clock, [a, b], () => admitsAll([a, b]), 20_000);
    const mine = admitted(b);
    const release = b.member.enter(mine[0]!)!;
    b.controller.abort();
    await clock.advanceAsync(0);
    expect(mine.some((h) => b.member.admits(h))).toBe(false); // stopping: admits nothing more
    await clock.advanceAsync(5_000);
    expect(a.member.admits(mine[0]!)).toBe(false); // b's reconcile is still running
    release();
    const waited = await until(clock, [a, b], () => mine.every((h) => a.member.admits(h)), 10_000);
    expect(waited).toBeLessThan(TIMINGS.leaseDurationMs); // released, not expired
    await b.run;
    expect(a.member.members).toEqual(['a']);
    await stopAll(clock, [a]);
  });

  it("[sharding: expiry] a killed member leaves the ring once its Lease expired by the survivor's clock, and not before", async () => {
    const { clock, server } = setup();
    const { events, observer } = recordingObserver();
    const a = start(replica(server, 'a', { member: { observer } }));
    const b = start(replica(server, 'b'));
    await until(clock, [a, b], () => admitsAll([a, b]), 20_000);
    const bs = admitted(b);
    events.length = 0;
    const killedAt = clock.now();
    b.dead = true;
    b.controller.abort();
    const waited = await until(clock, [a, b], () => bs.every((h) => a.member.admits(h)), 40_000);
    // a saw b's last renewal at most a retry period before the kill; it waits a lease duration from then.
    expect(waited).toBeGreaterThanOrEqual(TIMINGS.leaseDurationMs - TIMINGS.retryPeriodMs);
    expect(clock.now() - killedAt).toBe(waited);
    const handover = events.find((e) => e.kind === 'handover')!.event;
    expect(handover['expired']).toEqual(['b']);
    await stopAll(clock, [a, b]);
  });

  it('[sharding: paused] a member frozen past its Lease admits nothing on waking (onLost tells of it), and nothing until a read of the ring sent after it renewed', async () => {
    const { clock, server } = setup();
    const requests: { at: number; method: string; path: string }[] = [];
    const a = start(replica(server, 'a'));
    // b's LISTs are answered 1 s after they commit, so a stale read cannot pass for a fresh one by arriving first.
    let slowLists = false;
    const b = start(
      replica(server, 'b', {
        onCommit: (method, url) => void requests.push({ at: clock.now(), method, path: url.pathname }),
        faults: (method, url) =>
          slowLists && method === 'GET' && url.pathname.endsWith('/leases') ? { responseDelayMs: 1_000 } : {},
      }),
    );
    await until(clock, [a, b], () => admitsAll([a, b]), 20_000);
    const bs = admitted(b);
    const lost: unknown[] = [];
    const unsubscribe = b.member.onLost((reason) => lost.push(reason));
    b.clock.freeze();
    // a takes b's share once b's Lease expired by a's clock.
    await until(clock, [a, b], () => bs.every((h) => a.member.admits(h)), 40_000);
    await clock.advanceAsync(5_000);
    // Waking: the first calls answer false, before any of b's timers or answers ran.
    expect(bs.some((h) => b.member.admits(h))).toBe(false);
    const thawedAt = clock.now();
    slowLists = true;
    b.clock.thaw();
    let firstAdmitted: number | undefined;
    await until(
      clock,
      [a, b],
      () => {
        if (firstAdmitted === undefined && admitted(b).length > 0) firstAdmitted = clock.now();
        return admitsAll([a, b]) && admitted(b).length > 0;
      },
      30_000,
    );
    // In order after waking: b renewed its Lease, then sent a LIST of the ring (commit = send here),
    // and admitted only once that LIST was answered.
    const after = requests.filter((r) => r.at >= thawedAt);
    const renewedAt = after.find((r) => r.method === 'PUT' && r.path.endsWith('/demo-b'))!.at;
    const listedAt = after.find((r) => r.method === 'GET' && r.path.endsWith('/leases') && r.at > renewedAt)?.at;
    expect(listedAt).toBeDefined();
    expect(firstAdmitted!).toBeGreaterThanOrEqual(listedAt! + 1_000);
    expect(b.member.members).toEqual(['a', 'b']);
    // onLost (what the loop aborts its in-flight reconciles on) told of the lapse once b woke.
    expect(lost.length).toBeGreaterThan(0);
    unsubscribe();
    await stopAll(clock, [a, b]);
  });

  it('[sharding: late read] a LIST answered late keeps a member that renewed meanwhile in the view, and no hash is admitted twice', async () => {
    const { clock, server } = setup();
    // a's renewals commit 3 s after they are sent (within its renew deadline): one every 5 s, so two
    // of b's LISTs 2 s apart can return the same record of a. Once armed, the schedule is: a renewal
    // of a commits; b LISTs (fast, sees it); b LISTs again, committed at once and answered 9 s later
    // (just inside the LIST's deadline, the renew deadline), while a keeps renewing.
    let phase: 'off' | 'armed' | 'renewed' | 'seen' | 'done' = 'off';
    const a = start(
      replica(server, 'a', {
        faults: (method) => (method === 'PUT' ? { commitDelayMs: 3_000 } : {}),
        onCommit: (method) => {
          if (method === 'PUT' && phase === 'armed') phase = 'renewed';
        },
      }),
    );
    const b = start(
      replica(server, 'b', {
        faults: (method, url) => {
          if (method !== 'GET' || !url.pathname.endsWith('/leases')) return {};
          if (phase === 'renewed') phase = 'seen';
          else if (phase === 'seen') {
            phase = 'done';
            return { responseDelayMs: 9_000 };
          }
          return {};
        },
      }),
    );
    await until(clock, [a, b], () => admitsAll([a, b]), 30_000);
    phase = 'armed';
    await until(clock, [a, b], () => phase === 'done', 20_000);
    // Through the slow LIST and after it, b keeps a (which renewed all along) and never admits a's share.
    for (let t = 0; t < 24_000; t += 100) {
      await clock.advanceAsync(100);
      expectNoDoubleAdmission([a, b]);
      expect(b.member.members).toEqual(['a', 'b']);
    }
    await stopAll(clock, [a, b]);
  });

  it('[sharding: settle] replicas started one after another: none reports ranges or admits before its reads agreed for settleMs, so each lists its final share once', async () => {
    const { clock, server } = setup();
    const seen = new Map<string, (readonly unknown[])[]>();
    const begin = clock.now();
    const started: Replica[] = [];
    for (const id of ['a', 'b', 'c']) {
      const r = replica(server, id, { member: { settleMs: 5_000 } });
      const ranges: (readonly unknown[])[] = [];
      seen.set(id, ranges);
      r.member.onRangesChanged((next) => void ranges.push(next));
      started.push(start(r));
      // Before settling: no ranges, nothing admitted, and the status says why.
      await until(clock, started, () => started.every((m) => m.member.ranges.length === 0), 0);
      expect(started.some((m) => m.member.status().settled || admitted(m).length > 0)).toBe(false);
      await clock.advanceAsync(1_000);
    }
    await until(clock, started, () => admitsAll(started), 30_000);
    // The first members read the ring alone or with two: the settle window outlasted the joins.
    expect(clock.now() - begin).toBeGreaterThanOrEqual(5_000);
    for (const m of started) {
      expect(m.member.members).toEqual(['a', 'b', 'c']);
      expect(m.member.status().settled).toBe(true);
      // One report, the final share: a source following it listed once, never the whole kind.
      expect(seen.get(m.id)).toEqual([m.member.ranges]);
    }
    await stopAll(clock, started);
  });

  it('[sharding: settle] expectedMembers settles as soon as that many are on the ring; settleMs still settles a ring that never reaches it', async () => {
    const { clock, server } = setup();
    const expecting = { settleMs: 60_000, expectedMembers: 3 };
    const first = [start(replica(server, 'a', { member: expecting })), start(replica(server, 'b', { member: expecting }))];
    await clock.advanceAsync(10_000);
    expect(first.some((m) => m.member.status().settled || m.member.ranges.length > 0)).toBe(false);
    const c = start(replica(server, 'c', { member: expecting }));
    const all = [...first, c];
    const waited = await until(clock, all, () => admitsAll(all), 20_000);
    expect(waited).toBeLessThan(60_000);
    await stopAll(clock, all);

    // Two of three expected, the window 8 s: they settle on the window.
    const again = setup();
    const short = { settleMs: 8_000, expectedMembers: 3 };
    const two = [start(replica(again.server, 'd', { member: short })), start(replica(again.server, 'e', { member: short }))];
    await again.clock.advanceAsync(4_000);
    expect(two.some((m) => m.member.status().settled)).toBe(false);
    await until(again.clock, two, () => admitsAll(two), 20_000);
    expect(two.map((m) => m.member.members)).toEqual([
      ['d', 'e'],
      ['d', 'e'],
    ]);
    await stopAll(again.clock, two);
  });

  it('[sharding: settle] with expectedMembers and no settleMs, a partial ring waits a lease duration, not a retry period, before it settles', async () => {
    const { clock, server } = setup();
    const begin = clock.now();
    const two = [
      start(replica(server, 'a', { member: { expectedMembers: 3 } })),
      start(replica(server, 'b', { member: { expectedMembers: 3 } })),
    ];
    // Several retry periods of agreeing reads of a two-member ring: still waiting for the third.
    await clock.advanceAsync(3 * TIMINGS.retryPeriodMs);
    expect(two.some((m) => m.member.status().settled || m.member.ranges.length > 0 || admitted(m).length > 0)).toBe(false);
    await until(clock, two, () => admitsAll(two), 30_000);
    expect(clock.now() - begin).toBeGreaterThanOrEqual(TIMINGS.leaseDurationMs);
    await stopAll(clock, two);
  });

  it('[sharding: readiness] ring reads failing (a 403 on the LIST) make ready() false once they failed for a lease duration, naming the 403 and the count; one successful read makes it ready again', async () => {
    const { clock, server } = setup();
    const forbidden =
      'leases.coordination.k8s.io is forbidden: User "system:serviceaccount:default:demo" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "default"';
    let forbid = true;
    const a = start(
      replica(server, 'a', {
        refuse: (method, url) =>
          forbid && method === 'GET' && url.pathname.endsWith('/leases')
            ? {
                status: 403,
                body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: forbidden },
              }
            : undefined,
      }),
    );
    const startedAt = clock.now();
    // Before any read: no failure, ready (a starting member is ready; the loop's sources gate start-up).
    expect(a.member.ready()).toEqual({ ok: true });
    expect(a.member.status().ringRead).toEqual({ consecutiveFailures: 0, failingForMs: undefined, lastError: undefined });
    // Every read fails; short of the lease duration the member stays ready, the reason already says why.
    while (clock.now() - startedAt < TIMINGS.leaseDurationMs - TIMINGS.retryPeriodMs) {
      await clock.advanceAsync(100);
      expect(a.member.ready().ok).toBe(true);
    }
    const before = a.member.status().ringRead;
    expect(before.consecutiveFailures).toBeGreaterThanOrEqual(6);
    expect(before.lastError).toContain(forbidden);
    expect(before.failingForMs).toBeLessThan(TIMINGS.leaseDurationMs);
    expect(a.member.ready().reason).toContain('under the lease duration');
    // Past the lease duration: not ready, the reason names the duration, the count and the 403.
    await clock.advanceAsync(TIMINGS.retryPeriodMs + 100);
    const ringRead = a.member.status().ringRead;
    expect(ringRead.failingForMs).toBeGreaterThanOrEqual(TIMINGS.leaseDurationMs);
    expect(ringRead.consecutiveFailures).toBeGreaterThan(before.consecutiveFailures);
    expect(ringRead.lastError).toMatch(/HTTP 403 Forbidden/);
    const notReady = a.member.ready();
    expect(notReady.ok).toBe(false);
    expect(notReady.reason).toBe(
      `reads of ring demo failing for ${Math.round(ringRead.failingForMs! / 1000)} s (${ringRead.consecutiveFailures} failures): ${ringRead.lastError}`,
    );
    expect(notReady.reason).toContain(forbidden);
    expect(a.member.status().settled).toBe(false);
    expect(a.member.status().holdsLease).toBe(true); // its own Lease is fine: only the ring read fails
    // The Role is fixed: the next read succeeds and the member is ready again, the counters reset.
    forbid = false;
    await clock.advanceAsync(TIMINGS.retryPeriodMs);
    expect(a.member.ready()).toEqual({ ok: true });
    expect(a.member.status().ringRead).toEqual({ consecutiveFailures: 0, failingForMs: undefined, lastError: undefined });
    // A new streak is timed from its own first failure, not the old one.
    forbid = true;
    await clock.advanceAsync(TIMINGS.retryPeriodMs);
    expect(a.member.status().ringRead.consecutiveFailures).toBe(1);
    expect(a.member.ready().ok).toBe(true);
    await stopAll(clock, [a]);
  });

  /** Replica `a` with a recording logger whose first `count` ring reads the server answers with `code(n)` (n from 1). */
  const refusingRingReads = (count: number, code: (n: number) => 503 | 403) => {
    const { clock, server } = setup();
    const logger = recordingLogger();
    const refusals = { made: 0 };
    const reasons = { 503: 'ServiceUnavailable', 403: 'Forbidden' } as const;
    const a = start(
      replica(server, 'a', {
        member: { logger },
        refuse: (method, url) => {
          if (method !== 'GET' || !url.pathname.endsWith('/leases') || refusals.made === count) return undefined;
          const status = code(++refusals.made);
          return { status, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: reasons[status], code: status } };
        },
      }),
    );
    return { clock, logger, refusals, a };
  };

  it('[sharding: quiet ring-read outage] 20 failed ring reads are one line above debug, the repeats at debug; the first good read logs one recovery', async () => {
    const { clock, logger, refusals, a } = refusingRingReads(20, () => 503);
    const ringRead = (level: string) =>
      logger.entries.filter((e) => e.level === level && e.message.startsWith('failed to read the ring'));
    const recoveries = () => logger.entries.filter((e) => e.message === 'the ring can be read again');
    while (refusals.made < 20) await clock.advanceAsync(100);
    await clock.advanceAsync(100);
    expect(a.member.status().ringRead.consecutiveFailures).toBe(20);
    expect(ringRead('warn')).toHaveLength(1);
    expect(ringRead('warn')[0]?.fields).toMatchObject({ ring: 'demo', consecutiveFailures: 1 });
    expect(ringRead('debug')).toHaveLength(19);
    expect(ringRead('debug').at(-1)?.fields).toMatchObject({ consecutiveFailures: 20 });
    expect(logger.entries.filter((e) => e.level === 'warn' || e.level === 'error')).toHaveLength(1);
    expect(recoveries()).toHaveLength(0);
    // The apiserver answers again: one recovery line at info, with the count and how long it lasted.
    await until(clock, [a], () => a.member.status().ringRead.consecutiveFailures === 0, 10_000);
    await clock.advanceAsync(10 * TIMINGS.retryPeriodMs); // healthy reads after it log nothing more
    expect(recoveries()).toHaveLength(1);
    expect(recoveries()[0]).toMatchObject({ level: 'info', fields: { ring: 'demo', failures: 20 } });
    // From the send of the first failed read: 20 reads a retry period apart (the first two back to back, a term began).
    expect(recoveries()[0]?.fields['downMs']).toBeGreaterThanOrEqual(19 * TIMINGS.retryPeriodMs);
    expect(ringRead('warn')).toHaveLength(1);
    await stopAll(clock, [a]);
  });

  it('[sharding: quiet ring-read outage] a 403 in the middle of an outage of timeouts is logged again, at error', async () => {
    const { clock, logger, refusals, a } = refusingRingReads(6, (n) => (n <= 3 ? 503 : 403));
    await until(clock, [a], () => refusals.made === 6 && a.member.status().ringRead.consecutiveFailures === 0, 30_000);
    const loud = logger.entries.filter((e) => e.level !== 'debug' && /ring can be read|failed to read the ring/.test(e.message));
    expect(loud.map((e) => [e.level, e.fields['consecutiveFailures'] ?? e.fields['failures']])).toEqual([
      ['warn', 1],
      ['error', 4],
      ['info', 6],
    ]);
    await stopAll(clock, [a]);
  });

  it('[sharding: options] bad options are an OptionsError; Lease names are DNS labels for any identity', () => {
    const client = new KubeClient({ server: 'https://fake.invalid', rateLimit: false });
    const base = { client, namespace: 'default', ring: 'demo', identity: 'a' };
    expect(() => new ShardMember({ ...base, ring: 'Not_A_Label' })).toThrow(/DNS-1123/);
    expect(() => new ShardMember({ ...base, identity: '' })).toThrow(/identity/);
    expect(() => new ShardMember({ ...base, leaseDurationMs: 1_500 })).toThrow(/whole seconds/);
    expect(() => new ShardMember({ ...base, virtualNodes: 0 })).toThrow(/virtualNodes/);
    expect(() => new ShardMember({ ...base, settleMs: -1 })).toThrow(/settleMs/);
    expect(() => new ShardMember({ ...base, expectedMembers: 0 })).toThrow(/expectedMembers/);
    expect(() => new ShardMember({ ...base, expectedMembers: 1.5 })).toThrow(/expectedMembers/);
    expect(memberLeaseName('demo', 'a')).toBe('demo-a');
    const odd = memberLeaseName('demo', 'Host_1.example:9000');
    expect(odd).toMatch(/^demo-host-1-example-9000-[0-9a-f]{8}$/);
    expect(memberLeaseName('demo', 'host_1')).not.toBe(memberLeaseName('demo', 'host-1'));
    expect(memberLeaseName('demo', 'x'.repeat(200)).length).toBeLessThanOrEqual(63);
    expect(new ShardMember(base).timings).toEqual({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
  });
});
