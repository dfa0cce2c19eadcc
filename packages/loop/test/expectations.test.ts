import { OptionsError } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { ControlledSource, recordingLogger, settle } from '@reconcile-loop/test-support';
import {
  ReconcileLoop,
  replaceEvent,
  type LoopSnapshot,
  type ObjectKey,
  type ReconcileContext,
  type ReconcileLoopObserver,
  type SourceEvent,
} from '../src/index.js';
import { DEFAULT_EXPECTATIONS_TTL_MS, Expectations } from '../src/expectations.js';
import { NS, podOf, setOf, type CocoonSet, type Pod } from './controller-fixtures.js';

/** ControlledSource is always named "controlled"; a loop needs distinct source names. */
function named<S extends object>(source: S, name: string): S {
  Object.defineProperty(source, 'name', { value: name });
  return source;
}

/**
 * A CocoonSet controller over a fake apiserver (`world`) whose pod watch is delivered by hand
 * (`deliver`), so the pod cache lags the controller's own writes for as long as a test wants.
 * `conflicts` counts the stale-cache symptoms: a create of a pod that exists (AlreadyExists, the
 * double-create) and a delete of one already gone (NotFound).
 */
/** Expectations over one empty `pods` cache, alone (no loop): for the recent-events log's rules. */
function podExpectations(): Expectations<string> {
  return new Expectations<string>({
    stores: new Map([['pods', new Map<string, unknown>()]]),
    clock: new ManualClock(),
    logger: recordingLogger(),
    ttlMs: DEFAULT_EXPECTATIONS_TTL_MS,
    onReady: () => {},
  });
}

/**
 * A loop whose first reconcile of `ns/a` waits for its write's response (`respond()`) and then
 * records it with `write(ctx, ownedAtCall)`; the pods source is driven by hand meanwhile, so the
 * watch can beat the response. `seen`: the owned pods each call found.
 */
async function lateResponse(
  initialPods: Array<[ObjectKey, Pod]>,
  write: (ctx: ReconcileContext<CocoonSet, string, { pods: Pod }>, owned: Pod[]) => void,
) {
  const sets = named(new ControlledSource<CocoonSet>(), 'cocoonsets');
  const pods = named(new ControlledSource<Pod>(), 'pods');
  const seen: Pod[][] = [];
  let respond: (() => void) | undefined;
  const loop = new ReconcileLoop<CocoonSet, string, { pods: Pod }>({
    source: sets,
    keyMap: (_, key) => key,
    secondary: { pods: { source: pods, owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' } } },
    clock: new ManualClock(),
    logger: recordingLogger(),
    reconcile: async (_key, ctx) => {
      const owned = [...ctx.owned('pods').values()];
      seen.push(owned);
      if (seen.length > 1) return;
      await new Promise<void>((resolve) => (respond = resolve)); // the write's response, late
      write(ctx, owned);
    },
  });
  const starting = loop.start();
  await settle();
  sets.last.push(replaceEvent([setOf('a', 1)]));
  pods.last.push(replaceEvent(initialPods));
  await starting;
  await settle();
  expect(respond).toBeDefined();
  return { loop, sets, pods, seen, respond: () => respond!() };
}

function harness(
  options: {
    expect?: boolean;
    replicas?: number;
    expectationsTtlMs?: number | undefined;
    probe?: (ctx: ReconcileContext<CocoonSet, string, { pods: Pod }>) => void;
    observer?: ReconcileLoopObserver<string> | undefined;
    /** Record the objects written (each create a new uid) instead of their keys. */
    objects?: boolean;
  } = {},
) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const sets = named(new ControlledSource<CocoonSet>(), 'cocoonsets');
  const pods = named(new ControlledSource<Pod>(), 'pods');
  const world = new Map<ObjectKey, Pod>();
  const inFlight: SourceEvent<Pod>[] = []; // written to the world, not yet seen by the pod cache
  const calls: Array<{ key: string; parent: number | undefined; pods: string[] }> = [];
  const writes: string[] = [];
  let conflicts = 0;
  let uids = 0;
  const useExpectations = options.expect ?? true;
  const loop = new ReconcileLoop<CocoonSet, string, { pods: Pod }>({
    source: sets,
    keyMap: (_, key) => key,
    secondary: { pods: { source: pods, owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' } } },
    clock,
    logger,
    controller: { expectationsTtlMs: options.expectationsTtlMs },
    observer: options.observer,
    reconcile: (key, ctx) => {
      options.probe?.(ctx);
      const owned = ctx.owned('pods');
      calls.push({ key, parent: ctx.parent?.spec.replicas, pods: [...owned.keys()].sort() });
      if (ctx.parent === undefined) return;
      const name = ctx.parent.metadata.name;
      const replicas = ctx.parent.spec.replicas;
      for (let i = 0; i < replicas; i++) {
        const [podKey, pod] = podOf(`${name}-${i}`, name, options.objects ? { uid: `uid-${++uids}` } : {});
        if (owned.has(podKey)) continue;
        writes.push(`create ${podKey}`);
        if (world.has(podKey)) conflicts += 1;
        else {
          world.set(podKey, pod);
          inFlight.push({ type: 'upsert', key: podKey, object: pod });
        }
        if (useExpectations) ctx.expect('pods').creations(options.objects ? pod : podKey);
      }
      for (const [podKey, pod] of owned) {
        if ((pod.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined) continue; // on its way out
        if (Number(podKey.slice(podKey.lastIndexOf('-') + 1)) < replicas) continue;
        writes.push(`delete ${podKey}`);
        if (!world.has(podKey)) conflicts += 1;
        else {
          world.delete(podKey);
          inFlight.push({ type: 'delete', key: podKey });
        }
        if (useExpectations) ctx.expect('pods').deletions(options.objects ? pod : podKey);
      }
    },
  });
  const start = async (initialPods: Array<[ObjectKey, Pod]> = []): Promise<void> => {
    for (const [key, pod] of initialPods) world.set(key, pod);
    const starting = loop.start();
    await settle();
    sets.last.push(replaceEvent([setOf('a', options.replicas ?? 2)]));
    pods.last.push(replaceEvent(initialPods));
    await starting;
    await settle();
  };
  /** The pod watch catches up by `n` events (all by default). */
  const deliver = async (n = Infinity): Promise<void> => {
    for (let i = 0; i < n && inFlight.length > 0; i++) pods.last.push(inFlight.shift()!);
    await settle();
  };
  /** A CocoonSet event (any update re-drives the parent: no update filter here). */
  const touchSet = async (replicas: number, generation: number): Promise<void> => {
    sets.last.push({ type: 'upsert', key: `${NS}/a`, object: setOf('a', replicas, generation)[1] });
    await settle();
  };
  return {
    clock,
    logger,
    sets,
    pods,
    world,
    inFlight,
    calls,
    writes,
    loop,
    start,
    deliver,
    touchSet,
    conflicts: () => conflicts,
  };
}

describe('read your writes (expectations)', () => {
  it('[loop: Read your writes] without expectations a parent event before the cache sees the create double-creates (the problem)', async () => {
    const h = harness({ expect: false });
    await h.start();
    expect(h.writes).toEqual(['create ns/a-0', 'create ns/a-1']);
    await h.touchSet(2, 2); // the cache has not seen a-0 / a-1 yet
    expect(h.writes).toEqual(['create ns/a-0', 'create ns/a-1', 'create ns/a-0', 'create ns/a-1']);
    expect(h.conflicts()).toBe(2);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a parent event before the cache sees its creates does not run reconcile; the observation does, once, and it sees the children', async () => {
    const h = harness();
    await h.start();
    expect(h.calls).toHaveLength(1);
    await h.touchSet(2, 2);
    expect(h.calls).toHaveLength(1); // deferred: a-0 and a-1 are not in the pod cache yet
    await h.deliver(1); // a-0 seen, a-1 not: still waiting
    expect(h.calls).toHaveLength(1);
    await h.deliver();
    expect(h.calls).toHaveLength(2);
    expect(h.calls[1]).toEqual({ key: 'ns/a', parent: 2, pods: ['ns/a-0', 'ns/a-1'] });
    expect(h.writes).toEqual(['create ns/a-0', 'create ns/a-1']);
    expect(h.conflicts()).toBe(0);
    await h.loop.stop();
  });

  it('[loop: Read your writes] unobserved expectations expire after the TTL (5 min by default): reconcile runs anyway and a warning names the writes', async () => {
    expect(DEFAULT_EXPECTATIONS_TTL_MS).toBe(300_000);
    const h = harness();
    await h.start();
    await h.touchSet(2, 2);
    await h.clock.advanceAsync(DEFAULT_EXPECTATIONS_TTL_MS - 1);
    await settle();
    expect(h.calls).toHaveLength(1);
    await h.clock.advanceAsync(1);
    await settle();
    expect(h.calls).toHaveLength(2); // ran on the stale cache: the TTL is the bound on waiting
    const warning = h.logger.entries.find((e) => e.level === 'warn' && e.message.startsWith('expectations expired'));
    expect(warning?.fields).toMatchObject({
      parentKey: 'ns/a',
      ttlMs: 300_000,
      unobserved: ['create pods:ns/a-0', 'create pods:ns/a-1'],
    });
    await h.loop.stop();
  });

  it("[loop: Read your writes] health() and the observer's snapshot show the parents held back by unobserved writes and the oldest one's wait", async () => {
    let snapshot!: () => LoopSnapshot;
    const h = harness({ observer: { bind: (binding) => void (snapshot = binding.snapshot) } });
    expect(h.loop.health().expectations).toEqual({ pending: 0, oldestMs: undefined });
    await h.start(); // a's two creates recorded at t=0, not yet in the pod cache
    await h.clock.advanceAsync(2_000);
    expect(h.loop.health().expectations).toEqual({ pending: 1, oldestMs: 2_000 });
    expect(snapshot().expectations).toEqual({ pending: 1, oldestMs: 2_000 });
    await h.deliver(); // the cache observes both
    expect(h.loop.health().expectations).toEqual({ pending: 0, oldestMs: undefined });
    expect(snapshot().expectations).toEqual({ pending: 0, oldestMs: undefined });
    await h.loop.stop();
  });

  it('[loop: Read your writes] expectationsTtlMs is validated and applied', async () => {
    expect(() => harness({ expectationsTtlMs: 0 })).toThrow(OptionsError);
    const h = harness({ expectationsTtlMs: 1_000 });
    await h.start();
    await h.touchSet(2, 2);
    await h.clock.advanceAsync(1_000);
    await settle();
    expect(h.calls).toHaveLength(2);
    await h.loop.stop();
  });

  it('[loop: Read your writes] delete expectations: a reconcile before the cache drops the deleted pods is deferred until it does', async () => {
    const h = harness({ replicas: 1 });
    await h.start([podOf('a-0', 'a'), podOf('a-1', 'a'), podOf('a-2', 'a')]);
    expect(h.writes).toEqual(['delete ns/a-1', 'delete ns/a-2']);
    await h.touchSet(1, 2);
    expect(h.calls).toHaveLength(1);
    await h.deliver();
    expect(h.calls.at(-1)).toEqual({ key: 'ns/a', parent: 1, pods: ['ns/a-0'] });
    expect(h.writes).toEqual(['delete ns/a-1', 'delete ns/a-2']); // no NotFound second delete
    expect(h.conflicts()).toBe(0);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a delete is observed when the cache sees the pod terminating (deletionTimestamp set), as DeletionObserved counts it', async () => {
    const h = harness({ replicas: 1 });
    await h.start([podOf('a-0', 'a'), podOf('a-1', 'a')]);
    expect(h.writes).toEqual(['delete ns/a-1']);
    await h.touchSet(1, 2);
    expect(h.calls).toHaveLength(1);
    const [key, pod] = podOf('a-1', 'a', { resourceVersion: '2' });
    h.pods.last.push({
      type: 'upsert',
      key,
      object: { ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } as Pod['metadata'] },
    });
    await settle();
    expect(h.calls).toHaveLength(2);
    expect(h.writes).toEqual(['delete ns/a-1']);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a deleted parent drops its expectations: it is reconciled at once and nothing expires later', async () => {
    const h = harness();
    await h.start();
    h.sets.last.push({ type: 'delete', key: 'ns/a' });
    await settle();
    expect(h.calls.at(-1)).toEqual({ key: 'ns/a', parent: undefined, pods: [] });
    await h.clock.advanceAsync(DEFAULT_EXPECTATIONS_TTL_MS);
    await settle();
    expect(h.logger.entries.filter((e) => e.level === 'warn')).toEqual([]);
    expect(h.calls).toHaveLength(2);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a write the cache saw before it was recorded sets no expectation; an unknown source or a non-string key is a typed error', async () => {
    const errors: unknown[] = [];
    const h = harness({
      probe: (ctx) => {
        for (const misuse of [() => ctx.expect('nodes' as 'pods'), () => ctx.expect('pods').creations(7 as unknown as string)]) {
          try {
            misuse();
          } catch (error) {
            errors.push(error);
          }
        }
        ctx.expect('pods').creations('ns/a-0'); // AlreadyExists: gates only while the cache lacks it
      },
    });
    await h.start();
    expect(errors).toHaveLength(2);
    errors.splice(2);
    expect(errors.every((e) => e instanceof OptionsError)).toBe(true);
    expect(String(errors[0])).toContain('ctx.expect("nodes")');
    await h.deliver();
    expect(h.calls).toHaveLength(2); // the observation of both creates
    // Now the cache holds a-0: the probe's record of it (an AlreadyExists) does not gate the parent.
    await h.touchSet(2, 2);
    expect(h.calls).toHaveLength(3);
    await h.touchSet(2, 3);
    expect(h.calls).toHaveLength(4);
    expect(h.writes).toEqual(['create ns/a-0', 'create ns/a-1']);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a create the watch reported, and then a delete of it, both before the create returned: no expectation, the delete re-drives the parent at once', async () => {
    const [podKey, pod] = podOf('a-0', 'a', { uid: 'uid-ours' });
    // The object the create returned, uid and all.
    const h = await lateResponse([], (ctx) => ctx.expect('pods').creations(pod));
    // The watch beats the response: ADDED, then someone else's DELETE, both applied before the record.
    h.pods.last.push({ type: 'upsert', key: podKey, object: pod });
    h.pods.last.push({ type: 'delete', key: podKey });
    await settle();
    h.respond();
    await settle();
    // Presence alone would wait 5 min for a pod that came and went; the events logged since the
    // context was built show this uid observed, so the queued delete runs now.
    expect(h.seen.map((owned) => owned.length)).toEqual([0, 0]);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a delete whose pod the cache saw replaced by a newer one of the same name before the record (another writer re-created it) does not hold the parent for the TTL: the next event reconciles it', async () => {
    const [podKey, old] = podOf('a-0', 'a', { uid: 'uid-old' });
    const [, newer] = podOf('a-0', 'a', { uid: 'uid-newer', resourceVersion: '2' });
    // The pod this reconcile read and deleted (its delete, or its 409, answered late), uid and all.
    const h = await lateResponse([[podKey, old]], (ctx, owned) => ctx.expect('pods').deletions(owned[0]!));
    // Before the record: the old pod's DELETED and a newer pod's ADDED under the same name.
    h.pods.last.push({ type: 'delete', key: podKey });
    h.pods.last.push({ type: 'upsert', key: podKey, object: newer });
    await settle();
    h.respond();
    await settle();
    // The parent is not gated: the pod events queued during the call run it now, and so does a set
    // event after, long before the 5 min TTL (the cache still holds a pod under the deleted name).
    const uids = () => h.seen.map((owned) => owned.map((p) => p.metadata.uid));
    expect(uids()).toEqual([['uid-old'], ['uid-newer']]);
    h.sets.last.push({ type: 'upsert', key: `${NS}/a`, object: setOf('a', 1, 2)[1] });
    await settle();
    expect(uids()).toHaveLength(3);
    await h.loop.stop();
  });

  it('[loop: Read your writes] a delete recorded with its object is observed once the cache holds another uid under the name; a bare key waits for the name to be gone', () => {
    const [, newer] = podOf('a-0', 'a', { uid: 'uid-newer' });
    const [, old] = podOf('a-0', 'a', { uid: 'uid-old' });
    const store = new Map<string, unknown>([['ns/a-0', newer]]);
    const e = new Expectations<string>({
      stores: new Map([['pods', store]]),
      clock: new ManualClock(),
      logger: recordingLogger(),
      ttlMs: DEFAULT_EXPECTATIONS_TTL_MS,
      onReady: () => {},
    });
    const since = e.open();
    e.recorder('ns/a', 'pods', since).deletions(old); // observed: the cache holds uid-newer, not uid-old
    e.recorder('ns/b', 'pods', since).deletions(newer); // waits: its own uid is still cached
    e.recorder('ns/c', 'pods', since).deletions('ns/a-0'); // waits: a bare key cannot tell the two apart
    expect([e.satisfied('ns/a'), e.satisfied('ns/b'), e.satisfied('ns/c')]).toEqual([true, false, false]);
    store.set('ns/a-0', old); // the cache goes back to the deleted uid (a relist of a stale view): b now observed
    expect([e.satisfied('ns/b'), e.satisfied('ns/c')]).toEqual([true, false]);
    store.delete('ns/a-0');
    expect(e.satisfied('ns/c')).toBe(true);
    e.close();
    e.clear();
  });

  it('[loop: Read your writes] an event of the same name but another uid is not this create: a bare key or an older object deleted during the call keeps presence alone', () => {
    const e = podExpectations();
    const since = e.open();
    const [, older] = podOf('a-0', 'a', { uid: 'uid-older' });
    e.observe('pods', { type: 'upsert', key: 'ns/a-0', object: older });
    e.observe('pods', { type: 'delete', key: 'ns/a-0' }, older);
    e.recorder('ns/a', 'pods', since).creations(podOf('a-0', 'a', { uid: 'uid-ours' })[1]);
    e.recorder('ns/b', 'pods', since).creations('ns/a-0');
    e.recorder('ns/c', 'pods', since).creations(older);
    expect(e.size).toBe(2); // a (another uid) and b (a bare key) wait; c's own uid was seen
    expect(() => e.recorder('ns/d', 'pods', since).creations({ metadata: { name: '' } })).toThrow(OptionsError);
    e.clear();
  });

  it('[loop: Read your writes] the recent-events log keeps 10,000 events: a reconcile older than that falls back to presence alone', () => {
    for (const [others, pending] of [
      [9_999, 0],
      [10_000, 1],
    ] as const) {
      const e = podExpectations();
      const since = e.open();
      const [, pod] = podOf('a-0', 'a', { uid: 'uid-ours' });
      e.observe('pods', { type: 'upsert', key: 'ns/a-0', object: pod });
      e.observe('pods', { type: 'delete', key: 'ns/a-0' }, pod);
      for (let i = 0; i < others; i++) e.observe('pods', { type: 'delete', key: `ns/other-${i}` });
      e.recorder('ns/a', 'pods', since).creations(pod);
      expect(e.size, `${others} later events`).toBe(pending);
      e.clear();
    }
  });

  it('[loop: Read your writes] the recent-events log records only while a reconcile context is open: a recorder used after every context closed keeps presence alone', () => {
    const e = podExpectations();
    const [, pod] = podOf('a-0', 'a', { uid: 'uid-ours' });
    const cameAndWent = (): void => {
      e.observe('pods', { type: 'upsert', key: 'ns/a-0', object: pod });
      e.observe('pods', { type: 'delete', key: 'ns/a-0' }, pod);
    };
    expect(e.recording).toBe(false); // idle: no context, nothing logged
    const first = e.open();
    const second = e.open();
    e.close(); // one of two overlapping contexts settles: the other still consults the log
    expect(e.recording).toBe(true);
    cameAndWent();
    e.recorder('ns/a', 'pods', second).creations(pod);
    expect(e.size).toBe(0); // observed through the log
    e.close();
    expect(e.recording).toBe(false);
    // A recorder used after its call settled: the events since were not logged, so presence decides.
    cameAndWent();
    e.recorder('ns/b', 'pods', first).creations(pod);
    expect(e.size).toBe(1);
    // A context opened later logs again.
    const third = e.open();
    cameAndWent();
    e.recorder('ns/c', 'pods', third).creations(pod);
    expect(e.size).toBe(1);
    e.close();
    e.clear();
  });

  it.each([
    ['keys', false],
    ['objects (uids)', true],
  ])(
    '[loop: Read your writes] never a create of an existing pod nor a delete of a gone one, across arbitrary interleavings of parent events, scale changes and cache delays: writes recorded by %s',
    async (_how, objects) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.constant({ op: 'touch' as const }),
              fc.record({ op: fc.constant('scale' as const), replicas: fc.integer({ min: 0, max: 4 }) }),
              fc.record({ op: fc.constant('deliver' as const), n: fc.integer({ min: 1, max: 3 }) }),
            ),
            { maxLength: 25 },
          ),
          async (steps) => {
            const h = harness({ objects });
            await h.start();
            let replicas = 2;
            let generation = 1;
            for (const step of steps) {
              if (step.op === 'touch') await h.touchSet(replicas, generation);
              else if (step.op === 'scale') await h.touchSet((replicas = step.replicas), ++generation);
              else await h.deliver(step.n);
            }
            await h.deliver();
            await h.touchSet(replicas, generation); // a final event: the loop must converge, not stay deferred
            await h.deliver();
            expect(h.conflicts()).toBe(0);
            expect([...h.world.keys()].sort()).toEqual(Array.from({ length: replicas }, (_, i) => `ns/a-${i}`).sort());
            await h.loop.stop();
          },
        ),
        { numRuns: 60 },
      );
    },
  );
});
