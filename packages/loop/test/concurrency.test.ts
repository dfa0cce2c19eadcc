import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop } from '../src/index.js';

interface Item {
  parent: string;
  version: number;
}

/** A loop over items grouped by `parent`, whose reconciles block until the test lets them finish. */
function blockingHarness(concurrency: number, initial: Array<[string, Item]>, queue?: { priority: boolean }) {
  const clock = new ManualClock();
  const source = new InProcessSource<Item>('items', initial);
  const running = new Map<string, () => void>();
  const overlaps: string[] = [];
  /** Per reconcile: the key and the versions of its members it saw when it started. */
  const started: Array<{ key: string; saw: Record<string, number> }> = [];
  const loop = new ReconcileLoop<Item, string>({
    source,
    keyMap: (item) => item.parent,
    controller: { concurrency },
    ...(queue !== undefined && { queue }),
    clock,
    reconcile: async (key, ctx) => {
      if (running.has(key)) overlaps.push(key);
      started.push({ key, saw: Object.fromEntries([...ctx.members].map(([k, i]) => [k, i.version])) });
      await new Promise<void>((resolve) => running.set(key, resolve));
      running.delete(key);
    },
  });
  const finish = (key: string): void => running.get(key)?.();
  const finishAll = async (): Promise<void> => {
    for (let round = 0; round < 1_000 && running.size > 0; round++) {
      for (const resolve of [...running.values()]) resolve();
      await settle(2);
    }
    expect(running.size).toBe(0);
  };
  return { clock, source, running, overlaps, started, loop, finish, finishAll };
}

describe('bounded concurrency with per-key exclusion', () => {
  it('[loop: MaxConcurrentReconciles] concurrency 4 runs four parents at once, never the same key twice; the default runs one', async () => {
    const initial = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'].map((p, i): [string, Item] => [`o${i}`, { parent: p, version: 0 }]);
    const four = blockingHarness(4, initial);
    await four.loop.start();
    await settle();
    expect([...four.running.keys()]).toEqual(['p1', 'p2', 'p3', 'p4']);
    expect(four.loop.health().inFlight).toHaveLength(4);
    expect(four.loop.health().concurrency).toBe(4);
    four.finish('p2');
    await settle();
    expect([...four.running.keys()].sort()).toEqual(['p1', 'p3', 'p4', 'p5']);
    await four.finishAll();
    expect(four.started.map((s) => s.key).sort()).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    await four.loop.stop();

    const one = blockingHarness(1, initial);
    await one.loop.start();
    await settle();
    expect([...one.running.keys()]).toEqual(['p1']);
    expect(one.loop.health().concurrency).toBe(1);
    await one.finishAll();
    await one.loop.stop();
  });

  it('[loop: MaxConcurrentReconciles] a key that changes while it is reconciled runs again right after, with the change, never alongside', async () => {
    const h = blockingHarness(4, [['o1', { parent: 'p1', version: 0 }]]);
    await h.loop.start();
    await settle();
    h.source.upsert('o1', { parent: 'p1', version: 1 });
    h.source.upsert('o1', { parent: 'p1', version: 2 });
    await settle();
    expect([...h.running.keys()]).toEqual(['p1']); // held: the change waits as dirty
    expect(h.started).toHaveLength(1);
    h.finish('p1');
    await settle();
    expect(h.started.map((s) => s.saw)).toEqual([{ o1: 0 }, { o1: 2 }]); // one more run, with the latest
    await h.finishAll();
    expect(h.overlaps).toEqual([]);
    await h.loop.stop();
  });

  it('[loop: MaxConcurrentReconciles] fairness: a hot key changing during every reconcile cannot starve the others', async () => {
    const initial: Array<[string, Item]> = [
      ['hot', { parent: 'hot', version: 0 }],
      ...['a', 'b', 'c'].map((p): [string, Item] => [p, { parent: p, version: 0 }]),
    ];
    // FIFO: every cold key ran within the first pass; the hot key waits its turn at the back each time.
    const fifo = blockingHarness(1, initial, { priority: false });
    await fifo.loop.start();
    await settle();
    for (let i = 1; i <= 8; i++) {
      fifo.source.upsert('hot', { parent: 'hot', version: i });
      await settle();
      for (const key of [...fifo.running.keys()]) fifo.finish(key);
      await settle();
    }
    const order = fifo.started.map((s) => s.key);
    expect(order.slice(0, 4)).toEqual(['hot', 'a', 'b', 'c']);
    expect(order.filter((k) => k === 'hot').length).toBeGreaterThan(2);
    await fifo.finishAll();
    await fifo.loop.stop();

    // Priority (the default): the listed keys are low and the hot key's changes normal, so the hot
    // key goes first — until the listed keys have waited queue.agingMs (10 s); then they take turns.
    const prioritized = blockingHarness(1, initial);
    await prioritized.loop.start();
    await settle();
    for (let i = 1; i <= 12; i++) {
      prioritized.source.upsert('hot', { parent: 'hot', version: i });
      await settle();
      for (const key of [...prioritized.running.keys()]) prioritized.finish(key);
      await settle();
      await prioritized.clock.advanceAsync(2_500);
    }
    const turns = prioritized.started.map((s) => s.key);
    expect(turns.slice(0, 4)).toEqual(['hot', 'hot', 'hot', 'hot']); // 0 to 7.5 s: younger than 10 s
    // Aged at 10 s: one hot turn, then one listed key, one hot, … (at most one hot between two listed keys).
    expect(turns.slice(4, 11)).toEqual(['hot', 'hot', 'a', 'hot', 'b', 'hot', 'c']);
    await prioritized.finishAll();
    await prioritized.loop.stop();
  });

  it('[loop: MaxConcurrentReconciles] property: never two workers on one key, and every change after a reconcile starts is seen by a later one', async () => {
    const parents = ['p0', 'p1', 'p2', 'p3', 'p4'];
    const objects = ['o0', 'o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7'];
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('change' as const),
        object: fc.constantFrom(...objects),
        parent: fc.constantFrom(...parents),
      }),
      fc.record({ kind: fc.constant('finish' as const), parent: fc.constantFrom(...parents) }),
      fc.record({ kind: fc.constant('delete' as const), object: fc.constantFrom(...objects) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 40 }), async (concurrency, steps) => {
        const h = blockingHarness(concurrency, [['o0', { parent: 'p0', version: 0 }]]);
        await h.loop.start();
        await settle(2);
        let version = 0;
        for (const s of steps) {
          if (s.kind === 'change') h.source.upsert(s.object, { parent: s.parent, version: ++version });
          else if (s.kind === 'delete') h.source.delete(s.object);
          else h.finish(s.parent);
          await settle(2);
          expect(h.running.size).toBeLessThanOrEqual(concurrency);
        }
        await h.finishAll();
        expect(h.overlaps).toEqual([]);
        // Quiescent: the last reconcile of every parent saw exactly its current members.
        const world = h.source.snapshot();
        for (const parent of parents) {
          const now = Object.fromEntries([...world].filter(([, i]) => i.parent === parent).map(([k, i]) => [k, i.version]));
          const last = h.started.filter((r) => r.key === parent).at(-1);
          if (last === undefined) expect(now).toEqual({});
          else expect(last.saw).toEqual(now);
        }
        await h.loop.stop();
      }),
      { numRuns: 60 },
    );
  });
});
