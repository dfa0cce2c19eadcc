import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ObjectStore, deleteEvent, replaceEvent, upsertEvent, type SourceEvent } from '../src/index.js';
import { checkInvariants, spyLogger } from './helpers.js';

/**
 * `label` decides what the key map does: a parent key, `undefined` (cannot map), a throw, or a
 * value that is not a parent key. Same label, same answer: the key map is pure, so the expected
 * index can be recomputed from the objects.
 */
interface Obj {
  readonly label: 'p1' | 'p2' | 'p3' | 'none' | 'throw' | 'null';
  readonly n: number;
}

const keyMap = (object: Obj): string | undefined => {
  switch (object.label) {
    case 'none':
      return undefined;
    case 'throw':
      throw new Error(`cannot map ${object.n}`);
    case 'null':
      return null as unknown as string;
    default:
      return object.label;
  }
};

/** The key map's answer, or `undefined` for every way of "cannot map". */
function mapped(object: Obj): string | undefined {
  try {
    const parent = keyMap(object);
    return typeof parent === 'string' ? parent : undefined;
  } catch {
    return undefined;
  }
}

const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
const objArb: fc.Arbitrary<Obj> = fc.record({
  // Mostly mappable, so parents change often; the rest covers each way of not mapping.
  label: fc.constantFrom('p1', 'p2', 'p3', 'p1', 'p2', 'p3', 'none', 'throw', 'null'),
  n: fc.nat(1000),
});
const worldArb = fc.array(fc.tuple(keyArb, objArb), { maxLength: 8 });
const eventArb: fc.Arbitrary<SourceEvent<Obj>> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(keyArb, objArb).map(([k, o]) => upsertEvent(k, o)) },
  { weight: 3, arbitrary: keyArb.map((k) => deleteEvent(k)) },
  { weight: 1, arbitrary: worldArb.map((w) => replaceEvent(w)) },
);
const eventsArb = fc.array(eventArb, { maxLength: 40 });

function newStore() {
  const logger = spyLogger();
  return { store: new ObjectStore<Obj, string>({ keyMap, logger }), logger };
}

/** Member sets per parent, objects by identity. */
function memberSets(store: ObjectStore<Obj, string>): Map<string, ReadonlyMap<string, Obj>> {
  return new Map(store.parents().map((p) => [p, store.members(p)]));
}

function sameMembers(a: ReadonlyMap<string, Obj> | undefined, b: ReadonlyMap<string, Obj> | undefined): boolean {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false;
  for (const [key, object] of a ?? []) if (b?.get(key) !== object) return false;
  return true;
}

/** Number of objects an event hands to the key map that it cannot map. */
function unmappableIn(event: SourceEvent<Obj>): number {
  if (event.type === 'delete' || event.type === 'release') return 0;
  const objects = event.type === 'upsert' ? [event.object] : [...event.objects.values()];
  return objects.filter((o) => mapped(o) === undefined).length;
}

describe('object_store properties', () => {
  it('[object_store: Replace() on relist] property: after any event sequence, Replace(world) leaves exactly the mappable part of the world', () => {
    fc.assert(
      fc.property(eventsArb, worldArb, (events, worldPairs) => {
        const { store } = newStore();
        for (const event of events) store.apply(event);
        const world = replaceEvent(worldPairs);
        store.apply(world);
        const expected = new Map([...world.objects].filter(([, o]) => mapped(o) !== undefined));
        const actual = store.snapshot();
        expect(actual.size).toBe(expected.size);
        for (const [key, object] of expected) expect(actual.get(key)).toBe(object);
        checkInvariants(store, keyMap);
      }),
      { numRuns: 500 },
    );
  });

  it('[object_store: Indexer] property: after every event the parent index equals the one recomputed from the cached objects', () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const { store, logger } = newStore();
        for (const event of events) {
          const before = logger.entries().length;
          store.apply(event);
          checkInvariants(store, keyMap);
          // Every object the key map could not map was logged, once, and nothing else was.
          expect(logger.entries().length - before).toBe(unmappableIn(event));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('[object_store: EnqueueRequestForOwner] property: the affected set contains every parent whose member set changed, and no parent that had no members before or after', () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const { store } = newStore();
        for (const event of events) {
          const before = memberSets(store);
          const affected = store.apply(event);
          const after = memberSets(store);
          for (const parent of new Set([...before.keys(), ...after.keys()])) {
            if (!sameMembers(before.get(parent), after.get(parent))) {
              expect(affected.has(parent), `parent ${parent} changed but was not returned`).toBe(true);
            }
          }
          for (const parent of affected) expect(before.has(parent) || after.has(parent)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("[object_store: DeltaFIFO] property: the store agrees with a plain-Map model of last-write-wins, and the affected set is exactly the model's", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const { store } = newStore();
        const model = new Map<string, { object: Obj; parent: string }>();
        const upsert = (key: string, object: Obj, out: Set<string>): void => {
          const previous = model.get(key)?.parent;
          const parent = mapped(object);
          if (parent === undefined) model.delete(key);
          else model.set(key, { object, parent });
          if (previous !== undefined) out.add(previous);
          if (parent !== undefined) out.add(parent);
        };
        for (const event of events) {
          const expected = new Set<string>();
          if (event.type === 'upsert') upsert(event.key, event.object, expected);
          else if (event.type === 'delete') {
            const previous = model.get(event.key)?.parent;
            model.delete(event.key);
            if (previous !== undefined) expected.add(previous);
          } else if (event.type === 'replace') {
            for (const [key, entry] of [...model]) {
              if (!event.objects.has(key)) {
                model.delete(key);
                expected.add(entry.parent);
              }
            }
            for (const [key, object] of event.objects) upsert(key, object, expected);
          }
          expect(new Set(store.apply(event))).toEqual(expected);
          expect(store.snapshot()).toEqual(new Map([...model].map(([k, e]) => [k, e.object])));
          for (const [key, entry] of model) expect(store.parentsOf(key)).toEqual([entry.parent]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
