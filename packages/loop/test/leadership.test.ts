import { OptionsError } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { FakeLeaderGate, settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop, type LeaderGate } from '../src/index.js';

interface Item {
  parent: string;
  version: number;
}

function harness(items: Array<[string, Item]>, gate = new FakeLeaderGate(), concurrency = 2) {
  const clock = new ManualClock();
  const source = new InProcessSource<Item>('items', items);
  /** Per reconcile start: the key, and whether the gate said leader at that instant. */
  const starts: Array<{ key: string; leader: boolean; saw: number }> = [];
  const running = new Map<string, { resolve: () => void; signal: AbortSignal }>();
  const loop = new ReconcileLoop<Item, string>({
    source,
    keyMap: (item) => item.parent,
    leadership: { gate },
    controller: { concurrency },
    clock,

    reconcile: async (key, ctx) => {
      starts.push({ key, leader: gate.isLeader(), saw: Math.max(0, ...[...ctx.members.values()].map((i) => i.version)) });
      await new Promise<void>((resolve) => {
        running.set(key, { resolve, signal: ctx.signal });
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      running.delete(key);
      ctx.signal.throwIfAborted();
    },
  });
  const finishAll = async (): Promise<void> => {
    for (let round = 0; round < 100 && running.size > 0; round++) {
      for (const r of [...running.values()]) r.resolve();
      await settle(3);
    }
  };
  return { clock, source, gate, starts, running, loop, finishAll };
}

const items = (parents: string[]): Array<[string, Item]> => parents.map((p, i) => [`o${i}`, { parent: p, version: 1 }]);

describe('warm standby behind a leader gate', () => {
  it('[loop: warm standby] a standby syncs and keeps its cache current, reconciles nothing, is ready; a term reconciles every parent', async () => {
    const h = harness(items(['a', 'b', 'c']));
    await h.loop.start(); // resolves as a standby: synced, not leading
    await settle();
    expect(h.loop.synced).toBe(true);
    h.source.upsert('o9', { parent: 'd', version: 1 });
    await settle();
    expect(h.loop.store.members('d').size).toBe(1);
    expect(h.starts).toEqual([]);
    const health = h.loop.health();
    expect(health.leader).toBe(false);
    expect(health.ready.ok).toBe(true);
    expect(health.ready.checks.find((c) => c.name === 'leader')).toMatchObject({
      ok: true,
      reason: expect.stringContaining('standby'),
    });

    h.gate.grant();
    await settle();
    await h.finishAll();
    expect(h.starts.map((s) => s.key).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(h.starts.every((s) => s.leader)).toBe(true);
    expect(h.loop.health().leader).toBe(true);
    await h.loop.stop();
    expect(h.gate.listeners).toBe(0);
  });

  it('[loop: gate check before each reconcile] a frozen ex-leader (isLeader() false, no callback yet) starts no reconcile; the key is put back; in-flight ones abort and keep their key until they settle', async () => {
    const h = harness(items(['a']));
    await h.loop.start();
    h.gate.grant();
    await settle();
    expect(h.starts.map((s) => s.key)).toEqual(['a']);
    const inFlight = h.running.get('a')!;

    h.gate.freeze(); // the clock passed the renew deadline; no timer, no onLost has run
    h.source.upsert('o1', { parent: 'b', version: 2 });
    h.source.upsert('o0', { parent: 'a', version: 3 });
    await settle();
    expect(h.starts.map((s) => s.key)).toEqual(['a']); // b was dequeued, the check said no
    expect(inFlight.signal.aborted).toBe(true); // the worker's check ended the term locally
    expect((inFlight.signal.reason as { code?: string }).code).toBe('RL_LOOP_LEADERSHIP_ENDED');
    expect(h.loop.health().leader).toBe(false);
    expect(h.loop.health().reconciles.failed).toBe(0); // aborted by the term's end: not a failure

    h.gate.revoke(); // the callbacks finally run: nothing changes
    await settle();
    expect(h.starts).toHaveLength(1);
    expect(h.loop.health().queueDepth).toBe(2); // both keys kept for the next term

    h.gate.grant();
    await settle();
    await h.finishAll();
    expect(
      h.starts
        .slice(1)
        .map((s) => `${s.key}@${s.saw}`)
        .sort(),
    ).toEqual(['a@3', 'b@2']);
    expect(h.starts.every((s) => s.leader)).toBe(true);
    await h.loop.stop();
  });

  it('[loop: re-drive on a new term] a lost term aborts in-flight reconciles and is not retried; the next term reconciles every parent once', async () => {
    const h = harness(items(['a', 'b', 'c']));
    await h.loop.start();
    h.gate.grant();
    await settle();
    await h.finishAll();
    expect(h.starts).toHaveLength(3);
    h.source.upsert('o0', { parent: 'a', version: 2 });
    await settle();
    expect(h.running.has('a')).toBe(true);
    h.gate.revoke();
    await settle();
    expect(h.running.size).toBe(0);
    expect(h.loop.health()).toMatchObject({ leader: false, retriesPending: 0, queueDepth: 0, reconciles: { failed: 0 } });
    await h.clock.advance(60_000);
    await settle();
    expect(h.starts).toHaveLength(4);
    expect(h.gate.tracked).toHaveLength(4); // each reconcile was handed to the gate (release waits for it)

    h.gate.grant();
    await settle();
    await h.finishAll();
    expect(
      h.starts
        .slice(4)
        .map((s) => s.key)
        .sort(),
    ).toEqual(['a', 'b', 'c']);
    await h.loop.stop();
  });

  it('[loop: warm standby] stop() ends a standby waiting for leadership, and a leader mid-term; a bad gate is an options error', async () => {
    const standby = harness(items(['a']));
    await standby.loop.start();
    expect(await standby.loop.stop()).toEqual({ abandoned: [], abandonedSources: [] });
    expect(standby.loop.state).toBe('stopped');

    const leader = harness(items(['a']));
    await leader.loop.start();
    leader.gate.grant();
    await settle();
    expect(leader.running.size).toBe(1);
    expect(await leader.loop.stop()).toEqual({ abandoned: [], abandonedSources: [] });
    expect(leader.gate.listeners).toBe(0);

    expect(
      () =>
        new ReconcileLoop<Item, string>({
          source: new InProcessSource('x'),
          keyMap: () => 'p',
          reconcile: () => undefined,
          leadership: { gate: { isLeader: () => true } as never },
        }),
    ).toThrow(OptionsError);
  });

  it('[loop: warm standby] a gate whose wait rejects is logged and asked again after a delay, not in a busy loop', async () => {
    let calls = 0;
    const gate: LeaderGate = {
      isLeader: () => false,
      waitForLeadership: () => (calls++, Promise.reject(new Error('elector stopped'))),
      onLost: () => () => {},
    };
    const clock = new ManualClock();
    const loop = new ReconcileLoop<Item, string>({
      source: new InProcessSource<Item>('items', items(['a'])),
      keyMap: (i) => i.parent,
      reconcile: () => undefined,
      leadership: { gate },
      clock,
    });
    await loop.start();
    await settle();
    expect(calls).toBe(1);
    await clock.advance(1_000);
    await settle();
    expect(calls).toBe(2);
    await clock.advance(1_000); // the delay doubled
    await settle();
    expect(calls).toBe(2);
    await loop.stop();
  });

  it('[loop: gate check before each reconcile] property: no reconcile starts while isLeader() is false, and after a final term every parent is reconciled at its latest version', async () => {
    const op = fc.oneof(
      fc.constant({ t: 'grant' as const }),
      fc.constant({ t: 'freeze' as const }),
      fc.constant({ t: 'revoke' as const }),
      fc.constant({ t: 'finish' as const }),
      fc.record({
        t: fc.constant('event' as const),
        parent: fc.constantFrom('a', 'b', 'c'),
        obj: fc.integer({ min: 0, max: 3 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
        const h = harness(items(['a', 'b']));
        await h.loop.start();
        let version = 1;
        const latest = new Map<string, number>([
          ['a', 1],
          ['b', 1],
        ]);
        for (const o of ops) {
          if (o.t === 'grant') h.gate.grant();
          else if (o.t === 'freeze') h.gate.freeze();
          else if (o.t === 'revoke') h.gate.revoke();
          else if (o.t === 'finish') for (const r of [...h.running.values()]) r.resolve();
          else {
            version += 1;
            const previous = h.loop.store.get(`o${o.obj}`)?.parent;
            h.source.upsert(`o${o.obj}`, { parent: o.parent, version });
            latest.set(o.parent, version);
            if (previous !== undefined && previous !== o.parent) latest.set(previous, version);
          }
          await settle(3);
        }
        expect(h.starts.filter((s) => !s.leader)).toEqual([]);
        h.gate.revoke();
        await settle(3);
        h.gate.grant();
        await settle(3);
        await h.finishAll();
        // Level-triggered: the last reconcile of every parent still holding members saw at least its latest event.
        for (const [parent, v] of latest) {
          if (h.loop.store.members(parent).size === 0) continue;
          const last = h.starts.filter((s) => s.key === parent).at(-1);
          expect(last?.saw ?? -1).toBeGreaterThanOrEqual(
            Math.min(v, Math.max(...[...h.loop.store.members(parent).values()].map((i) => i.version))),
          );
        }
        await h.loop.stop();
      }),
      { numRuns: 60 },
    );
  });
});

describe('dead-letter state per leadership term', () => {
  it('[loop: Dead-letter per term] a replica that regains leadership releases its old parks and re-derives them: a key fixed meanwhile reconciles', async () => {
    const gate = new FakeLeaderGate();
    const clock = new ManualClock();
    const source = new InProcessSource<Item>('items', items(['a', 'b']));
    let broken = true;
    const runs: string[] = [];
    const loop = new ReconcileLoop<Item, string>({
      source,
      keyMap: (item) => item.parent,
      leadership: { gate },
      clock,
      retry: { budget: { delaysMs: [0] } },
      reconcile: (key) => {
        runs.push(key);
        if (key === 'a' && broken) throw new Error('a dependency outside the cluster is down');
      },
    });
    await loop.start();
    gate.grant();
    await settle();
    await clock.advanceAsync(0);
    expect(loop.parked().map((p) => p.key)).toEqual(['a']);
    gate.revoke(); // another replica leads; the dependency comes back meanwhile
    await settle();
    broken = false;
    runs.length = 0;
    gate.grant(); // this replica leads again: its old park is not a verdict for this term
    await settle();
    expect(runs.sort()).toEqual(['a', 'b']);
    expect(loop.parked()).toEqual([]);
    expect(loop.health().reconciles).toMatchObject({ released: 1 });
    await loop.stop();
  });
});
