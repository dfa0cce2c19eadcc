import { describe, expect, it } from 'vitest';
import {
  CacheMeter,
  deleteEvent,
  estimateBytes,
  InvalidSourceEventError,
  ObjectStore,
  releaseEvent,
  replaceEvent,
  upsertEvent,
  type SourceEvent,
} from '../src/index.js';
import { spyLogger } from './helpers.js';

interface Obj {
  /** The parent key; absent: the key map gives none (the store evicts it). */
  parent?: string;
  /** Bulk, so objects differ in size. */
  data: string;
}

const obj = (parent: string | undefined, length = 10): Obj => ({
  ...(parent !== undefined && { parent }),
  data: 'x'.repeat(length),
});

function metered(budgetBytes?: number) {
  const store = new ObjectStore<Obj, string>({ keyMap: (o) => o.parent });
  const logger = spyLogger();
  const meter = new CacheMeter(store, { budgetBytes, logger, name: 'objs' });
  return { store, meter, logger };
}

/** The invariant: the count is the store's size, the sum the estimate recomputed over what the store holds. */
function expectMatchesStore(store: ObjectStore<Obj, string>, meter: CacheMeter<Obj, string>): void {
  const one = metered().meter;
  one.apply(replaceEvent(store.snapshot()));
  expect(meter.cost().objects).toBe(store.size);
  expect(meter.cost().bytesEstimate).toBe(one.cost().bytesEstimate);
}

/** Bytes of one entry as the meter counts it, measured through a meter of its own. */
function entryBytes(key: string, object: Obj): number {
  const { meter } = metered();
  meter.apply(upsertEvent(key, object));
  return meter.cost().bytesEstimate;
}

describe('[object_store: Cache meter] counts what the store holds, where it is held', () => {
  it('a running sum that equals a recount over the store after creates, growing and shrinking updates, evictions, deletes, a listing and a release', () => {
    const { store, meter } = metered();
    expect(meter.cost()).toEqual({ objects: 0, bytesEstimate: 0, budgetBytes: undefined, refused: 0, reason: undefined });
    meter.apply(upsertEvent('a', obj('p', 10)));
    meter.apply(upsertEvent('b', obj('p', 100)));
    expect(meter.cost().bytesEstimate).toBe(entryBytes('a', obj('p', 10)) + entryBytes('b', obj('p', 100)));
    meter.apply(upsertEvent('a', obj('q', 500))); // grows and moves
    meter.apply(upsertEvent('b', obj('p', 1))); // shrinks
    expectMatchesStore(store, meter);
    // The key map gives no parent: the store evicts it, and what the store does not hold costs nothing.
    meter.apply(upsertEvent('c', obj(undefined, 1_000)));
    meter.apply(upsertEvent('b', obj(undefined, 1_000)));
    expect(store.keys()).toEqual(['a']);
    expect(meter.cost().bytesEstimate).toBe(entryBytes('a', obj('q', 500)));
    meter.apply(deleteEvent('a'));
    meter.apply(deleteEvent('never-held'));
    expect(meter.cost()).toMatchObject({ objects: 0, bytesEstimate: 0 });
    meter.apply(
      replaceEvent<Obj>([
        ['x', obj('p', 30)],
        ['y', obj('q', 40)],
        ['z', obj(undefined, 50)],
      ]),
    );
    expectMatchesStore(store, meter);
    expect(meter.cost().objects).toBe(2);
    meter.apply(releaseEvent<Obj>((o) => o.parent === 'p'));
    expect(store.keys()).toEqual(['x']);
    expectMatchesStore(store, meter);
  });

  it('counts views, shared frozen parts once (as the pointer), strings by their length, and epoch-ms numbers as heap numbers', () => {
    const shared = Object.freeze({ app: 'engine' });
    const a = { labels: shared, name: 'abcdefgh', at: 1_764_000_000_000, n: 3 };
    // 24 + 4 slots of 8; 'abcdefgh' 16 + 8; the timestamp 16; the small integer and the frozen map nothing.
    expect(estimateBytes(a)).toBe(24 + 4 * 8 + 24 + 16);
    expect(estimateBytes(['ab', 'cd'])).toBe(48 + 2 * 8 + 2 * 24);
    expect(estimateBytes('é€')).toBe(16 + 8); // two-byte characters
  });

  it('a budget that is not a finite number above 0 is an OptionsError', () => {
    const store = new ObjectStore<Obj, string>({ keyMap: (o) => o.parent });
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '100'])
      expect(() => new CacheMeter(store, { budgetBytes: bad as number })).toThrow(
        /CacheMeter.*budgetBytes must be a finite number > 0/,
      );
  });

  it('throws for a value that is not an event and counts nothing, the store unchanged', () => {
    const { store, meter } = metered();
    meter.apply(upsertEvent('a', obj('p')));
    const before = meter.cost();
    expect(() => meter.apply({ type: 'nope' } as unknown as SourceEvent<Obj>)).toThrow(InvalidSourceEventError);
    expect(meter.cost()).toEqual(before);
    expect(store.size).toBe(1);
  });
});

describe('[object_store: Memory budget] a store that refuses to grow past its budget', () => {
  const ONE = entryBytes('k0', obj('p', 100));

  it('refuses a new key that does not fit (store unchanged, no parents), always takes an update of a held key, and turns complete again when refused keys are deleted', () => {
    const { store, meter, logger } = metered(Math.floor(ONE * 2.5));
    expect([...meter.apply(upsertEvent('k0', obj('p', 100)))]).toEqual(['p']);
    expect([...meter.apply(upsertEvent('k1', obj('p', 100)))]).toEqual(['p']);
    expect(logger.entries().filter((e) => e.level === 'warn')).toHaveLength(1);
    expect([...meter.apply(upsertEvent('k2', obj('p', 100)))]).toEqual([]);
    expect([...meter.apply(upsertEvent('k3', obj('q', 100)))]).toEqual([]);
    expect(store.keys()).toEqual(['k0', 'k1']);
    expect(meter.cost()).toMatchObject({ objects: 2, refused: 2 });
    expect(meter.cost().reason).toMatch(/^memory budget of \d+ bytes full \(\d+ held\): 2 objects not cached$/);
    // A held object's newer version is written whatever its size: stale is worse than over budget.
    expect([...meter.apply(upsertEvent('k0', obj('p', 2_000)))]).toEqual(['p']);
    expect(meter.cost().bytesEstimate).toBeGreaterThan(meter.cost().budgetBytes!);
    expectMatchesStore(store, meter);
    const errors = logger.entries().filter((e) => e.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.fields).toMatchObject({ source: 'objs', refused: 1 }); // logged once, at the first refusal
    meter.apply(deleteEvent('k2'));
    meter.apply(deleteEvent('k3'));
    expect(meter.cost()).toMatchObject({ refused: 0, reason: undefined });
    expect(logger.entries().filter((e) => e.level === 'info' && /fits its memory budget again/.test(e.message))).toHaveLength(1);
  });

  it('never refuses an object the store would not hold anyway (its key map gives no parent): nothing is missing', () => {
    const { store, meter } = metered(Math.floor(ONE * 1.5));
    meter.apply(upsertEvent('k0', obj('p', 100)));
    meter.apply(upsertEvent('stray', obj(undefined, 100)));
    expect(meter.cost()).toMatchObject({ objects: 1, refused: 0, reason: undefined });
    meter.apply(
      replaceEvent<Obj>([['k0', obj('p', 100)], ...[1, 2, 3].map((i): [string, Obj] => [`stray${i}`, obj(undefined, 100)])]),
    );
    expect(meter.cost()).toMatchObject({ objects: 1, refused: 0 });
    expect(store.keys()).toEqual(['k0']);
    // One it would hold is refused as before.
    meter.apply(upsertEvent('k1', obj('p', 100)));
    expect(meter.cost().refused).toBe(1);
  });

  it('cuts a listing at the budget before the store sees it, counting the kept keys first; a refused key enters once it fits', () => {
    const { store, meter } = metered(Math.floor(ONE * 3.5));
    meter.apply(upsertEvent('kept', obj('p', 100)));
    const world = new Map<string, Obj>([0, 1, 2, 3, 4].map((i) => [`k${i}`, obj('p', 100)]));
    meter.apply(replaceEvent(world, ['kept']));
    // The kept key's last good version stays and counts first: two of the five fit beside it.
    expect(store.keys().sort()).toEqual(['k0', 'k1', 'kept']);
    expect(meter.cost()).toMatchObject({ objects: 3, refused: 3 });
    expect(world.size).toBe(5); // the source's listing is not mutated
    expectMatchesStore(store, meter);
    meter.apply(deleteEvent('kept'));
    meter.apply(upsertEvent('k2', obj('p', 100)));
    expect(store.has('k2')).toBe(true);
    expect(meter.cost().refused).toBe(2);
  });
});
