import { describe, expect, it } from 'vitest';
import { ManualClock, OptionsError } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop } from '../src/index.js';

interface Parent {
  v: number;
}

const PARENTS = 30;
const initial = (): Array<[string, Parent]> => Array.from({ length: PARENTS }, (_, i): [string, Parent] => [`p${i}`, { v: 0 }]);

/** One worker whose reconciles block until `finish`; records every start and every queue add with its priority. */
function harness(
  options: { priority?: boolean; debounce?: { delayMs: number; maxWaitMs: number }; resyncPeriodMs?: number } = {},
) {
  const clock = new ManualClock(0);
  const source = new InProcessSource<Parent>('parents', initial());
  const started: string[] = [];
  const adds: Array<[string, string]> = [];
  let release: (() => void) | undefined;
  const loop = new ReconcileLoop<Parent, string>({
    source,
    keyMap: (_, key) => key,
    clock,
    ...(options.priority !== undefined && { queue: { priority: options.priority } }),
    ...(options.debounce !== undefined && { debounce: options.debounce }),
    sources: { resyncPeriodMs: options.resyncPeriodMs ?? 0 },
    observer: { queue: { onAdd: ({ key, priority }) => adds.push([key, priority]) } },
    reconcile: async (key, ctx) => {
      started.push(key);
      await new Promise<void>((resolve) => {
        release = resolve;
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }); // stop() ends it
      });
    },
  });
  /** Lets the running reconcile finish and the next one start. */
  const finish = async (): Promise<void> => {
    const next = release;
    release = undefined;
    next?.();
    await settle();
  };
  return { clock, source, loop, started, adds, finish };
}

describe('priority queue in the loop', () => {
  it("[loop: priority queue] a change made during a cold start's backlog is reconciled next; with queue.priority false it waits behind the backlog", async () => {
    const prioritized = harness();
    await prioritized.loop.start();
    await settle();
    expect(prioritized.started).toEqual(['p0']);
    prioritized.source.upsert('p20', { v: 1 }); // a user's change while 29 listed parents wait
    await settle();
    await prioritized.finish();
    expect(prioritized.started).toEqual(['p0', 'p20']);
    const depth = prioritized.loop.health().queueDepth;
    expect(depth).toBe(PARENTS - 2);
    await prioritized.loop.stop({ graceMs: 0 });

    const fifo = harness({ priority: false });
    await fifo.loop.start();
    await settle();
    fifo.source.upsert('p20', { v: 1 }); // already queued: keeps its place in the one FIFO
    fifo.source.upsert('p25', { v: 1 });
    await settle();
    await fifo.finish();
    expect(fifo.started).toEqual(['p0', 'p1']);
    await fifo.loop.stop({ graceMs: 0 });
  });

  it('[loop: priority queue] listings, relists and resyncs queue at low priority; changes, deletes and enqueue() at normal', async () => {
    const h = harness({ resyncPeriodMs: 1_000 });
    await h.loop.start();
    await settle();
    expect(new Set(h.adds.map(([, priority]) => priority))).toEqual(new Set(['low'])); // the first listing
    expect(h.adds).toHaveLength(PARENTS);
    h.adds.length = 0;
    h.source.upsert('p40', { v: 1 });
    h.source.delete('p0'); // held by the running reconcile: a dirty add
    await settle();
    h.loop.enqueue('p41');
    expect(h.adds).toEqual([
      ['p40', 'normal'],
      ['p0', 'normal'],
      ['p41', 'normal'],
    ]);
    h.adds.length = 0;
    h.source.replace([['p50', { v: 0 }]]); // a relist: p50 appears, the rest are gone
    await settle();
    expect(h.adds.length).toBeGreaterThan(0);
    expect(h.adds.every(([, priority]) => priority === 'low')).toBe(true);
    // Drain, then let a resync re-drive every parent.
    for (let i = 0; i < 3 * PARENTS && h.loop.health().queueDepth + h.loop.health().inFlight.length > 0; i++) await h.finish();
    h.adds.length = 0;
    await h.clock.advanceAsync(1_000);
    await settle();
    expect(h.adds).toEqual([['p50', 'low']]);
    await h.loop.stop({ graceMs: 0 });
  });

  it('[loop: priority queue] a parent queued low by the listing and changed meanwhile is promoted, reconciled once', async () => {
    const h = harness();
    await h.loop.start();
    await settle();
    h.source.upsert('p5', { v: 1 });
    h.source.upsert('p5', { v: 2 });
    await settle();
    expect(h.loop.health().queueDepth).toBe(PARENTS - 1); // p0 runs; p5 is still one entry
    await h.finish();
    expect(h.started).toEqual(['p0', 'p5']);
    for (let i = 0; i < 2 * PARENTS && h.loop.health().queueDepth + h.loop.health().inFlight.length > 0; i++) await h.finish();
    expect(h.started.filter((k) => k === 'p5')).toHaveLength(1);
    expect(h.started).toHaveLength(PARENTS);
    await h.loop.stop({ graceMs: 0 });
  });

  it('[loop: options] queue takes priority (boolean) and agingMs (ms >= 0); debounce takes delayMs > 0 and maxWaitMs >= delayMs, also per secondary source', () => {
    const base = {
      source: new InProcessSource<Parent>('parents'),
      keyMap: (_: Parent, key: string) => key,
      reconcile: async () => {},
    };
    expect(() => new ReconcileLoop({ ...base, queue: { priority: 'yes' as unknown as boolean } })).toThrow(OptionsError);
    expect(() => new ReconcileLoop({ ...base, queue: { agingMs: -1 } })).toThrow(/queue\.agingMs/);
    expect(() => new ReconcileLoop({ ...base, queue: { maxWaitMs: 5 } as never })).toThrow(/unknown option queue\.maxWaitMs/);
    expect(() => new ReconcileLoop({ ...base, debounce: { delayMs: 0, maxWaitMs: 10 } })).toThrow(/debounce\.delayMs/);
    expect(() => new ReconcileLoop({ ...base, debounce: { delayMs: 100, maxWaitMs: 10 } })).toThrow(
      /debounce\.maxWaitMs \(10\) must be >= debounce\.delayMs/,
    );
    expect(
      () =>
        new ReconcileLoop({
          ...base,
          secondary: {
            pods: { source: new InProcessSource<Parent>('pods'), owner: { kind: 'Parent' }, debounce: { delayMs: 10 } as never },
          },
        }),
    ).toThrow(/secondary\.pods\.debounce\.maxWaitMs/);
    expect(
      () => new ReconcileLoop({ ...base, queue: { priority: false, agingMs: 0 }, debounce: { delayMs: 10, maxWaitMs: 10 } }),
    ).not.toThrow();
  });
});

describe('debounce in the loop', () => {
  it('[loop: debounce] a burst of changes to one parent is reconciled once, delayMs after its last event; the listing is not delayed', async () => {
    const h = harness({ debounce: { delayMs: 100, maxWaitMs: 1_000 } });
    await h.loop.start();
    await settle();
    expect(h.started).toEqual(['p0']); // the listing queued every parent at once
    for (let i = 0; i < 2 * PARENTS && h.loop.health().queueDepth + h.loop.health().inFlight.length > 0; i++) await h.finish();
    h.started.length = 0;
    h.adds.length = 0;
    for (const v of [1, 2, 3]) {
      h.source.upsert('p7', { v });
      await settle();
      await h.clock.advanceAsync(50);
    }
    expect(h.adds).toEqual([]); // 50 ms after the last event: still in its burst
    await h.clock.advanceAsync(50);
    await settle();
    expect(h.adds).toEqual([['p7', 'normal']]);
    expect(h.started).toEqual(['p7']);
    await h.loop.stop({ graceMs: 0 });
  });

  it('[loop: debounce] a parent whose objects never stop changing is still queued maxWaitMs after the first event of its burst', async () => {
    const h = harness({ debounce: { delayMs: 100, maxWaitMs: 300 } });
    await h.loop.start();
    await settle();
    for (let i = 0; i < 2 * PARENTS && h.loop.health().queueDepth + h.loop.health().inFlight.length > 0; i++) await h.finish();
    h.adds.length = 0;
    const addedAt: number[] = [];
    const first = h.clock.now();
    for (let v = 1; v <= 20; v++) {
      h.source.upsert('p3', { v }); // every 50 ms: the quiet time never comes
      await settle();
      await h.clock.advanceAsync(50);
      while (addedAt.length < h.adds.length) addedAt.push(h.clock.now());
      await h.finish(); // a reconcile that finishes at once, so every offer is a fresh add
    }
    // Offers at 300, 600 and 900 ms after the bursts' first events (a 50 ms step may land on one).
    expect(h.adds.length).toBeGreaterThanOrEqual(3);
    expect(addedAt[0]! - first).toBeLessThanOrEqual(300);
    for (const [i, at] of addedAt.entries()) if (i > 0) expect(at - addedAt[i - 1]!).toBeLessThanOrEqual(350);
    await h.loop.stop({ graceMs: 0 });
  });
});
