import { describe, expect, it } from 'vitest';
import { InvalidSourceEventError, ObjectStore, releaseEvent, replaceEvent, upsertEvent } from '../src/index.js';

interface Obj {
  parent: string;
  shard: 'a' | 'b';
}

function store(): ObjectStore<Obj, string> {
  const s = new ObjectStore<Obj, string>({ keyMap: (o) => o.parent, indexers: { byShard: (o) => [o.shard] } });
  s.apply(
    replaceEvent<Obj>([
      ['x1', { parent: 'x', shard: 'a' }],
      ['x2', { parent: 'x', shard: 'b' }],
      ['y1', { parent: 'y', shard: 'b' }],
      ['z1', { parent: 'z', shard: 'a' }],
    ]),
  );
  return s;
}

describe('[object_store: Release] a release removes the objects its retain rejects, returning their parents, without touching the rest', () => {
  it('removes rejected objects from the store, the parent index and the indexes; returns the parents that lost members', () => {
    const s = store();
    const released = s.apply(releaseEvent<Obj>((o) => o.shard === 'a'));
    expect([...released].sort()).toEqual(['x', 'y']);
    expect(s.keys().sort()).toEqual(['x1', 'z1']);
    expect(s.hasMembers('y')).toBe(false);
    expect([...s.members('x').keys()]).toEqual(['x1']);
    expect(s.indexKeys('byShard', 'b')).toEqual([]);
    // A later listing of what the source owns now brings objects back as any listing does.
    const affected = s.apply(
      replaceEvent<Obj>([
        ['x1', { parent: 'x', shard: 'a' }],
        ['y1', { parent: 'y', shard: 'b' }],
        ['z1', { parent: 'z', shard: 'a' }],
      ]),
    );
    expect([...affected].sort()).toEqual(['x', 'y', 'z']);
    expect(s.size).toBe(3);
  });

  it('a retain that throws leaves the store untouched; a release without retain is refused', () => {
    const s = store();
    let calls = 0;
    expect(() =>
      s.apply(
        releaseEvent<Obj>(() => {
          if (++calls === 3) throw new Error('boom');
          return false;
        }),
      ),
    ).toThrow('boom');
    expect(s.size).toBe(4);
    expect(() => s.apply({ type: 'release' } as never)).toThrow(InvalidSourceEventError);
    s.apply(upsertEvent('w1', { parent: 'w', shard: 'a' }));
    expect(s.size).toBe(5);
  });
});
