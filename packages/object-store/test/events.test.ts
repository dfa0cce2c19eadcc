import { describe, expect, it } from 'vitest';
import { deleteEvent, replaceEvent, upsertEvent, type Source, type SourceEvent } from '../src/index.js';

describe('source_event builders', () => {
  it('[source_event: builders] upsertEvent and deleteEvent build plain tagged values', () => {
    const object = { v: 1 };
    expect(upsertEvent('ns/a', object)).toEqual({ type: 'upsert', key: 'ns/a', object });
    expect(upsertEvent('ns/a', object).object).toBe(object);
    expect(deleteEvent('ns/a')).toEqual({ type: 'delete', key: 'ns/a' });
  });

  it('[source_event: builders] replaceEvent from an array of pairs builds a Map in order, later pairs winning', () => {
    const event = replaceEvent([
      ['a', 1],
      ['b', 2],
      ['a', 3],
    ]);
    expect(event.type).toBe('replace');
    expect([...event.objects]).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
  });

  it('[source_event: builders] replaceEvent accepts any iterable of pairs, a generator included', () => {
    function* pairs(): Generator<[string, number]> {
      yield ['x', 1];
      yield ['x', 2];
    }
    expect([...replaceEvent(pairs()).objects]).toEqual([['x', 2]]);
    expect(replaceEvent<number>([]).objects.size).toBe(0);
  });

  it('[source_event: builders] replaceEvent takes a Map as the world as-is, without copying it', () => {
    const world = new Map([['a', 1]]);
    const event = replaceEvent(world);
    expect(event.objects).toBe(world);
    expect([...event.objects]).toEqual([['a', 1]]);
  });

  it('[source_event: events as values] a Source is anything whose open() yields event values', async () => {
    const source: Source<number> = {
      name: 'in-process',
      async *open(signal) {
        yield replaceEvent([['a', 1]]);
        if (!signal.aborted) yield upsertEvent('b', 2);
        yield deleteEvent('a');
      },
    };
    const seen: SourceEvent<number>[] = [];
    for await (const event of source.open(new AbortController().signal)) seen.push(event);
    expect(seen.map((e) => e.type)).toEqual(['replace', 'upsert', 'delete']);
    expect(JSON.parse(JSON.stringify(seen[1]))).toEqual({ type: 'upsert', key: 'b', object: 2 });
  });
});
