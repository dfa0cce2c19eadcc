import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ObjectStore,
  UnknownIndexError,
  deleteEvent,
  replaceEvent,
  upsertEvent,
  type IndexFunc,
  type SourceEvent,
} from '../src/index.js';
import { StoreIndexes } from '../src/indexes.js';
import { spyLogger } from './helpers.js';

/** An object with a node (a field index, one value or none) and labels (a multi-value index). */
interface Obj {
  readonly node: string | undefined;
  readonly labels: readonly string[];
  readonly parent: 'p1' | 'p2' | 'none';
  readonly n: number;
}

const byNode: IndexFunc<Obj> = (o) => o.node;
const byLabel: IndexFunc<Obj> = (o) => o.labels;
const keyMap = (o: Obj): string | undefined => (o.parent === 'none' ? undefined : o.parent);

const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const objArb: fc.Arbitrary<Obj> = fc.record({
  node: fc.option(fc.constantFrom('n1', 'n2'), { nil: undefined }),
  labels: fc.uniqueArray(fc.constantFrom('app=web', 'app=db', 'tier=x'), { maxLength: 3 }),
  // Unmappable objects are evicted: the indexes must follow the store there too.
  parent: fc.constantFrom('p1', 'p2', 'p1', 'p2', 'none'),
  n: fc.nat(1000),
});
const eventArb: fc.Arbitrary<SourceEvent<Obj>> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(keyArb, objArb).map(([k, o]) => upsertEvent(k, o)) },
  { weight: 2, arbitrary: keyArb.map((k) => deleteEvent(k)) },
  { weight: 1, arbitrary: fc.array(fc.tuple(keyArb, objArb), { maxLength: 6 }).map((w) => replaceEvent(w)) },
);

/** What an index must answer: a scan of the store with the index function. */
function scan(store: ObjectStore<Obj, string>, func: IndexFunc<Obj>, value: string): string[] {
  return store.keys().filter((k) => {
    const v = func(store.get(k)!, k);
    return v === value || (Array.isArray(v) && v.includes(value));
  });
}

describe('user-defined indexes', () => {
  it('[object_store: Indexes] property: after any upserts, deletes, relists and evictions, every index answers exactly what a scan of the store answers, with the current objects', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 40 }), (events) => {
        const store = new ObjectStore<Obj, string>({ keyMap, indexers: { node: byNode, label: byLabel } });
        for (const event of events) {
          store.apply(event);
          for (const [name, func, values] of [
            ['node', byNode, ['n1', 'n2']],
            ['label', byLabel, ['app=web', 'app=db', 'tier=x']],
          ] as const) {
            const present: string[] = [];
            for (const value of values) {
              const want = scan(store, func, value);
              expect(store.indexKeys(name, value).sort()).toEqual([...want].sort());
              const got = store.byIndex(name, value);
              for (const [key, object] of got) expect(object).toBe(store.get(key));
              if (want.length > 0) present.push(value);
            }
            expect(store.indexValues(name).sort()).toEqual(present.sort());
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('[object_store: Indexes] byIndex is a snapshot of the matches only; list(filter) scans without copying the rest', () => {
    const store = new ObjectStore<Obj, string>({ keyMap, indexers: { node: byNode } });
    const obj = (node: string, n: number): Obj => ({ node, labels: [], parent: 'p1', n });
    store.apply(
      replaceEvent([
        ['a', obj('n1', 1)],
        ['b', obj('n2', 2)],
        ['c', obj('n1', 3)],
      ]),
    );
    const onN1 = store.byIndex('node', 'n1');
    expect([...onN1.keys()]).toEqual(['a', 'c']);
    store.apply(upsertEvent('a', obj('n2', 4)));
    expect([...onN1.keys()]).toEqual(['a', 'c']); // the snapshot does not change
    expect(store.indexKeys('node', 'n1')).toEqual(['c']);
    expect([...store.byIndex('node', 'n2').values()].map((o) => o.n)).toEqual([2, 4]);
    expect([...store.byIndex('node', 'n9').keys()]).toEqual([]);
    expect([...store.list((o) => o.n > 2).keys()]).toEqual(['a', 'c']);
  });

  it('[object_store: Indexes] an unknown index name throws UnknownIndexError (RL_STORE_UNKNOWN_INDEX) naming the declared ones; a store without indexers has none', () => {
    const store = new ObjectStore<Obj, string>({ keyMap, indexers: { node: byNode } });
    expect(() => store.byIndex('nodes', 'n1')).toThrow(UnknownIndexError);
    expect(() => store.indexKeys('nodes', 'n1')).toThrow(/no index named "nodes" \(declared: node\)/);
    const plain = new ObjectStore<Obj, string>({ keyMap });
    try {
      plain.indexValues('node');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UnknownIndexError);
      expect((error as UnknownIndexError).code).toBe('RL_STORE_UNKNOWN_INDEX');
      expect((error as UnknownIndexError).index).toBe('node');
    }
  });

  it('[object_store: Indexes] an index function that throws or returns a non-string leaves the object unindexed there, logged, and still cached', () => {
    const logger = spyLogger();
    const store = new ObjectStore<Obj, string>({
      keyMap,
      logger,
      indexers: {
        node: (o) => {
          if (o.n === 13) throw new Error('unlucky');
          return o.node;
        },
        odd: (o) => (o.n === 7 ? (42 as unknown as string) : o.n % 2 === 1 ? 'odd' : undefined),
      },
    });
    store.apply(upsertEvent('a', { node: 'n1', labels: [], parent: 'p1', n: 13 }));
    store.apply(upsertEvent('b', { node: 'n1', labels: [], parent: 'p1', n: 7 }));
    expect(store.has('a')).toBe(true);
    expect(store.indexKeys('node', 'n1')).toEqual(['b']);
    expect(store.indexKeys('odd', 'odd')).toEqual(['a']);
    expect(
      logger
        .entries()
        .filter((c) => c.level === 'error')
        .map((c) => c.message),
    ).toEqual(['index function threw; object not indexed under it', 'index function returned neither strings nor undefined']);
  });

  it('[object_store: Indexes] indexers must be an object of functions (OptionsError)', () => {
    expect(
      () => new ObjectStore<Obj, string>({ keyMap, indexers: { node: 'spec.nodeName' as unknown as IndexFunc<Obj> } }),
    ).toThrow(/indexers.node must be a function/);
    expect(() => new StoreIndexes<Obj>({ owner: 'X', indexers: null as never, objectOf: () => undefined })).toThrow(
      /indexers must be an object/,
    );
  });
});
