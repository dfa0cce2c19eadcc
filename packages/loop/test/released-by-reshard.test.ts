import { ObjectStore } from '@reconcile-loop/object-store';
import { ManualClock, silentLogger } from '@reconcile-loop/primitives';
import { FakeLeaderGate, recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { InProcessSource, ReconcileLoop } from '../src/index.js';
import { releasesOf } from '../src/loop.js';
import { Releases } from '../src/released.js';
import { ALL, FakeShardGate, NONE } from './fake-shard-gate.js';

interface Item {
  shard: 'a' | 'b';
}

function harness(fail = false) {
  const clock = new ManualClock();
  const gate = new FakeLeaderGate();
  const logger = recordingLogger();
  const source = new InProcessSource<Item>('sets', [
    ['a1', { shard: 'a' }],
    ['a2', { shard: 'a' }],
    ['b1', { shard: 'b' }],
    ['b2', { shard: 'b' }],
  ]);
  const calls: Array<{ key: string; present: boolean }> = [];
  const loop = new ReconcileLoop<Item, string>({
    source,
    keyMap: (_item, key) => key,
    clock,
    logger,
    retry: { backoff: { initialMs: 1_000, maxMs: 1_000 } },
    ...(fail ? {} : { leadership: { gate } }),
    reconcile: (key, ctx) => {
      calls.push({ key, present: ctx.store.get(key) !== undefined });
      if (fail && key === 'b1') throw new Error('transient');
    },
  });
  return { clock, gate, logger, source, calls, loop };
}

/**
 * One parent, `b1`, whose first failure parks it (a budget with no retries), reconciled by `body`;
 * started, with its first call taken. `calls` records each call and whether it saw its parent.
 */
async function parkingLoop(body: () => unknown, controller?: { reconcileTimeoutMs: number }) {
  const clock = new ManualClock();
  const source = new InProcessSource<Item>('sets', [['b1', { shard: 'b' }]]);
  const calls: Array<{ key: string; present: boolean }> = [];
  const loop = new ReconcileLoop<Item, string>({
    source,
    keyMap: (_item, key) => key,
    clock,
    ...(controller !== undefined && { controller }),
    retry: { budget: { delaysMs: [] } },
    reconcile: (key, ctx) => {
      calls.push({ key, present: ctx.store.get(key) !== undefined });
      return body() as Promise<void> | void;
    },
  });
  await loop.start();
  await ticks(clock, 10);
  return { clock, source, calls, loop, releases: releasesOf(loop)! };
}

/** Lets every pending callback run, advances the clock by `ms`, and lets those run too. */
async function ticks(clock: ManualClock, ms: number): Promise<void> {
  await settle();
  await clock.advanceAsync(ms);
  await settle();
}

describe('[loop: Released by a reshard] a release removes parents from the store without reconciling them as deleted', () => {
  it('released parents are dropped from the queue and never offered; a reconcile never sees a released parent as missing', async () => {
    const h = harness();
    await h.loop.start(); // a standby: the listing's four keys wait in the queue
    await settle();
    expect(h.loop.health().queueDepth).toBe(4);
    h.source.release((item) => item.shard === 'a');
    await settle();
    expect(h.loop.store.keys().sort()).toEqual(['a1', 'a2']);
    expect(h.loop.health().queueDepth).toBe(2);
    h.gate.grant();
    await settle();
    expect(h.calls.map((c) => c.key).sort()).toEqual(['a1', 'a2']);
    expect(h.calls.every((c) => c.present)).toBe(true);
    // Newly owned keys arrive as events; a returned parent is reconciled again.
    h.source.upsert('b1', { shard: 'b' });
    await settle();
    await h.clock.advanceAsync(10);
    await settle();
    expect(h.calls.filter((c) => c.key === 'b1' && c.present).length).toBeGreaterThan(0);
    expect(h.calls.every((c) => c.present)).toBe(true);
    await h.loop.stop();
  });

  it('keeps a released parent only while a copy of it may still come: reshards back and forth hold nothing once their copies are gone', async () => {
    const h = harness();
    await h.loop.start();
    h.gate.grant();
    await settle();
    await h.clock.advanceAsync(10);
    await settle();
    const releases = releasesOf(h.loop)!;
    for (let round = 0; round < 5; round++) {
      h.source.release((item) => item.shard === 'a'); // b1 and b2 move away
      await settle();
      // Nothing queued, running, scheduled or debounced for b1, b2: no copy can come, none is kept.
      expect(releases.held).toBe(0);
      h.source.upsert('b1', { shard: 'b' });
      h.source.upsert('b2', { shard: 'b' });
      await settle();
      await h.clock.advanceAsync(10);
      await settle();
    }
    expect(releases.total).toBe(10);
    expect(h.calls.every((c) => c.present)).toBe(true);
    await h.loop.stop();
  });

  it('keeps a parent released while its reconcile runs until that reconcile books its outcome; a retry it leaves is turned away', async () => {
    const clock = new ManualClock();
    const source = new InProcessSource<Item>('sets', [['b1', { shard: 'b' }]]);
    let finish: ((fail: boolean) => void) | undefined;
    const calls: string[] = [];
    const loop = new ReconcileLoop<Item, string>({
      source,
      keyMap: (_item, key) => key,
      clock,
      retry: { backoff: { initialMs: 1_000, maxMs: 1_000 } },
      reconcile: async (key) => {
        calls.push(key);
        const fail = await new Promise<boolean>((resolve) => (finish = resolve));
        if (fail) throw new Error('transient');
      },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(10);
    await settle();
    expect(calls).toEqual(['b1']);
    const releases = releasesOf(loop)!;
    source.release(() => false);
    await settle();
    expect(releases.held).toBe(1); // its outcome may still leave a retry
    finish!(true); // it does: a failure, retried in 1 s
    await settle();
    expect(releases.held).toBe(1);
    await clock.advanceAsync(5_000);
    await settle();
    expect(calls).toEqual(['b1']); // the retry was turned away, not reconciled as a deletion
    expect(releases.held).toBe(0);
    // A running reconcile that ends well leaves no copy: let go at once.
    source.upsert('b1', { shard: 'b' });
    await settle();
    await clock.advanceAsync(10);
    await settle();
    expect(calls).toEqual(['b1', 'b1']);
    source.release(() => false);
    await settle();
    expect(releases.held).toBe(1);
    finish!(false);
    await settle();
    expect(releases.held).toBe(0);
    await loop.stop();
  });

  it('a retry scheduled before the release is turned away when it comes due', async () => {
    const h = harness(true);
    await h.loop.start();
    await settle();
    await h.clock.advanceAsync(10);
    await settle();
    expect(h.calls.some((c) => c.key === 'b1')).toBe(true); // failed once: a retry is due in 1 s
    h.source.release((item) => item.shard === 'a');
    await settle();
    const before = h.calls.length;
    await h.clock.advanceAsync(5_000);
    await settle();
    expect(h.calls.slice(before).map((c) => c.key)).not.toContain('b1');
    expect(h.calls.every((c) => c.present)).toBe(true);
    await h.loop.stop();
  });

  it('a parent released as the queue lets its call go (the outcome already booked, a retry scheduled): the release forgets that retry, it never runs as a deletion', async () => {
    // The runner books a call's outcome before the queue marks its key done, so a release that lands
    // at the queue's onDone (a ranges change applied synchronously from the hook) finds the retry
    // already scheduled and forgets it with the rest of the parent's state. The gate still admits
    // the hash (admission and ranges are separate answers of a gate) and a keyMap secondary still
    // maps an object to b1 (so the admission still knows its hash): were the retry left, nothing
    // would stand between it and a reconcile that finds no parent. (Before, done came first and the
    // booking a microtask later: the release found nothing to forget, and the set had to keep b1
    // through that gap to turn the retry away.)
    const clock = new ManualClock();
    const gate = new FakeShardGate();
    gate.ranges = ALL;
    gate.admit('u-b1');
    const source = new InProcessSource<{ metadata: { uid: string } }>('sets', [['b1', { metadata: { uid: 'u-b1' } }]]);
    const configs = new InProcessSource<{ parent: string }>('configs', [['cfg-b1', { parent: 'b1' }]]);
    const calls: Array<{ key: string; present: boolean }> = [];
    let reshardAtDone = true;
    const loop = new ReconcileLoop<{ metadata: { uid: string } }, string, { configs: { parent: string } }>({
      source,
      keyMap: (_object, key) => key,
      secondary: { configs: { source: configs, keyMap: (config) => config.parent } },
      shard: { gate },
      sources: { resyncPeriodMs: 0 },
      clock,
      retry: { backoff: { initialMs: 1_000, maxMs: 1_000 } },
      observer: {
        queue: {
          onDone: ({ key }) => {
            if (!reshardAtDone || key !== 'b1') return;
            reshardAtDone = false;
            gate.setRanges(NONE);
          },
        },
      },
      reconcile: (key, ctx) => {
        calls.push({ key, present: ctx.parent !== undefined });
        throw new Error('transient');
      },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(10);
    await settle();
    const releases = releasesOf(loop)!;
    expect(calls).toEqual([{ key: 'b1', present: true }]);
    expect(loop.store.keys()).toEqual([]); // released at the call's done
    expect(loop.health().reconciles.failed).toBe(1); // booked before it
    expect(loop.health().retriesPending).toBe(0); // and its retry forgotten by the release
    expect(releases.held).toBe(0); // no copy left: nothing kept
    await clock.advanceAsync(5_000);
    await settle();
    expect(calls).toEqual([{ key: 'b1', present: true }]); // nothing ran b1 as deleted
    await loop.stop();
  });

  it('keeps a parked parent it released while parked: a release() by hand is turned away, not run as a deletion', async () => {
    const { clock, source, calls, loop, releases } = await parkingLoop(() => {
      throw new Error('bad');
    });
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']);
    source.release(() => false);
    await settle();
    // A park is a copy that release() or a new leadership term queues again: kept for it.
    expect(releases.held).toBe(1);
    expect(loop.release('b1')).toBe(true);
    await ticks(clock, 10);
    expect(calls).toEqual([{ key: 'b1', present: true }]);
    expect(releases.held).toBe(0);
    expect(loop.parked()).toEqual([]);
    await loop.stop();
  });

  it('a copy turned away while the parent is still parked does not let it go: the park can still bring another', async () => {
    let fail!: () => void;
    const { clock, source, calls, loop, releases } = await parkingLoop(
      () => new Promise<void>((_, reject) => (fail = () => reject(new Error('bad')))),
    );
    loop.enqueue('b1'); // while held: dirty, queued again when the call settles
    source.release(() => false);
    await settle();
    fail(); // parks b1; its dirty copy reaches a worker and is turned away
    await settle();
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']);
    expect(releases.held).toBe(1);
    expect(loop.release('b1')).toBe(true);
    await ticks(clock, 10);
    expect(calls).toEqual([{ key: 'b1', present: true }]);
    expect(releases.held).toBe(0);
    await loop.stop();
  });

  it('keeps a parent released during a reconcile that timed out until the call itself settles, and lets it go then when nothing is owed', async () => {
    const clock = new ManualClock();
    const gate = new FakeLeaderGate();
    const source = new InProcessSource<Item>('sets', [['b1', { shard: 'b' }]]);
    let finish!: () => void;
    const loop = new ReconcileLoop<Item, string>({
      source,
      keyMap: (_item, key) => key,
      clock,
      leadership: { gate },
      controller: { reconcileTimeoutMs: 100 },
      // Ignores its signal: the call outlives its timeout.
      reconcile: () => new Promise<void>((resolve) => (finish = resolve)),
    });
    await loop.start();
    gate.grant();
    await settle();
    await clock.advanceAsync(10);
    await settle();
    const releases = releasesOf(loop)!;
    source.release(() => false);
    await settle();
    gate.revoke(); // the term ends: the timeout that follows books nothing (no retry, no park)
    await settle();
    await clock.advanceAsync(200);
    await settle();
    // Booked, but the call still runs and holds its key: the set keeps it as long as the runner does.
    expect(loop.health().inFlight).toMatchObject([{ parentKey: 'b1', timedOut: true }]);
    expect(releases.held).toBe(1);
    finish();
    await settle();
    expect(loop.health().inFlight).toEqual([]);
    expect(releases.held).toBe(0);
    await loop.stop();
  });

  it('a timed-out, parked, released parent is kept while its call hangs, then while it is parked; a release() by hand is turned away', async () => {
    let finish!: () => void;
    // The timeout is the first failure: it parks.
    const { clock, source, calls, loop, releases } = await parkingLoop(() => new Promise<void>((resolve) => (finish = resolve)), {
      reconcileTimeoutMs: 100,
    });
    source.release(() => false);
    await ticks(clock, 200);
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']);
    expect(loop.health().inFlight).toMatchObject([{ parentKey: 'b1', timedOut: true }]);
    expect(releases.held).toBe(1); // bounded by the hung call: one entry, as long as the runner records it
    finish();
    await settle();
    expect(loop.health().inFlight).toEqual([]);
    expect(releases.held).toBe(1); // then by the park
    expect(loop.release('b1')).toBe(true);
    await ticks(clock, 10);
    expect(calls).toEqual([{ key: 'b1', present: true }]);
    expect(releases.held).toBe(0);
    await loop.stop();
  });
});

describe('[loop: Released by a reshard] the end of a reconcile', () => {
  it('a parent released while its reconcile held it is kept until that reconcile ends, then let go unless it left a copy (a retry)', () => {
    let held = true;
    let retryAt: number | undefined;
    const releases = new Releases<Item, string>({
      primary: new ObjectStore<Item, string>({ keyMap: (_item, key) => key }),
      gate: { dropQueued: () => 0 },
      queue: { has: () => false, isProcessing: () => held, isDirty: () => false },
      scheduler: { forget: () => {}, deadline: () => retryAt, isParked: () => false } as never,
      expectations: { forget: () => {}, satisfied: () => true } as never,
      debouncers: [],
      logger: silentLogger,
    });
    releases.release(new Set(['b1', 'b2']), 'sets');
    expect(releases.held).toBe(2); // both held by a worker
    // b1's reconcile failed: its retry is booked before the queue lets it go.
    retryAt = 1_000;
    held = false;
    releases.settled('b1');
    expect(releases.held).toBe(2); // the retry is a copy: kept, to be turned away when it comes
    retryAt = undefined;
    releases.settled('b2');
    expect(releases.held).toBe(1); // b2 left nothing: let go
    releases.settled('other'); // never released: nothing to do
    expect(releases.held).toBe(1);
  });
});
