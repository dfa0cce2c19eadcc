/** One upstream stream fanned out to several loops (in-process: a ControlledSource stands for the reflector). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, ReconcileLoop, deleteEvent, replaceEvent, upsertEvent, type SourceEvent } from '@reconcile-loop/loop';
import { ControlledSource, settle } from '@reconcile-loop/test-support';
import { shareSource } from '../src/index.js';

interface Cell {
  pool: string;
  team: string;
}
const cell = (pool: string, team: string): Cell => ({ pool, team });

describe('[manager: Shared source] one upstream stream for every loop over the same kind and selector', () => {
  it('two loops open the upstream once; each store holds the upstream world under its own key map; the last close aborts it', async () => {
    const upstream = new ControlledSource<Cell>();
    const shared = shareSource(upstream);
    const byPool = new ReconcileLoop<Cell, string>({
      source: shared.subscribe('cells'),
      keyMap: (c) => c.pool,
      reconcile: () => {},
      clock: new ManualClock(),
    });
    const byTeam = new ReconcileLoop<Cell, string>({
      source: shared.subscribe('cells'),
      keyMap: (c) => c.team,
      reconcile: () => {},
      clock: new ManualClock(),
    });
    const starting = Promise.all([byPool.start(), byTeam.start()]);
    await settle();
    expect(upstream.streams).toHaveLength(1);
    expect(shared.subscribers).toBe(2);
    upstream.last.push(
      replaceEvent([
        ['a', cell('engines', 'red')],
        ['b', cell('trainers', 'red')],
      ]),
    );
    await starting;
    upstream.last.push(upsertEvent('c', cell('engines', 'blue')), deleteEvent('b'));
    await settle();
    expect([...byPool.store.members('engines').keys()]).toEqual(['a', 'c']);
    expect(byPool.store.members('trainers').size).toBe(0);
    expect([...byTeam.store.members('red').keys()]).toEqual(['a']);
    // The same object, not a copy: one object per key for every loop.
    expect(byPool.store.get('c')).toBe(byTeam.store.get('c'));
    await byPool.stop();
    expect(upstream.last.signal.aborted).toBe(false); // one reader left
    await byTeam.stop();
    expect(upstream.last.signal.aborted).toBe(true);
    await shared.closed();
    expect(shared.upstreamOpens).toBe(1);
  });

  it('a loop started after the listing begins from the world as it is (a replace of the same objects), then the live events', async () => {
    const upstream = new ControlledSource<Cell>();
    const shared = shareSource(upstream);
    const first = new ReconcileLoop<Cell, string>({ source: shared.subscribe(), keyMap: (c) => c.pool, reconcile: () => {} });
    const starting = first.start();
    await settle();
    upstream.last.push(replaceEvent([['a', cell('engines', 'red')]]), upsertEvent('b', cell('engines', 'blue')));
    await starting;
    await settle();
    const late = new ReconcileLoop<Cell, string>({ source: shared.subscribe(), keyMap: (c) => c.team, reconcile: () => {} });
    await late.start(); // synced from the kept world: no second upstream open, no waiting for one
    expect(upstream.streams).toHaveLength(1);
    expect([...late.store.keys()].sort()).toEqual(['a', 'b']);
    upstream.last.push(deleteEvent('a'));
    await settle();
    expect([...late.store.keys()]).toEqual(['b']);
    expect([...first.store.keys()]).toEqual(['b']);
    await Promise.all([first.stop(), late.stop()]);
  });

  it('an upstream failure fails every subscriber stream alike; their reopens open the upstream once more', async () => {
    const upstream = new ControlledSource<Cell>({ retry: { initialMs: 10, maxMs: 10 } });
    const shared = shareSource(upstream);
    const clock = new ManualClock();
    const loops = ['x', 'y'].map(
      (name) =>
        new ReconcileLoop<Cell, string>({ source: shared.subscribe(name), keyMap: (c) => c.pool, reconcile: () => {}, clock }),
    );
    const starting = Promise.all(loops.map((l) => l.start()));
    await settle();
    upstream.last.push(replaceEvent([['a', cell('engines', 'red')]]));
    await starting;
    upstream.last.fail(new Error('watch dropped'));
    await settle();
    expect(shared.subscribers).toBe(0);
    await clock.advanceAsync(10); // both drivers reopen after the source's retry delay
    await settle();
    expect(upstream.streams).toHaveLength(2);
    expect(shared.upstreamOpens).toBe(2);
    upstream.last.push(replaceEvent([['b', cell('trainers', 'red')]]));
    await settle();
    for (const loop of loops) expect([...loop.store.keys()]).toEqual(['b']);
    const permanent = Object.assign(new Error('first LIST rejected'), { permanent: true as const });
    upstream.last.fail(permanent);
    await settle();
    for (const loop of loops) expect(loop.health().error).toBe(permanent);
    await Promise.all(loops.map((l) => l.stop()));
  });

  it('property: after any upstream events and any subscriber joins and leaves, every open subscriber holds exactly the upstream world', async () => {
    type Op =
      | { op: 'upsert'; key: number; value: number }
      | { op: 'delete'; key: number }
      | { op: 'replace'; keys: number[]; keep: number[] }
      | { op: 'join' }
      | { op: 'leave'; which: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        op: fc.constant('upsert' as const),
        key: fc.integer({ min: 0, max: 5 }),
        value: fc.integer({ min: 0, max: 9 }),
      }),
      fc.record({ op: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 5 }) }),
      fc.record({
        op: fc.constant('replace' as const),
        keys: fc.uniqueArray(fc.integer({ min: 0, max: 5 })),
        keep: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { maxLength: 2 }),
      }),
      fc.record({ op: fc.constant('join' as const) }),
      fc.record({ op: fc.constant('leave' as const), which: fc.nat() }),
    );
    /** A store as the object store applies events (replace honours `keep`). */
    const applyTo = (world: Map<string, number>, event: SourceEvent<number>): void => {
      if (event.type === 'upsert') world.set(event.key, event.object);
      else if (event.type === 'delete') world.delete(event.key);
      else if (event.type === 'replace') {
        for (const key of [...world.keys()]) if (!event.objects.has(key) && !event.keep?.has(key)) world.delete(key);
        for (const [key, value] of event.objects) world.set(key, value);
      }
    };
    const check = async (ops: Op[]): Promise<{ joinedLate: number }> => {
      const upstream = new ControlledSource<number>();
      const shared = shareSource(upstream);
      const model = new Map<string, number>();
      let listed = false;
      let joinedLate = 0;
      const readers: { controller: AbortController; store: Map<string, number>; done: Promise<void> }[] = [];
      const join = (): void => {
        const controller = new AbortController();
        const store = new Map<string, number>();
        const source = shared.subscribe();
        const done = (async () => {
          for await (const event of source.open(controller.signal)) applyTo(store, event);
        })();
        if (listed) joinedLate++;
        readers.push({ controller, store, done });
      };
      join();
      await settle(2);
      // The upstream's stream starts with its listing, as a reflector's does.
      upstream.last.push(replaceEvent([]));
      listed = true;
      for (const op of ops) {
        if (op.op === 'join') join();
        else if (op.op === 'leave') {
          if (readers.length <= 1) continue; // keep one reader, so the upstream stays open
          const [gone] = readers.splice(op.which % readers.length, 1);
          gone!.controller.abort();
          await gone!.done;
        } else {
          const event: SourceEvent<number> =
            op.op === 'upsert'
              ? upsertEvent(String(op.key), op.value)
              : op.op === 'delete'
                ? deleteEvent(String(op.key))
                : replaceEvent(
                    op.keys.map((k) => [String(k), k] as const),
                    op.keep.map(String),
                  );
          applyTo(model, event);
          upstream.last.push(event);
        }
        await settle(2);
        for (const reader of readers) expect(Object.fromEntries(reader.store)).toEqual(Object.fromEntries(model));
      }
      expect(upstream.streams).toHaveLength(1);
      for (const reader of readers) reader.controller.abort();
      await Promise.all(readers.map((r) => r.done));
      expect(upstream.last.signal.aborted).toBe(true);
      return { joinedLate };
    };
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 25 }), async (ops) => void (await check(ops))),
      { numRuns: 60 },
    );
    // Not vacuous: on a fixed sample, readers joined after the listing (the synthesised replace) in most runs.
    const sample = fc.sample(fc.array(opArb, { minLength: 10, maxLength: 25 }), { seed: 23, numRuns: 20 });
    let late = 0;
    for (const ops of sample) late += (await check(ops)).joinedLate > 0 ? 1 : 0;
    expect(late).toBeGreaterThanOrEqual(10);
  });
});
