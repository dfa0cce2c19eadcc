/**
 * Two loops in one process, each behind a real `LeaderElector` of @reconcile-loop/leader-election
 * competing for one lock. The lock is in memory with the apiserver's optimistic concurrency (a write
 * carrying a stale version is refused), because the embedded apiserver does not serve Leases yet.
 */
import { describe, expect, it } from 'vitest';
import { LeaderElector, type LeaderElectionRecord, type ResourceLock } from '@reconcile-loop/leader-election';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop } from '../src/index.js';

interface Item {
  parent: string;
  version: number;
}

/** One Lease: a record and a version bumped by every write. */
class MemoryLease {
  record: LeaderElectionRecord | undefined;
  version = 0;
  lock(identity: string): ResourceLock {
    let seen = -1;
    const conflict = (): Error =>
      Object.assign(new Error('409 Conflict: the object has been modified'), { status: { code: 409, reason: 'Conflict' } });
    return {
      identity,
      describe: () => 'default/pool-tracker',
      get: async () => {
        seen = this.version;
        return this.record && { ...this.record };
      },
      create: async (record) => {
        if (this.record !== undefined)
          throw Object.assign(new Error('409 AlreadyExists'), { status: { code: 409, reason: 'AlreadyExists' } });
        this.record = { ...record };
        seen = ++this.version;
      },
      update: async (record) => {
        if (seen !== this.version) throw conflict();
        this.record = { ...record };
        seen = ++this.version;
      },
    };
  }
}

const PARENTS = ['p1', 'p2', 'p3'];
const TIMINGS = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

function cluster(options: { releaseOnCancel: boolean }) {
  const clock = new ManualClock();
  const lease = new MemoryLease();
  /** Every reconcile start: which replica, and which replicas' electors said leader at that instant. */
  const starts: Array<{ replica: string; key: string; leaders: string[] }> = [];
  const replicas = ['a', 'b'].map((name) => {
    const elector = new LeaderElector({
      lock: lease.lock(name),
      clock,
      random: () => 0,
      releaseOnCancel: options.releaseOnCancel,
      ...TIMINGS,
    });
    const source = new InProcessSource<Item>(
      'items',
      PARENTS.map((p, i) => [`o${i}`, { parent: p, version: 1 }]),
    );
    const loop = new ReconcileLoop<Item, string>({
      source,
      keyMap: (item) => item.parent,
      leadership: { gate: elector },
      clock,
      reconcile: (key, ctx) => {
        starts.push({ replica: name, key, leaders: replicas.filter((r) => r.elector.isLeader()).map((r) => r.name) });
        // A reconcile that takes 300 ms and honours its signal.
        return new Promise<void>((resolve, reject) => {
          const handle = clock.setTimeout(resolve, 300);
          ctx.signal.addEventListener('abort', () => (clock.clearTimeout(handle), reject(ctx.signal.reason)), { once: true });
        });
      },
    });
    const stopElector = new AbortController();
    return { name, elector, source, loop, stopElector, run: undefined as Promise<void> | undefined };
  });
  const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
  const upsert = (key: string, item: Item): void => {
    for (const r of replicas) r.source.upsert(key, item);
  };
  const advance = async (ms: number): Promise<void> => {
    for (let t = 0; t < ms; t += 100) {
      clock.advance(100);
      await settle(3);
    }
  };
  const keysOf = (replica: string, from = 0): string[] =>
    starts
      .slice(from)
      .filter((s) => s.replica === replica)
      .map((s) => s.key)
      .sort();
  return { clock, lease, starts, a, b, upsert, advance, keysOf };
}

describe('two loops behind real leader electors', () => {
  it('[loop: leader election integration] only the leader reconciles; killed, the standby takes over after the lease expires and re-drives every parent', async () => {
    const c = cluster({ releaseOnCancel: false });
    c.a.run = c.a.elector.run(c.a.stopElector.signal);
    await settle(5); // a creates the Lease first
    c.b.run = c.b.elector.run(c.b.stopElector.signal);
    await Promise.all([c.a.loop.start(), c.b.loop.start()]);
    await c.advance(2_000);
    expect(c.keysOf('a')).toEqual(PARENTS);
    expect(c.keysOf('b')).toEqual([]);
    expect(c.b.loop.health()).toMatchObject({ leader: false, synced: true, ready: { ok: true } });
    expect(c.a.loop.health().leader).toBe(true);

    c.upsert('o1', { parent: 'p2', version: 2 }); // a change reaches both caches; only the leader acts
    await c.advance(1_000);
    expect(c.keysOf('a')).toEqual([...PARENTS, 'p2'].sort());
    expect(c.keysOf('b')).toEqual([]);
    expect(c.b.loop.store.get('o1')?.version).toBe(2);

    // kill -9 of a: its elector and loop end without releasing the Lease.
    const before = c.starts.length;
    c.a.stopElector.abort();
    await c.a.loop.stop();
    await c.advance(1_000);
    expect(c.keysOf('b')).toEqual([]); // the lease has not expired yet: never two leaders
    await c.advance(4_000);
    expect(c.keysOf('b', before)).toEqual(PARENTS); // the new leader re-drove every parent once
    expect(c.b.loop.health().leader).toBe(true);
    expect(c.starts.every((s) => s.leaders.length === 1 && s.leaders[0] === s.replica)).toBe(true);

    c.b.stopElector.abort();
    await c.b.loop.stop();
    await Promise.all([c.a.run, c.b.run]);
  });

  it('[loop: leader election integration] a graceful hand-over: the old leader aborts its in-flight reconcile, stays synced as a standby, the Lease is released once it settled, and the new leader re-drives every parent', async () => {
    const c = cluster({ releaseOnCancel: true });
    c.a.run = c.a.elector.run(c.a.stopElector.signal);
    await settle(5);
    c.b.run = c.b.elector.run(c.b.stopElector.signal);
    await Promise.all([c.a.loop.start(), c.b.loop.start()]);
    await c.advance(2_000);
    c.upsert('o0', { parent: 'p1', version: 2 });
    await settle(3);
    expect(c.a.loop.health().inFlight.map((f) => f.parentKey)).toEqual(['p1']);

    const before = c.starts.length;
    c.a.stopElector.abort(); // graceful: term ends locally, in-flight reconcile aborted, then the release
    await settle(5);
    expect(c.a.loop.health()).toMatchObject({ leader: false, inFlight: [], reconciles: { failed: 0 }, ready: { ok: true } });
    expect(c.lease.record?.holderIdentity).toBe('');
    await c.advance(1_500); // about a retry period
    expect(c.b.loop.health().leader).toBe(true);
    await c.advance(1_000);
    expect(c.keysOf('b', before)).toEqual(PARENTS);
    expect(c.keysOf('a', before)).toEqual([]);
    expect(c.starts.every((s) => s.leaders.length === 1 && s.leaders[0] === s.replica)).toBe(true);

    c.b.stopElector.abort();
    await Promise.all([c.a.loop.stop(), c.b.loop.stop(), c.a.run, c.b.run]);
  });
});
