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

  it('keeps a parent released while its reconcile runs until that reconcile ends; the retry its failure booked is dropped then, so nothing is kept and nothing runs it as deleted', async () => {
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
    expect(releases.held).toBe(1); // held by its worker: its outcome is not booked yet
    finish!(true); // a failure: booked as a retry in 1 s, then dropped as the call ends
    await settle();
    expect(loop.health().reconciles.failed).toBe(1);
    expect(loop.health().retriesPending).toBe(0);
    expect(releases.held).toBe(0);
    await clock.advanceAsync(5_000);
    await settle();
    expect(calls).toEqual(['b1']); // no retry came, and nothing reconciled b1 as a deletion
    // A running reconcile that ends well leaves no copy either: let go at once.
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

  it("a parked parent it releases leaves parked() with it: the park was this replica's verdict on a parent it no longer owns; release() by hand finds nothing, and the parent coming back gets a whole budget", async () => {
    const { clock, source, calls, loop, releases } = await parkingLoop(() => {
      throw new Error('bad');
    });
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']);
    source.release(() => false);
    await settle();
    expect(loop.parked()).toEqual([]);
    expect(loop.health().parked).toBe(0); // the dead-letter gauge of a replica that cannot act on it
    expect(releases.held).toBe(0); // no copy left to turn away
    expect(loop.release('b1')).toBe(false);
    // Back on this replica, unchanged: tried again (and parked again after its budget), not left parked.
    source.upsert('b1', { shard: 'b' });
    await ticks(clock, 10);
    expect(calls).toEqual([
      { key: 'b1', present: true },
      { key: 'b1', present: true },
    ]);
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']);
    await loop.stop();
  });
  it('a parent released while its call runs, which then parks it: the park is dropped as the call ends and its dirty copy is turned away', async () => {
    let fail!: () => void;
    const { clock, source, calls, loop, releases } = await parkingLoop(
      () => new Promise<void>((_, reject) => (fail = () => reject(new Error('bad')))),
    );
    loop.enqueue('b1'); // while held: dirty, queued again when the call ends
    source.release(() => false);
    await settle();
    fail(); // booked as a park; dropped as the call ends; the dirty copy reaches a worker and is turned away
    await ticks(clock, 10);
    expect(loop.parked()).toEqual([]);
    expect(releases.held).toBe(0);
    expect(loop.release('b1')).toBe(false);
    expect(calls).toEqual([{ key: 'b1', present: true }]);
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

  it('a timed-out, parked, released parent is kept while its call hangs (the park its timeout booked with it), then let go with that park dropped once the call settles', async () => {
    let finish!: () => void;
    // The timeout is the first failure: it parks.
    const { clock, source, calls, loop, releases } = await parkingLoop(() => new Promise<void>((resolve) => (finish = resolve)), {
      reconcileTimeoutMs: 100,
    });
    source.release(() => false);
    await ticks(clock, 200);
    expect(loop.health().inFlight).toMatchObject([{ parentKey: 'b1', timedOut: true }]);
    expect(loop.parked().map((p) => p.key)).toEqual(['b1']); // booked at the timeout, while the call still holds its key
    expect(releases.held).toBe(1); // bounded by the hung call: one entry, as long as the runner records it
    finish();
    await settle();
    expect(loop.health().inFlight).toEqual([]);
    expect(loop.parked()).toEqual([]);
    expect(releases.held).toBe(0);
    expect(loop.release('b1')).toBe(false);
    await ticks(clock, 10);
    expect(calls).toEqual([{ key: 'b1', present: true }]);
    await loop.stop();
  });
});

describe('[loop: Released by a reshard] the end of a reconcile', () => {
  it('a parent released while its reconcile held it is kept until that reconcile ends, then its booked retry is dropped and it is let go unless a copy is left (a dirty re-add)', () => {
    let held = true;
    let dirty = false;
    const retries = new Set<string>();
    const releases = new Releases<Item, string>({
      primary: new ObjectStore<Item, string>({ keyMap: (_item, key) => key }),
      gate: { dropQueued: () => 0 },
      queue: { has: (key) => dirty && key === 'b1', isProcessing: () => held, isDirty: () => false },
      scheduler: {
        drop: (key: string) => retries.delete(key),
        deadline: (key: string) => (retries.has(key) ? 1_000 : undefined),
        isParked: () => false,
      } as never,
      expectations: { forget: () => {}, satisfied: () => true } as never,
      debouncers: [],
      logger: silentLogger,
    });
    releases.release(new Set(['b1', 'b2']), 'sets');
    expect(releases.held).toBe(2); // both held by a worker
    // Both calls failed: each booked a retry before the queue let its key go; b1 was re-added meanwhile.
    retries.add('b1').add('b2');
    held = false;
    dirty = true;
    releases.settled('b1');
    releases.settled('b2');
    expect([...retries]).toEqual([]); // what a released parent's call booked is dropped
    expect(releases.held).toBe(1); // b1's dirty copy is queued: kept, to be turned away when it comes
    releases.settled('other'); // never released: nothing to do
    expect(releases.held).toBe(1);
  });
});
