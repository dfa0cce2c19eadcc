import { describe, expect, it } from 'vitest';
import { ObjectStore, deleteEvent, readerOf, upsertEvent, type ObjectKey, type StoreReader } from '../src/index.js';
import { byPool, cell, type Cell } from './helpers.js';

/** Every method a reader answers, called on both sides: the view must agree with the store. */
function answers<T>(r: StoreReader<T, string>): unknown[] {
  return [
    r.get('ns/a'),
    r.has('ns/a'),
    r.size,
    r.parentsOf('ns/a'),
    [...r.members('p1')],
    r.parents(),
    r.hasMembers('p1'),
    r.keys(),
    [...r.snapshot()],
    [...r.byIndex('pool', 'p1')],
    r.indexKeys('pool', 'p2'),
    r.indexValues('pool'),
    [...r.list((_o: T, k: ObjectKey) => k !== 'ns/b')],
  ];
}

describe('object_store: One store reader', () => {
  it('[object_store: One store reader] store.reader is frozen, has no apply, and reads the current state (a view, not a copy)', () => {
    const store = new ObjectStore<Cell, string>({ keyMap: byPool, indexers: { pool: (c) => c.labels['pool'] } });
    const reader = store.reader;
    expect(Object.isFrozen(reader)).toBe(true);
    expect('apply' in reader).toBe(false);
    expect(store.reader).toBe(reader); // built once with its store
    store.apply(upsertEvent('ns/a', cell('p1')));
    store.apply(upsertEvent('ns/b', cell('p2')));
    expect(answers(reader)).toEqual(answers(store));
    expect(reader.size).toBe(2);
    store.apply(deleteEvent('ns/a'));
    store.apply(upsertEvent('ns/b', cell('p1', 2)));
    expect(answers(reader)).toEqual(answers(store));
    expect(reader.parentsOf('ns/a')).toEqual([]);
    expect(reader.parentsOf('ns/b')).toEqual(['p1']);
  });

  it('[object_store: One store reader] readerOf gives any StoreReader the same view, delegating every method', () => {
    const calls: string[] = [];
    const store = new ObjectStore<Cell, string>({ keyMap: byPool, indexers: { pool: (c) => c.labels['pool'] } });
    store.apply(upsertEvent('ns/a', cell('p1')));
    const traced = new Proxy(store as StoreReader<Cell, string>, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof name === 'string') calls.push(name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const view = readerOf(traced);
    expect(answers(view)).toEqual(answers(store));
    expect(new Set(calls)).toEqual(
      new Set([
        'get',
        'has',
        'size',
        'parentsOf',
        'members',
        'parents',
        'hasMembers',
        'keys',
        'snapshot',
        'byIndex',
        'indexKeys',
        'indexValues',
        'list',
      ]),
    );
  });
});
