/**
 * Create and delete filters beside update filters (controller-runtime's `CreateFunc` / `DeleteFunc` /
 * `UpdateFunc` predicates, issue 23 item 5): wired through the loop's source options, and a property
 * holding the one store, in each configuration the loop builds (primary, owned, mapped by a
 * function), with the source's filters as its `admit`, to a reference model of which parents each
 * event may reach.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ObjectStore, type SourceEvent } from '@reconcile-loop/object-store';
import { silentLogger } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { annotationsChanged, labelsChanged, type ObjectFilter, type UpdateFilter } from '../src/index.js';
import { admission, type EventFilters } from '../src/filters.js';
import { controllerHarness, podOf, setOf, type Pod } from './controller-fixtures.js';

const notCanary: ObjectFilter<Pod> = (pod) => !pod.metadata.name.startsWith('canary');

describe('create and delete filters', () => {
  it('[loop: Predicates] a secondary createFilter / deleteFilter that refuses keeps the object cached (or removed) and enqueues nothing; an admitted one reaches its parent', async () => {
    const { loop, pods, seen, keys } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      podOptions: { createFilter: notCanary, deleteFilter: notCanary },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.upsert(...podOf('canary-0', 'a'));
    await settle();
    expect(keys()).toEqual([]);
    expect(loop.stores.pods.parentsOf('ns/canary-0')).toEqual(['ns/a']); // cached and mapped
    pods.upsert(...podOf('canary-0', 'a', { resourceVersion: '2' })); // an update is not a create: it passes
    await settle();
    expect(keys()).toEqual(['ns/a']);
    seen.length = 0;
    pods.delete('ns/canary-0');
    await settle();
    expect(keys()).toEqual([]);
    expect(loop.stores.pods.has('ns/canary-0')).toBe(false);
    pods.upsert(...podOf('b-0', 'b'));
    await settle();
    expect(seen).toMatchObject([{ key: 'ns/b', pods: ['ns/b-0'] }]);
    seen.length = 0;
    pods.delete('ns/b-0');
    await settle();
    expect(seen).toMatchObject([{ key: 'ns/b', pods: [] }]);
    await loop.stop();
  });

  it("[loop: Predicates] a relist's new objects are creates and its synthesised deletions deletes, each judged by its filter", async () => {
    const { loop, pods, seen, keys } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1), setOf('c', 1)],
      pods: [podOf('canary-c', 'c'), podOf('b-0', 'b')],
      podOptions: { createFilter: notCanary, deleteFilter: notCanary },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.replace([podOf('canary-a', 'a')]); // canary-a created, canary-c and b-0 deleted
    await settle();
    expect(keys()).toEqual(['ns/b']);
    expect(loop.stores.pods.keys()).toEqual(['ns/canary-a']);
    await loop.stop();
  });

  it('[loop: Predicates] primary createFilter / deleteFilter: a refused parent create or delete is not reconciled, the store holds the truth', async () => {
    const big = (set: { spec: { replicas: number } }): boolean => set.spec.replicas > 1;
    const { loop, sets, keys, seen } = controllerHarness({ sets: [], createFilter: big, deleteFilter: big });
    await loop.start();
    await settle();
    sets.upsert(...setOf('small', 1));
    sets.upsert(...setOf('large', 3));
    await settle();
    expect(keys()).toEqual(['ns/large']);
    expect(loop.store.has('ns/small')).toBe(true);
    seen.length = 0;
    sets.delete('ns/small');
    sets.delete('ns/large');
    await settle();
    expect(keys()).toEqual(['ns/large']);
    expect(loop.store.size).toBe(0);
    await loop.stop();
  });

  it.each([
    ['create', 'createFilter', []],
    ['update', 'updateFilter', [podOf('a-0', 'a')]],
  ] as const)(
    '[loop: Predicates] a %s filter that throws lets the event through and logs it with the source and object key',
    async (event, option, pods) => {
      const {
        loop,
        pods: podSource,
        keys,
        seen,
        logger,
      } = controllerHarness({
        sets: [setOf('a', 1)],
        pods: [...pods],
        podOptions: {
          [option]: () => {
            throw new Error('bad filter');
          },
        },
      });
      await loop.start();
      await settle();
      seen.length = 0;
      podSource.upsert(...podOf('a-0', 'a'));
      await settle();
      expect(keys()).toEqual(['ns/a']);
      expect(logger.entries.find((e) => e.message.startsWith(`${event} filter threw`))?.fields).toMatchObject({
        source: 'pods',
        objectKey: 'ns/a-0',
      });
      await loop.stop();
    },
  );

  it('[loop: Predicates] a filter that is not a function is an OptionsError naming its option', () => {
    expect(() => controllerHarness({ deleteFilter: 'no' as never })).toThrow(/deleteFilter must be a function/);
    expect(() => controllerHarness({ podOptions: { createFilter: 1 as never } })).toThrow(
      /secondary\.pods\.createFilter must be a function/,
    );
  });

  it("[loop: Predicates] labelsChanged and annotationsChanged pass only a change of their map (controller-runtime's LabelChangedPredicate, AnnotationChangedPredicate); absent is empty", () => {
    const at = (labels?: Record<string, string>, annotations?: Record<string, string>) => ({ metadata: { labels, annotations } });
    expect(labelsChanged(at({ app: 'web' }), at({ app: 'web' }, { note: 'x' }))).toBe(false);
    expect(labelsChanged(at({ app: 'web' }), at({ app: 'db' }))).toBe(true);
    expect(labelsChanged(at({ app: 'web' }), at({ app: 'web', tier: 'front' }))).toBe(true);
    expect(labelsChanged(at({ app: 'web', tier: 'front' }), at({ app: 'web', zone: 'front' }))).toBe(true);
    expect(labelsChanged(at(undefined), at({}))).toBe(false);
    expect(annotationsChanged(at({ a: '1' }, { note: 'x' }), at({ a: '2' }, { note: 'x' }))).toBe(false);
    expect(annotationsChanged(at(undefined, { note: 'x' }), at(undefined, { note: 'y' }))).toBe(true);
    expect(annotationsChanged(at(), at(undefined, { note: 'y' }))).toBe(true);
  });
});

// --- the property: both writers against a reference model -----------------------------------------

/** An object of the property: its parent (`owner`), a version, a uid (a new one is a re-creation). */
interface Obj {
  readonly owner: string;
  readonly v: number;
  readonly metadata: { readonly uid: string };
}
const KEYS = ['k0', 'k1', 'k2', 'k3'] as const;
const objArb = fc.record({
  owner: fc.constantFrom('a', 'b', 'c'),
  v: fc.integer({ min: 0, max: 5 }),
  metadata: fc.record({ uid: fc.constantFrom('u1', 'u2') }),
});
const eventArb: fc.Arbitrary<SourceEvent<Obj>> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ type: fc.constant('upsert' as const), key: fc.constantFrom(...KEYS), object: objArb }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('delete' as const), key: fc.constantFrom(...KEYS) }) },
  {
    weight: 1,
    arbitrary: fc
      .uniqueArray(fc.tuple(fc.constantFrom(...KEYS), objArb), { selector: ([k]) => k, maxLength: KEYS.length })
      .map((world) => ({ type: 'replace' as const, objects: new Map(world) })),
  },
);
const eventsArb = fc.array(eventArb, { minLength: 1, maxLength: 25 });

const create: ObjectFilter<Obj> = (o) => o.v % 2 === 0;
const remove: ObjectFilter<Obj> = (o) => o.v % 3 !== 0;
const update: UpdateFilter<Obj> = (a, b) => a.v !== b.v;
const filters: EventFilters<Obj> = { create, update, delete: remove };

/** The rule the loop documents: which parents one object's change reaches. */
function reach(previous: Obj | undefined, next: Obj | undefined, out: Set<string>): 'admitted' | 'refused' | 'none' {
  if (previous === undefined && next === undefined) return 'none';
  const moved = previous !== undefined && next !== undefined && previous.owner !== next.owner;
  const admitted =
    moved ||
    (previous === undefined
      ? create(next!)
      : next === undefined
        ? remove(previous)
        : previous.metadata.uid !== next.metadata.uid
          ? remove(previous) || create(next)
          : update(previous, next));
  if (!admitted) return 'refused';
  if (previous !== undefined) out.add(previous.owner);
  if (next !== undefined) out.add(next.owner);
  return 'admitted';
}

/** Runs `events` through a writer and the model; returns how many object changes the filters refused. */
function check(apply: (event: SourceEvent<Obj>) => ReadonlySet<string>, events: readonly SourceEvent<Obj>[]): number {
  const model = new Map<string, Obj>();
  let refused = 0;
  for (const event of events) {
    const want = new Set<string>();
    const count = (r: ReturnType<typeof reach>): void => void (r === 'refused' && refused++);
    if (event.type === 'upsert') {
      count(reach(model.get(event.key), event.object, want));
      model.set(event.key, event.object);
    } else if (event.type === 'delete') {
      count(reach(model.get(event.key), undefined, want));
      model.delete(event.key);
    } else if (event.type === 'replace') {
      for (const [key, object] of event.objects) count(reach(model.get(key), object, want));
      for (const [key, object] of model) if (!event.objects.has(key)) count(reach(object, undefined, want));
      model.clear();
      for (const [key, object] of event.objects) model.set(key, object);
    }
    expect([event, [...apply(event)].sort()]).toEqual([event, [...want].sort()]);
  }
  return refused;
}

const admit = admission(filters, 'objs', silentLogger);
/** The store as `buildStores` configures it for each role. */
const writers = {
  primary: () => new ObjectStore<Obj, string>({ keyMap: (o) => o.owner, admit }),
  secondary: () => new ObjectStore<Obj, string>({ keyMap: (o) => o.owner, unmapped: 'keep', admit }),
  'secondary with a map function': () =>
    new ObjectStore<Obj, string>({ keyMap: (o) => o.owner, unmapped: 'keep', remap: true, admit }),
};

describe('create, update and delete filters: property', () => {
  it.each(Object.keys(writers))(
    '[loop: Predicates] property (%s store): every event reaches exactly the parents the model admits: a refused create, update or delete reaches none, a move always both',
    (name) => {
      const make = writers[name as keyof typeof writers];
      fc.assert(
        fc.property(eventsArb, (events) => {
          const writer = make();
          check((event) => writer.apply(event), events);
        }),
        { numRuns: 300 },
      );
    },
  );

  it('[loop: Predicates] the property is not vacuous and can fail: on a fixed sample the filters refuse many changes, and a writer that ignores them is caught', () => {
    const sample = fc.sample(eventsArb, { seed: 23, numRuns: 50 });
    let refused = 0;
    for (const events of sample) {
      const writer = writers.primary();
      refused += check((event) => writer.apply(event), events);
    }
    expect(refused).toBeGreaterThan(50);
    // The same stores with no filters: the model still refuses, the writers do not.
    const ignoring = [
      () => new ObjectStore<Obj, string>({ keyMap: (o) => o.owner }),
      () =>
        new ObjectStore<Obj, string>({ keyMap: (o) => o.owner, unmapped: 'keep', admit: admission({}, 'objs', silentLogger) }),
    ];
    for (const make of ignoring) {
      expect(() =>
        sample.forEach((events) => {
          const writer = make();
          check((event) => writer.apply(event), events);
        }),
      ).toThrow();
    }
  });
});
