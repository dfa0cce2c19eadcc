import { describe, expect, it } from 'vitest';
import { ManualClock, OptionsError, shardHash } from '@reconcile-loop/primitives';
import { FakeLeaderGate, httpGet, serveOnLoopback, settle } from '@reconcile-loop/test-support';
import { healthHandler, InProcessSource, ReconcileLoop, ShardMovedError } from '../src/index.js';
import { verdicts } from '../src/health.js';
import { expectationsOf } from '../src/loop.js';
import { DEFAULT_HEALTH_LIMITS } from '../src/options.js';
import { ALL, FakeShardGate, NONE } from './fake-shard-gate.js';

interface Obj {
  metadata: { uid: string; version: number };
}

type Behaviour = 'ok' | 'throw' | 'hang';

function harness(uids: string[], gate = new FakeShardGate(), reconcileTimeoutMs?: number) {
  const clock = new ManualClock();
  // The controller form: each object is its own parent (key = object key), uid = `u-<key>`.
  const source = new InProcessSource<Obj>(
    'objs',
    uids.map((k) => [k, { metadata: { uid: `u-${k}`, version: 1 } }]),
  );
  const starts: Array<{ key: string; admitted: boolean; parent: boolean }> = [];
  const behaviour = new Map<string, Behaviour>();
  const hanging = new Map<string, { finish: () => void; signal: AbortSignal }>();
  const loop = new ReconcileLoop<Obj, string>({
    source,
    keyMap: (_object, key) => key,
    shard: { gate, retryDelayMs: 1_000 },
    controller: { concurrency: 4, ...(reconcileTimeoutMs !== undefined && { reconcileTimeoutMs }) },
    retry: { backoff: { initialMs: 100_000, maxMs: 100_000 } },
    sources: { resyncPeriodMs: 0 },
    clock,
    reconcile: async (key, ctx) => {
      const uid = `u-${key}`;
      starts.push({ key, admitted: gate.admits(shardHash(uid)), parent: ctx.parent !== undefined });
      const how = behaviour.get(key) ?? 'ok';
      if (how === 'throw') throw new Error('reconcile failed');
      if (how === 'hang') {
        // Ends when finished by the test, or when aborted only if `abortable`.
        await new Promise<void>((resolve) => hanging.set(key, { finish: resolve, signal: ctx.signal }));
        hanging.delete(key);
        ctx.signal.throwIfAborted();
      }
    },
  });
  const keysStarted = (): string[] => starts.map((s) => s.key);
  return { clock, source, gate, loop, starts, behaviour, hanging, keysStarted };
}

describe('sharded dispatch behind a shard gate', () => {
  it('[loop: Refusal closes the context] a key turned away by the shard gate or by the leadership check leaves no reconcile context open: the expectations log stops recording', async () => {
    const clock = new ManualClock();
    const source = new InProcessSource<Obj>('objs', [
      ['a', { metadata: { uid: 'u-a', version: 1 } }],
      ['b', { metadata: { uid: 'u-b', version: 1 } }],
    ]);
    const gate = new FakeShardGate();
    const leader = new FakeLeaderGate();
    const started: string[] = [];
    const loop = new ReconcileLoop<Obj, string>({
      source,
      keyMap: (_object, key) => key,
      shard: { gate, retryDelayMs: 1_000 },
      leadership: { gate: leader },
      sources: { resyncPeriodMs: 0 },
      clock,
      reconcile: async (key) => void started.push(key),
    });
    const log = expectationsOf(loop)!;
    gate.admit('u-a');
    await loop.start();
    leader.grant();
    await settle();
    expect(started).toEqual(['a']);
    // b is in the ranges but not admitted: refused, asked again every second, refused again.
    for (let i = 0; i < 3; i++) {
      await clock.advanceAsync(1_000);
      await settle();
    }
    expect(gate.refusals).toBeGreaterThanOrEqual(4);
    expect(log.openContexts).toBe(0); // a's call settled; no refusal of b left a context open
    expect(log.recording).toBe(false);

    // The leadership check refuses: frozen past the deadline (isLeader() false, no callback yet).
    leader.freeze();
    source.upsert('a', { metadata: { uid: 'u-a', version: 2 } });
    await settle();
    expect(started).toEqual(['a']);
    expect(loop.health().leader).toBe(false); // the worker's check said no and ended the term
    expect(log.openContexts).toBe(0);
    expect(log.recording).toBe(false);
    await loop.stop();
  });

  it('[loop: Sharded admission] no reconcile runs for a hash the gate does not admit; a refused key in the ranges is asked again after the delay and runs once admitted', async () => {
    const h = harness(['a', 'b', 'c']);
    h.gate.admit('u-a');
    await h.loop.start();
    await settle();
    expect(h.keysStarted()).toEqual(['a']);
    // b and c are in the ranges (a handover still running): asked again every second, never run.
    for (let i = 0; i < 5; i++) {
      await h.clock.advanceAsync(1_000);
      await settle();
    }
    expect(h.keysStarted()).toEqual(['a']);
    expect(h.gate.refusals).toBeGreaterThanOrEqual(10);
    expect(h.loop.health().shard).toMatchObject({ keysOwned: 3, keysKnown: 3, waiting: 2, gate: { members: ['me'] } });

    h.gate.admit('u-b');
    await h.clock.advanceAsync(1_000);
    await settle();
    expect(h.keysStarted().sort()).toEqual(['a', 'b']);
    // Every reconcile started while the gate admitted its hash, with its parent cached.
    expect(h.starts.every((s) => s.admitted && s.parent)).toBe(true);
    expect(h.gate.enters).toBe(2);
    expect(h.gate.releases).toBe(2);
    await h.loop.stop();
    expect(h.gate.listeners).toBe(0);
    // Stopped: the waiting re-ask of c is cancelled, nothing runs after.
    h.gate.admit('u-c');
    await h.clock.advanceAsync(5_000);
    await settle();
    expect(h.keysStarted().sort()).toEqual(['a', 'b']);
  });

  it('[loop: Sharded admission] empty ranges hold and reconcile nothing; a ranges change that brings the keys in relists and runs them', async () => {
    const gate = new FakeShardGate();
    gate.ranges = NONE;
    const h = harness(['a', 'b'], gate);
    await h.loop.start();
    await settle();
    await h.clock.advanceAsync(10_000);
    await settle();
    expect(h.keysStarted()).toEqual([]);
    expect(h.loop.store.keys()).toEqual([]);
    expect(h.loop.health().shard).toMatchObject({ waiting: 0, keysOwned: 0 });

    gate.admit('u-a', 'u-b');
    gate.setRanges(ALL);
    await settle(10);
    expect(h.keysStarted().sort()).toEqual(['a', 'b']);
    await h.loop.stop();
  });

  it('[loop: Shard release on every settle] the release is called exactly once per admitted reconcile: success, throw, abort by stop, and a timeout (when the late call itself settles)', async () => {
    const h = harness(['ok', 'fails', 'stopped', 'slow'], new FakeShardGate(), 5_000);
    h.gate.admit('u-ok', 'u-fails', 'u-stopped', 'u-slow');
    h.behaviour.set('fails', 'throw');
    h.behaviour.set('stopped', 'hang');
    h.behaviour.set('slow', 'hang');
    await h.loop.start();
    await settle();
    expect(h.keysStarted().sort()).toEqual(['fails', 'ok', 'slow', 'stopped']);
    expect(h.gate.releases).toBe(2); // ok and fails settled
    expect(h.gate.running).toBe(2);

    // The timeout aborts the signal, but the call has not settled: the gate still counts it in flight.
    await h.clock.advanceAsync(5_000);
    await settle();
    expect(h.gate.running).toBe(2);
    h.hanging.get('slow')!.finish();
    await settle();
    expect(h.gate.running).toBe(1);

    // stop() aborts the last one; it settles by throwing its abort reason.
    const stopping = h.loop.stop();
    h.hanging.get('stopped')?.finish();
    await stopping;
    expect(h.gate.enters).toBe(4);
    expect(h.gate.releases).toBe(4);
    expect(h.gate.doubleReleases).toBe(0);
    expect(h.gate.running).toBe(0);
  });

  it('[loop: Shard abort on range loss] a ranges change that takes a running hash away aborts it with ShardMovedError: released, not counted failed, not retried; the kept hash runs on', async () => {
    const h = harness(['gone', 'kept']);
    h.gate.admit('u-gone', 'u-kept');
    h.behaviour.set('gone', 'hang');
    h.behaviour.set('kept', 'hang');
    await h.loop.start();
    await settle();
    const gone = h.hanging.get('gone')!;
    const kept = h.hanging.get('kept')!;
    // The view moves 'gone' to another replica: out of the ranges and no longer admitted.
    const keptHash = shardHash('u-kept');
    const range = { start: `0x${keptHash}`, end: `0x${(BigInt(`0x${keptHash}`) + 1n).toString(16).padStart(16, '0')}` };
    h.gate.revoke('u-gone');
    h.gate.setRanges([range]);
    expect(gone.signal.aborted).toBe(true);
    expect(gone.signal.reason).toBeInstanceOf(ShardMovedError);
    expect(kept.signal.aborted).toBe(false);
    gone.finish();
    await settle();
    expect(h.gate.inFlight.get(shardHash('u-gone'))).toBe(0);
    expect(h.loop.health().reconciles.failed).toBe(0);
    expect(h.loop.health().shard).toMatchObject({ aborted: 1, waiting: 0 });
    await h.clock.advanceAsync(10_000);
    await settle();
    expect(h.keysStarted().filter((k) => k === 'gone')).toHaveLength(1);
    kept.finish();
    await settle();
    expect(h.gate.releases).toBe(2);
    await h.loop.stop();
  });

  it('[loop: Shard abort on range loss] the gate losing its Lease aborts every running reconcile; their hashes are still in the ranges, so they are asked again and run once admitted', async () => {
    const h = harness(['a']);
    h.gate.admit('u-a');
    h.behaviour.set('a', 'hang');
    await h.loop.start();
    await settle();
    const first = h.hanging.get('a')!;
    h.gate.lose();
    expect(first.signal.reason).toBeInstanceOf(ShardMovedError);
    first.finish();
    await settle();
    h.behaviour.set('a', 'ok');
    await h.clock.advanceAsync(1_000);
    await settle();
    expect(h.keysStarted()).toEqual(['a']); // refused while the Lease is lost
    h.gate.admit('u-a');
    await h.clock.advanceAsync(1_000);
    await settle();
    expect(h.keysStarted()).toEqual(['a', 'a']);
    expect(h.gate.releases).toBe(2);
    await h.loop.stop();
  });

  it('[loop: Shard hash of a gone parent] a deleted parent is reconciled under the hash of the uid last seen for it; a key never seen with a parent is dropped, never reconciled', async () => {
    const h = harness(['a']);
    h.gate.admit('u-a');
    await h.loop.start();
    await settle();
    expect(h.keysStarted()).toEqual(['a']);
    h.source.delete('a');
    await settle();
    expect(h.starts).toEqual([
      { key: 'a', admitted: true, parent: true },
      { key: 'a', admitted: true, parent: false },
    ]);
    // Its hash was forgotten with the cleanup done and nothing cached: a later offer of it is dropped.
    h.loop.enqueue('a');
    h.loop.enqueue('never-seen');
    await settle();
    await h.clock.advanceAsync(5_000);
    await settle();
    expect(h.keysStarted()).toEqual(['a', 'a']);
    expect(h.loop.health().shard).toMatchObject({ keysKnown: 0, dropped: 2 });
    await h.loop.stop();
  });

  it('[loop: Shard options] shard needs a gate with onRangesChanged, admits, enter and ranges (onLost, status and ready functions when given); retryDelayMs is a positive duration (OptionsError)', () => {
    const base = { source: new InProcessSource<Obj>('objs'), keyMap: (_o: Obj, k: string) => k, reconcile: async () => {} };
    const make = (shard: unknown) => () => new ReconcileLoop<Obj, string>({ ...base, shard } as never);
    expect(make({})).toThrow(OptionsError);
    expect(make({ gate: { ...new FakeShardGate(), enter: undefined } })).toThrow(/shard\.gate\.onRangesChanged/);
    const { enter: _enter, ...noEnter } = Object.assign(Object.create(null), {
      ranges: [],
      onRangesChanged: () => () => {},
      admits: () => true,
      enter: undefined,
    });
    expect(make({ gate: noEnter })).toThrow(/shard\.gate\.enter must be a function/);
    expect(make({ gate: new FakeShardGate(), retryDelayMs: 0 })).toThrow(/shard\.retryDelayMs/);
    expect(make({ gate: new FakeShardGate(), other: 1 })).toThrow(/unknown option shard\.other/);
    expect(make({ gate: { ...noEnter, enter: () => undefined, onLost: 3 } })).toThrow(/shard\.gate\.onLost/);
    expect(make({ gate: { ...noEnter, enter: () => undefined, ready: true } })).toThrow(
      /shard\.gate\.ready must be a function when given/,
    );
    expect(make({ gate: { ...noEnter, enter: () => undefined, ready: () => ({ ok: true }) } })).not.toThrow();
    expect(make({ gate: new FakeShardGate() })).not.toThrow();
  });

  it('[loop: Shard readiness] verdicts: a gate whose ready() is not ok fails readiness with a `shard` check giving its reason; liveness is unchanged; no check without ready()', () => {
    const base = {
      state: 'running' as const,
      now: 0,
      inFlight: [],
      sources: [],
      error: undefined,
      limits: DEFAULT_HEALTH_LIMITS,
    };
    const reason = 'reads of ring cells failing for 16 s (8 failures): list leases: HTTP 403 Forbidden: leases is forbidden';
    const failing = verdicts({ ...base, shard: { ok: false, reason } });
    expect(failing.ready.ok).toBe(false);
    expect(failing.ready.checks.find((c) => c.name === 'shard')).toEqual({ name: 'shard', ok: false, reason });
    expect(failing.alive.ok).toBe(true);
    expect(failing.alive.checks.some((c) => c.name === 'shard')).toBe(false);
    expect(verdicts({ ...base, shard: { ok: false } }).ready.checks.find((c) => c.name === 'shard')?.reason).toBe(
      'the shard gate is not ready',
    );
    const passing = verdicts({ ...base, shard: { ok: true, reason: 'failing for 2 s' } });
    expect(passing.ready.ok).toBe(true);
    expect(passing.ready.checks.find((c) => c.name === 'shard')).toEqual({ name: 'shard', ok: true, reason: 'failing for 2 s' });
    const without = verdicts(base);
    expect(without.ready.ok).toBe(true);
    expect(without.ready.checks.map((c) => c.name)).toEqual(['started', 'reconcile']);
  });

  it('[loop: Shard readiness] a loop whose gate says not ready: health().ready fails on `shard`, /readyz answers 500 with the [-]shard line; ready again when the gate is; a gate without ready() has no such check', async () => {
    let answer: { ok: boolean; reason?: string } = { ok: true };
    const gate = Object.assign(new FakeShardGate(), { ready: () => answer });
    const h = harness(['a'], gate);
    h.gate.admit('u-a');
    await h.loop.start();
    await settle();
    const server = await serveOnLoopback(healthHandler(h.loop));
    try {
      expect(h.loop.health().ready.ok).toBe(true);
      expect(h.loop.health().ready.checks.find((c) => c.name === 'shard')).toMatchObject({ name: 'shard', ok: true });
      expect((await httpGet(`${server.url}/readyz`)).body).toBe('ok');

      const reason =
        'reads of ring cells failing for 16 s (8 failures): GET /apis/coordination.k8s.io/v1/namespaces/default/leases: HTTP 403 Forbidden';
      answer = { ok: false, reason };
      const health = h.loop.health();
      expect(health.ready.ok).toBe(false);
      expect(health.ready.checks.find((c) => c.name === 'shard')).toEqual({ name: 'shard', ok: false, reason });
      expect(health.alive.ok).toBe(true);
      let res = await httpGet(`${server.url}/readyz`);
      expect(res.status).toBe(500);
      expect(res.body).toBe(
        '[+]started ok\n[+]source:objs ok\n[+]reconcile ok\n[-]shard failed: reason withheld\nreadyz check failed\n',
      );
      res = await httpGet(`${server.url}/readyz?verbose`);
      expect(res.body).toContain(`[-]shard failed: ${reason}\n`);
      expect((await httpGet(`${server.url}/healthz`)).status).toBe(200);

      // A throwing ready() is not ready either.
      gate.ready = () => {
        throw new Error('broken gate');
      };
      expect(h.loop.health().ready.checks.find((c) => c.name === 'shard')).toEqual({
        name: 'shard',
        ok: false,
        reason: 'shard.gate.ready() threw: broken gate',
      });
      gate.ready = () => answer;
      answer = { ok: true };
      expect((await httpGet(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.close();
    }
    await h.loop.stop();

    // The same loop with a gate without ready(): no shard check, ready as before.
    const plain = harness(['a']);
    plain.gate.admit('u-a');
    await plain.loop.start();
    await settle();
    expect(plain.loop.health().ready.ok).toBe(true);
    expect(plain.loop.health().ready.checks.map((c) => c.name)).toEqual(['started', 'source:objs', 'reconcile']);
    await plain.loop.stop();
  });
});
