import { OptionsError } from '@reconcile-loop/primitives';
import { describe, expect, it, vi } from 'vitest';
import {
  InvalidSourceEventError,
  ObjectStore,
  UnmappableObjectError,
  deleteEvent,
  replaceEvent,
  upsertEvent,
  type KeyMap,
  type StoreReader,
  type SourceEvent,
} from '../src/index.js';
import { byPool, cell, checkInvariants, spyLogger, type Cell } from './helpers.js';

function newStore(keyMap: KeyMap<Cell, string> = byPool) {
  const logger = spyLogger();
  const store = new ObjectStore<Cell, string>({ keyMap, logger });
  return { store, logger };
}

describe('object_store: Store', () => {
  it('[object_store: Store] wouldCache says whether an upsert would be cached, without writing or logging: a parent, or unmapped kept', () => {
    const keyMap: KeyMap<Cell, string> = (c) => {
      if (c.labels.pool === 'boom') throw new Error('boom');
      return c.labels.pool === 'bad' ? (['p', 7n, {}] as unknown as string[]) : c.labels.pool;
    };
    const { store, logger } = newStore(keyMap);
    expect(store.wouldCache(cell('p1'), 'ns/a')).toBe(true);
    expect(store.wouldCache(cell(undefined), 'ns/b')).toBe(false);
    expect(store.wouldCache(cell('boom'), 'ns/c')).toBe(false);
    expect(store.wouldCache(cell('bad'), 'ns/d')).toBe(false);
    expect(store.size).toBe(0);
    expect(logger.entries()).toEqual([]);
    const keeping = new ObjectStore<Cell, string>({ keyMap, unmapped: 'keep' });
    expect(keeping.wouldCache(cell(undefined), 'ns/b')).toBe(true);
  });

  it('[object_store: Store] a plain Map by object key: get/has/size/keys follow upsert and delete', () => {
    const { store } = newStore();
    const a = cell('p1');
    const b = cell('p2');
    store.apply(upsertEvent('ns/a', a));
    store.apply(upsertEvent('ns/b', b));
    expect(store.size).toBe(2);
    expect(store.get('ns/a')).toBe(a);
    expect(store.has('ns/b')).toBe(true);
    expect(store.keys()).toEqual(['ns/a', 'ns/b']);

    store.apply(deleteEvent('ns/a'));
    expect(store.size).toBe(1);
    expect(store.has('ns/a')).toBe(false);
    expect(store.get('ns/a')).toBeUndefined();
    expect(store.keys()).toEqual(['ns/b']);
    checkInvariants(store, byPool);
  });

  it('[object_store: Store] apply is synchronous and no lock exists: the cache is updated before the affected parents are returned (cache before notify)', () => {
    const { store } = newStore();
    const seen: (Cell | undefined)[] = [];
    const affected = store.apply(upsertEvent('ns/a', cell('p1', 7)));
    // Not a promise: the caller enqueues after apply returns, and a reconcile then reads the new state.
    expect(typeof (affected as unknown as { then?: unknown }).then).toBe('undefined');
    for (const parent of affected) seen.push(...store.members(parent).values());
    expect(seen).toEqual([cell('p1', 7)]);
  });

  it('[object_store: Store] deleting an unknown key returns the empty set and does not throw', () => {
    const { store, logger } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    const affected = store.apply(deleteEvent('ns/missing'));
    expect([...affected]).toEqual([]);
    expect(store.size).toBe(1);
    expect(logger.entries()).toEqual([]);
  });

  it('[object_store: Store] delete returns the parent the object was cached under', () => {
    const { store } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    store.apply(upsertEvent('ns/b', cell('p1')));
    expect([...store.apply(deleteEvent('ns/a'))]).toEqual(['p1']);
    expect(store.hasMembers('p1')).toBe(true);
    expect([...store.apply(deleteEvent('ns/b'))]).toEqual(['p1']);
    expect(store.hasMembers('p1')).toBe(false);
    checkInvariants(store, byPool);
  });
});

describe('object_store: Replace() on relist', () => {
  it('[object_store: Replace() on relist] a cached object missing from the world gets a synthesised delete and its parent is returned', () => {
    const { store } = newStore();
    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
      ]),
    );
    const affected = store.apply(replaceEvent([['ns/a', cell('p1')]]));
    expect(store.has('ns/b')).toBe(false);
    expect(store.hasMembers('p2')).toBe(false);
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
    checkInvariants(store, byPool);
  });

  it('[object_store: Replace keeps quarantined] a key in keep keeps its cached entry (the last good version): no delete, its parent not re-driven; an uncached kept key stays absent', () => {
    const { store } = newStore();
    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
      ]),
    );
    const affected = store.apply(replaceEvent([['ns/a', cell('p1')]], ['ns/b', 'ns/c']));
    expect(store.has('ns/b')).toBe(true);
    expect(store.has('ns/c')).toBe(false);
    expect(new Set(affected)).toEqual(new Set(['p1']));
    checkInvariants(store, byPool);
  });

  it('[object_store: Replace() on relist] returns the parent of every object in the world, unchanged ones included (level-triggered)', () => {
    const { store } = newStore();
    const a = cell('p1');
    const b = cell('p2');
    store.apply(
      replaceEvent([
        ['ns/a', a],
        ['ns/b', b],
      ]),
    );
    const affected = store.apply(
      replaceEvent([
        ['ns/a', a],
        ['ns/b', b],
      ]),
    );
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
    expect(store.get('ns/a')).toBe(a);
  });

  it('[object_store: Replace() on relist] an object whose parent changed in the world re-drives its old and new parents', () => {
    const { store } = newStore();
    store.apply(replaceEvent([['ns/a', cell('p1')]]));
    const affected = store.apply(replaceEvent([['ns/a', cell('p2')]]));
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
    expect(store.parentsOf('ns/a')).toEqual(['p2']);
    expect(store.parents()).toEqual(['p2']);
    checkInvariants(store, byPool);
  });

  it("[object_store: Replace() on relist] store-side diff survives a whole stream reopening: the next stream's listing deletes what an earlier stream cached", () => {
    const { store } = newStore();
    // First stream: a listing, then watch events.
    for (const event of [
      replaceEvent([['ns/a', cell('p1')]]),
      upsertEvent('ns/b', cell('p1')),
      upsertEvent('ns/c', cell('p2')),
    ] satisfies SourceEvent<Cell>[]) {
      store.apply(event);
    }
    // The stream dies; a new one opens on the same store. The deletes of b and c happened while no
    // stream was open, so only the store can remember b and c existed.
    const affected = store.apply(replaceEvent([['ns/a', cell('p1', 2)]]));
    expect(store.keys()).toEqual(['ns/a']);
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
    checkInvariants(store, byPool);
  });

  it('[object_store: Replace() on relist] an empty world empties the store and re-drives every parent it had', () => {
    const { store } = newStore();
    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
        ['ns/c', cell('p2')],
      ]),
    );
    const affected = store.apply(replaceEvent<Cell>([]));
    expect(store.size).toBe(0);
    expect(store.parents()).toEqual([]);
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
  });

  it('[object_store: Replace() on relist] unmappable objects in the world are not stored, and a cached one is evicted and its parent returned', () => {
    const { store, logger } = newStore();
    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
      ]),
    );
    const affected = store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell(undefined)],
        ['ns/new', cell(undefined)],
      ]),
    );
    expect(store.keys()).toEqual(['ns/a']);
    expect(new Set(affected)).toEqual(new Set(['p1', 'p2']));
    expect(logger.entries().map((c) => c.fields['key'])).toEqual(['ns/b', 'ns/new']);
    checkInvariants(store, byPool);
  });

  it("[object_store: Replace() on relist] the affected set lists the world's parents in world order, then parents of synthesised deletes", () => {
    const { store } = newStore();
    store.apply(
      replaceEvent([
        ['ns/gone', cell('p0')],
        ['ns/a', cell('p1')],
      ]),
    );
    const affected = store.apply(
      replaceEvent([
        ['ns/b', cell('p3')],
        ['ns/a', cell('p1')],
      ]),
    );
    expect([...affected]).toEqual(['p3', 'p1', 'p0']);
  });
});

describe('object_store: Indexer', () => {
  it('[object_store: Indexer] the parent map is the index: parentsOf/members/parents/hasMembers answer from it', () => {
    const { store } = newStore();
    const a = cell('p1');
    const b = cell('p1');
    const c = cell('p2');
    store.apply(
      replaceEvent([
        ['ns/a', a],
        ['ns/b', b],
        ['ns/c', c],
      ]),
    );
    expect(store.parentsOf('ns/a')).toEqual(['p1']);
    expect(store.parentsOf('ns/missing')).toEqual([]);
    expect([...store.members('p1')]).toEqual([
      ['ns/a', a],
      ['ns/b', b],
    ]);
    expect([...store.members('p2')]).toEqual([['ns/c', c]]);
    expect(store.members('unknown').size).toBe(0);
    expect(store.parents()).toEqual(['p1', 'p2']);
    expect(store.hasMembers('p2')).toBe(true);
    expect(store.hasMembers('unknown')).toBe(false);
    checkInvariants(store, byPool);
  });

  it('[object_store: Indexer] a parent that loses its last member leaves parents() (resync does not re-drive it)', () => {
    const { store } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    store.apply(upsertEvent('ns/b', cell('p2')));
    store.apply(upsertEvent('ns/a', cell('p2')));
    expect(store.parents()).toEqual(['p2']);
    expect(store.hasMembers('p1')).toBe(false);
    store.apply(deleteEvent('ns/a'));
    store.apply(deleteEvent('ns/b'));
    expect(store.parents()).toEqual([]);
  });

  it('[object_store: Indexer] the relation is computed once per upsert: delete and eviction use the cached parent and never call the key map', () => {
    const keyMap = vi.fn(byPool);
    const { store } = newStore(keyMap);
    store.apply(upsertEvent('ns/a', cell('p1')));
    expect(keyMap).toHaveBeenCalledTimes(1);
    expect(keyMap).toHaveBeenLastCalledWith(cell('p1'), 'ns/a');
    store.apply(deleteEvent('ns/a'));
    expect(keyMap).toHaveBeenCalledTimes(1);

    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
        ['ns/c', cell('p3')],
      ]),
    );
    expect(keyMap).toHaveBeenCalledTimes(4);
    // ns/b and ns/c are deleted by synthesis: no key map call for them.
    store.apply(replaceEvent([['ns/a', cell('p1')]]));
    expect(keyMap).toHaveBeenCalledTimes(5);
  });

  it('[object_store: Indexer] a key map that is not pure cannot corrupt the index: removal uses the parent recorded at upsert', () => {
    let pool = 'p1';
    const { store } = newStore(() => pool);
    store.apply(upsertEvent('ns/a', cell('ignored')));
    pool = 'p2';
    expect([...store.apply(deleteEvent('ns/a'))]).toEqual(['p1']);
    expect(store.parents()).toEqual([]);
  });
});

describe('object_store: EnqueueRequestForOwner', () => {
  it('[object_store: EnqueueRequestForOwner] upsert stores the object and returns the parent the key map gives', () => {
    const { store } = newStore();
    expect([...store.apply(upsertEvent('ns/a', cell('p1')))]).toEqual(['p1']);
    expect(store.parentsOf('ns/a')).toEqual(['p1']);
  });

  it('[object_store: EnqueueRequestForOwner] an object whose parent changes returns the old and the new parent, and moves between member sets', () => {
    const { store } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    store.apply(upsertEvent('ns/b', cell('p1')));
    const affected = store.apply(upsertEvent('ns/a', cell('p2')));
    expect([...affected]).toEqual(['p1', 'p2']);
    expect([...store.members('p1').keys()]).toEqual(['ns/b']);
    expect([...store.members('p2').keys()]).toEqual(['ns/a']);
    checkInvariants(store, byPool);
  });

  it('[object_store: EnqueueRequestForOwner] an object whose labels stop mapping is evicted with a warning and re-drives the parent it left', () => {
    const { store, logger } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    const affected = store.apply(upsertEvent('ns/a', cell(undefined)));
    expect([...affected]).toEqual(['p1']);
    expect(store.has('ns/a')).toBe(false);
    expect(store.hasMembers('p1')).toBe(false);
    expect(logger.entries()).toHaveLength(1);
    const [call] = logger.entries();
    expect(call?.level).toBe('warn');
    expect(call?.fields['key']).toBe('ns/a');
    expect('cause' in (call?.fields ?? {})).toBe(true);
    expect(call?.fields['cause']).toBeUndefined();
    const error = call?.fields['err'] as UnmappableObjectError;
    expect(error).toBeInstanceOf(UnmappableObjectError);
    expect(error.code).toBe('RL_STORE_UNMAPPABLE_OBJECT');
    expect(error.key).toBe('ns/a');
    expect(call?.message).toBe(`${error.message}; it is not cached`);
    expect(error.message).toContain('"ns/a"');
    expect(error.message).toContain('returned no parent');
    checkInvariants(store, byPool);
  });

  it('[object_store: EnqueueRequestForOwner] an unmappable object that was never cached is not stored and affects no parent', () => {
    const { store, logger } = newStore();
    const affected = store.apply(upsertEvent('ns/a', cell(undefined)));
    expect(affected.size).toBe(0);
    expect(store.size).toBe(0);
    expect(logger.entries()).toHaveLength(1);
  });

  it('[object_store: EnqueueRequestForOwner] a throwing key map counts as cannot map: logged at error with the thrown error as cause, never thrown into the stream', () => {
    const boom = new Error('label "pool" malformed');
    const { store, logger } = newStore((object) => {
      if (object.version === 2) throw boom;
      return byPool(object, '');
    });
    store.apply(upsertEvent('ns/a', cell('p1', 1)));
    let affected: ReadonlySet<string> | undefined;
    expect(() => {
      affected = store.apply(upsertEvent('ns/a', cell('p1', 2)));
    }).not.toThrow();
    expect([...(affected ?? [])]).toEqual(['p1']);
    expect(store.has('ns/a')).toBe(false);
    expect(logger.entries()).toHaveLength(1);
    const [call] = logger.entries();
    expect(call?.level).toBe('error');
    expect(call?.fields['key']).toBe('ns/a');
    expect(call?.fields['cause']).toBe(boom);
    const error = call?.fields['err'] as UnmappableObjectError;
    expect(error.cause).toBe(boom);
    expect(error.message).toContain('label "pool" malformed');
  });

  it('[object_store: EnqueueRequestForOwner] a key map result that is not a parent key (null, an object) is unmappable with a TypeError cause', () => {
    for (const bad of [null, { pool: 'p1' }, Symbol('p')]) {
      const { store, logger } = newStore(() => bad as unknown as string);
      expect(store.apply(upsertEvent('ns/a', cell('p1'))).size).toBe(0);
      expect(store.size).toBe(0);
      expect(logger.entries()[0]?.level).toBe('error');
      expect(logger.entries()[0]?.fields['cause']).toBeInstanceOf(TypeError);
    }
  });

  it('[object_store: EnqueueRequestForOwner] parent keys compare like Map keys (SameValueZero): NaN and -0 are one parent each, not a move', () => {
    for (const [first, second] of [
      [Number.NaN, Number.NaN],
      [0, -0],
    ] as const) {
      let parent: number = first;
      const store = new ObjectStore<Cell, number>({ keyMap: () => parent });
      store.apply(upsertEvent('ns/a', cell('x')));
      parent = second;
      const affected = store.apply(upsertEvent('ns/a', cell('x', 2)));
      expect(affected.size).toBe(1);
      expect(store.hasMembers(second)).toBe(true);
      expect(store.members(second).get('ns/a')).toEqual(cell('x', 2));
      checkInvariants(store, () => second);
    }
  });

  it('[object_store: EnqueueRequestForOwner] parent keys may be any primitive (string, number, bigint, boolean)', () => {
    const store = new ObjectStore<{ p: string | number | bigint | boolean }, string | number | bigint | boolean>({
      keyMap: (o) => o.p,
    });
    store.apply(
      replaceEvent([
        ['a', { p: 'x' }],
        ['b', { p: 1 }],
        ['c', { p: 2n }],
        ['d', { p: false }],
      ]),
    );
    expect(store.parents()).toEqual(['x', 1, 2n, false]);
  });
});

describe('object_store: DeltaFIFO', () => {
  it('[object_store: DeltaFIFO] N upserts of one key leave one object (the last) and return its parent every time; no delta chain', () => {
    const { store } = newStore();
    const objects = Array.from({ length: 50 }, (_, i) => cell('p1', i));
    for (const object of objects) {
      expect([...store.apply(upsertEvent('ns/a', object))]).toEqual(['p1']);
    }
    expect(store.size).toBe(1);
    expect(store.get('ns/a')).toBe(objects.at(-1));
    expect([...store.members('p1').values()]).toEqual([objects.at(-1)]);
  });

  it('[object_store: DeltaFIFO] an unchanged object upserted again still returns its parent (resync and relist rely on it)', () => {
    const { store } = newStore();
    const a = cell('p1');
    store.apply(upsertEvent('ns/a', a));
    expect([...store.apply(upsertEvent('ns/a', a))]).toEqual(['p1']);
  });
});

describe('source_event: events as values', () => {
  it('[source_event: events as values] a store is written only through event values: hand-built literals and builders apply alike', () => {
    const { store: viaBuilders } = newStore();
    const { store: viaLiterals } = newStore();
    const a = cell('p1');
    const b = cell('p2');
    for (const e of [replaceEvent([['ns/a', a]]), upsertEvent('ns/b', b), deleteEvent('ns/a')]) viaBuilders.apply(e);
    const literals: SourceEvent<Cell>[] = [
      { type: 'replace', objects: new Map([['ns/a', a]]) },
      { type: 'upsert', key: 'ns/b', object: b },
      { type: 'delete', key: 'ns/a' },
    ];
    for (const e of literals) viaLiterals.apply(e);
    expect(viaLiterals.snapshot()).toEqual(viaBuilders.snapshot());
    expect([...viaBuilders.snapshot()]).toEqual([['ns/b', b]]);
  });

  it('[source_event: events as values] a value that is not a source event throws InvalidSourceEventError and leaves the store unchanged', () => {
    const { store } = newStore();
    store.apply(upsertEvent('ns/a', cell('p1')));
    const bad: unknown[] = [
      null,
      undefined,
      {},
      { type: 'added', key: 'ns/b', object: cell('p1') },
      { type: 'upsert', key: 42, object: cell('p1') },
      { type: 'delete' },
      { type: 'replace' },
      { type: 'replace', objects: [['ns/b', cell('p1')]] },
      // A bad key anywhere in the world is caught before the first write.
      {
        type: 'replace',
        objects: new Map<unknown, Cell>([
          ['ns/b', cell('p1')],
          [7, cell('p1')],
        ]),
      },
    ];
    for (const event of bad) {
      let thrown: unknown;
      try {
        store.apply(event as SourceEvent<Cell>);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(event)).toBeInstanceOf(InvalidSourceEventError);
      expect((thrown as InvalidSourceEventError).code).toBe('RL_STORE_INVALID_SOURCE_EVENT');
      expect((thrown as InvalidSourceEventError).event).toBe(event);
      expect(store.keys()).toEqual(['ns/a']);
    }
  });
});

describe('object_store: deviations', () => {
  it('[object_store: snapshots] members() and snapshot() are copies: a held snapshot never sees later events, and writing to it never reaches the store', () => {
    const { store } = newStore();
    const a = cell('p1');
    store.apply(upsertEvent('ns/a', a));
    const reader: StoreReader<Cell, string> = store;
    const members = reader.members('p1');
    const whole = store.snapshot();
    const keys = store.keys();
    const parents = store.parents();
    store.apply(upsertEvent('ns/b', cell('p1')));
    store.apply(upsertEvent('ns/a', cell('p1', 2)));
    store.apply(deleteEvent('ns/b'));
    expect([...members]).toEqual([['ns/a', a]]);
    expect([...whole]).toEqual([['ns/a', a]]);
    expect(members.get('ns/a')).toBe(a);
    (members as Map<string, Cell>).set('ns/x', cell('p1'));
    (whole as Map<string, Cell>).clear();
    keys.push('ns/y');
    parents.push('p9');
    expect(store.keys()).toEqual(['ns/a']);
    expect(store.parents()).toEqual(['p1']);
    expect(store.members('p1').has('ns/x')).toBe(false);
    (store.members('unknown') as Map<string, Cell>).set('ns/z', cell('p1'));
    expect(store.hasMembers('unknown')).toBe(false);
  });

  it('[object_store: objects as immutable values] the store never mutates, copies or freezes an object; upsert replaces the reference', () => {
    const { store } = newStore();
    const a = { labels: { pool: 'p1' }, version: 1 };
    const frozen = Object.freeze({ labels: Object.freeze({ pool: 'p1' }), version: 2 });
    store.apply(upsertEvent('ns/a', a));
    expect(store.get('ns/a')).toBe(a);
    expect(Object.isFrozen(a)).toBe(false);
    expect(a).toEqual({ labels: { pool: 'p1' }, version: 1 });
    // A deeply frozen object is accepted: the store writes nothing to it.
    store.apply(upsertEvent('ns/a', frozen));
    expect(store.get('ns/a')).toBe(frozen);
    expect(store.members('p1').get('ns/a')).toBe(frozen);
  });

  it('[object_store: log after apply] unmappable objects are logged after the store is consistent, so a throwing logger cannot half-apply an event', () => {
    const failing = spyLogger();
    failing.warn.mockImplementation(() => {
      throw new Error('logger down');
    });
    const store = new ObjectStore<Cell, string>({ keyMap: byPool, logger: failing });
    store.apply(
      replaceEvent([
        ['ns/a', cell('p1')],
        ['ns/b', cell('p2')],
      ]),
    );
    expect(() =>
      store.apply(
        replaceEvent([
          ['ns/a', cell(undefined)],
          ['ns/c', cell('p3')],
        ]),
      ),
    ).toThrow('logger down');
    expect(store.keys()).toEqual(['ns/c']);
    checkInvariants(store, byPool);
  });

  it('[object_store: options] a missing key map throws OptionsError; the logger defaults to silent', () => {
    expect(() => new ObjectStore({} as never)).toThrow(OptionsError);
    try {
      new ObjectStore({ keyMap: 'pool' } as never);
    } catch (error) {
      expect((error as OptionsError).code).toBe('RL_INVALID_OPTIONS');
    }
    const store = new ObjectStore<Cell, string>({ keyMap: byPool });
    expect(() => store.apply(upsertEvent('ns/a', cell(undefined)))).not.toThrow();
  });

  it('[object_store: options] the error classes carry stable codes and names', () => {
    const unmappable = new UnmappableObjectError('ns/a', { cause: 'x' });
    expect([unmappable.code, unmappable.name, unmappable.key, unmappable.cause]).toEqual([
      'RL_STORE_UNMAPPABLE_OBJECT',
      'UnmappableObjectError',
      'ns/a',
      'x',
    ]);
    expect('cause' in new UnmappableObjectError('ns/a')).toBe(false);
    const invalid = new InvalidSourceEventError(1, 'nope');
    expect([invalid.code, invalid.name, invalid.message]).toEqual([
      'RL_STORE_INVALID_SOURCE_EVENT',
      'InvalidSourceEventError',
      'not a source event: nope',
    ]);
  });
});
