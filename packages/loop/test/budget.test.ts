import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { settle } from '@reconcile-loop/test-support';
import { ManualClock } from '@reconcile-loop/primitives';
import { InProcessSource, ReconcileLoop } from '../src/index.js';
import { controllerHarness, podOf, setOf, type CocoonSet } from './controller-fixtures.js';

const BUDGET = [0, 1_000, 5_000, 30_000];

async function parkedHarness(extra: Parameters<typeof controllerHarness>[0] = {}) {
  const h = controllerHarness({
    sets: [setOf('a', 1, 3), setOf('b', 1)],
    pods: [podOf('a-0', 'a')],
    sources: { resyncPeriodMs: 100_000 },
    body: (key, ctx) => {
      if (key === 'ns/a' && ctx.parent?.spec.replicas !== 9) throw new Error('a webhook rewrites every pod');
      return undefined;
    },
    ...extra,
    retry: { budget: { delaysMs: BUDGET }, ...extra.retry },
  });
  await h.loop.start();
  await settle();
  await h.clock.advanceAsync(36_000);
  return h;
}

const timesOf = (seen: Array<{ key: string; at: number }>, key: string) => seen.filter((s) => s.key === key).map((s) => s.at);

describe('retry budget and dead-letter', () => {
  it('[loop: Retry budget] the schedule 0/1/5/30 s runs exactly, then the key is parked: logged, counted, in health and parked()', async () => {
    const { loop, seen, logger } = await parkedHarness();
    expect(timesOf(seen, 'ns/a')).toEqual([0, 0, 1_000, 6_000, 36_000]);
    expect(loop.parked()).toEqual([{ key: 'ns/a', fingerprint: 3, failures: 5, lastError: expect.any(Error), parkedAt: 36_000 }]);
    const health = loop.health();
    expect(health.parked).toBe(1);
    expect(health.reconciles).toMatchObject({ failed: 5, parked: 1 });
    expect(health.ready.ok).toBe(true);
    expect(health.ready.checks.find((c) => c.name === 'dead-letter')).toEqual({
      name: 'dead-letter',
      ok: true,
      reason: '1 parent keys parked; see parked()',
    });
    const parkedLog = logger.entries.find((e) => e.message.includes('parked (dead-letter)'));
    expect(parkedLog).toMatchObject({ level: 'error', fields: { parentKey: 'ns/a', failures: 5, fingerprint: '3' } });
    await loop.stop();
  });

  it('[loop: Retry budget] a parked key is not run by resync, a member change, a status write or enqueue()', async () => {
    const { loop, seen, clock, pods, sets } = await parkedHarness();
    const before = seen.length;
    pods.upsert(...podOf('a-1', 'a')); // a change of members alone does not lift it (seed 004)
    sets.upsert(...setOf('a', 1, 3, '99')); // a status write: same generation
    loop.enqueue('ns/a');
    await clock.advanceAsync(100_000); // resync
    expect(seen.slice(before).map((s) => s.key)).toEqual(['ns/b']); // only the resync of b
    expect(loop.parked().map((p) => p.key)).toEqual(['ns/a']);
    await loop.stop();
  });

  it('[loop: Retry budget] a spec change (new generation) releases the key with a fresh budget', async () => {
    const { loop, seen, sets, clock } = await parkedHarness();
    const before = seen.length;
    sets.upsert(...setOf('a', 2, 4)); // still failing at generation 4: a whole new budget
    await settle();
    await clock.advanceAsync(36_000);
    expect(timesOf(seen.slice(before), 'ns/a')).toEqual([36_000, 36_000, 37_000, 42_000, 72_000]);
    expect(loop.parked()).toMatchObject([{ key: 'ns/a', fingerprint: 4, failures: 5 }]);
    expect(loop.health().reconciles).toMatchObject({ parked: 2, released: 1 });
    sets.upsert(...setOf('a', 9, 5)); // fixed
    await settle();
    expect(loop.parked()).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ key: 'ns/a', parent: 9 });
    await loop.stop();
  });

  it('[loop: Retry budget] release(key) lifts it by hand and queues it; release of an unparked key is false', async () => {
    const { loop, seen, clock } = await parkedHarness();
    expect(loop.release('ns/b')).toBe(false);
    const before = seen.length;
    expect(loop.release('ns/a')).toBe(true);
    await settle();
    await clock.advanceAsync(0);
    expect(timesOf(seen.slice(before), 'ns/a')).toEqual([36_000, 36_000]); // fresh budget: the 0 ms retry again
    await clock.advanceAsync(1_000);
    expect(timesOf(seen.slice(before), 'ns/a')).toEqual([36_000, 36_000, 37_000]);
    await loop.stop();
  });

  it('[loop: Retry budget] deleting the parent releases its key, so the deletion reaches reconcile', async () => {
    const { loop, seen, sets } = await parkedHarness();
    sets.delete('ns/a');
    await settle();
    expect(seen.at(-1)).toMatchObject({ key: 'ns/a', parent: undefined, pods: ['ns/a-0'] });
    await loop.stop();
  });

  it('[loop: Retry budget] a user fingerprint decides what releases (here: replicas), and a throwing one is logged, never loses the key', async () => {
    const { loop, seen, sets, logger } = await parkedHarness({
      retry: {
        fingerprint: (parent) => {
          if (parent?.spec.replicas === 7) throw new Error('bad fingerprint');
          return parent?.spec.replicas;
        },
      },
    });
    expect(loop.parked()).toMatchObject([{ key: 'ns/a', fingerprint: 1 }]);
    sets.upsert(...setOf('a', 1, 8)); // new generation, same replicas: stays parked
    await settle();
    expect(loop.parked()).toHaveLength(1);
    const before = seen.length;
    sets.upsert(...setOf('a', 7, 9));
    await settle();
    expect(seen.slice(before).map((s) => s.parent)).toContain(7);
    expect(logger.entries.some((e) => e.message.startsWith('fingerprint unusable'))).toBe(true);
    await loop.stop();
  });

  it('[loop: Retry budget] the queue lets a key go only once its outcome is booked: at its done the park is counted, and a dirty re-add of the parked key is turned away (with and without a reconcile timeout)', async () => {
    for (const reconcileTimeoutMs of [undefined, 60_000]) {
      const clock = new ManualClock();
      const source = new InProcessSource<{ metadata: { generation: number; resourceVersion: string } }>('sets', [
        ['a', { metadata: { generation: 1, resourceVersion: '1' } }],
      ]);
      const calls: number[] = [];
      const atDone: Array<{ failed: number; parked: number }> = [];
      let fail!: (error: Error) => void;
      const loop: ReconcileLoop<{ metadata: { generation: number; resourceVersion: string } }, string> = new ReconcileLoop({
        source,
        keyMap: (_object, key) => key,
        clock,
        sources: { resyncPeriodMs: 0 },
        controller: { concurrency: 2, reconcileTimeoutMs },
        retry: { budget: { delaysMs: [] } }, // the first failure parks
        observer: {
          queue: { onDone: () => void atDone.push({ failed: loop.health().reconciles.failed, parked: loop.health().parked }) },
        },
        reconcile: () => {
          calls.push(clock.now());
          return new Promise<void>((_resolve, reject) => (fail = reject));
        },
      });
      await loop.start();
      await settle();
      expect(calls).toHaveLength(1);
      // A status write while the call runs: a dirty re-add of the key at the same generation.
      source.upsert('a', { metadata: { generation: 1, resourceVersion: '2' } });
      await settle();
      fail(new Error('a webhook rewrites every pod'));
      await settle();
      const where = `reconcileTimeoutMs ${reconcileTimeoutMs}`;
      // Booked before the key was let go (before, done came first and the booking a microtask later).
      expect(atDone[0], where).toEqual({ failed: 1, parked: 1 });
      // The re-add reached the idle worker with the park already booked: same fingerprint, turned away.
      expect(calls, where).toHaveLength(1);
      expect(loop.parked().map((p) => p.key)).toEqual(['a']);
      await loop.stop();
    }
  });

  it('[loop: Retry budget] property: any budget runs its exact schedule, parks after it, and only a fingerprint change releases', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.constantFrom('member', 'status', 'enqueue', 'resync', 'spec'), { maxLength: 6 }),
        async (delays, pokes) => {
          let generation = 1;
          const h = controllerHarness({
            sets: [setOf('a', 1, generation)],
            retry: { budget: { delaysMs: delays } },
            sources: { resyncPeriodMs: 1_000_000 },
            body: () => {
              throw new Error('always');
            },
          });
          await h.loop.start();
          await settle();
          const total = delays.reduce((x, y) => x + y, 0);
          await h.clock.advanceAsync(total);
          let expected = 0;
          const schedule = [0, ...delays.map((d) => (expected += d))];
          expect(h.seen.map((s) => s.at)).toEqual(schedule);
          expect(h.loop.parked().map((p) => p.key)).toEqual(['ns/a']);
          for (const poke of pokes) {
            const runsBefore = h.seen.length;
            if (poke === 'member') h.pods.upsert(...podOf(`a-${runsBefore}`, 'a'));
            if (poke === 'status') h.sets.upsert(...setOf('a', 1, generation, `s${runsBefore}`));
            if (poke === 'enqueue') h.loop.enqueue('ns/a');
            if (poke === 'resync') await h.clock.advanceAsync(1_000_000);
            if (poke === 'spec') h.sets.upsert(...setOf('a', 1, ++generation));
            await settle();
            if (poke === 'spec') {
              expect(h.seen.length).toBe(runsBefore + 1); // released: runs at once, first failure of a new budget
              await h.clock.advanceAsync(total);
              expect(h.loop.parked()).toMatchObject([{ key: 'ns/a', fingerprint: generation }]);
            } else {
              expect(h.seen.length).toBe(runsBefore);
            }
          }
          await h.loop.stop();
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('dead-letter fingerprints with identity', () => {
  const setWithUid = (uid: string, replicas: number, generation: number, resourceVersion: string): [string, CocoonSet] => [
    'ns/a',
    { metadata: { name: 'a', namespace: 'ns', uid, generation, resourceVersion }, spec: { replicas } },
  ];

  it('[loop: Dead-letter identity] a parent deleted and re-created under the same name at generation 1 while the watch is down is released by the relist', async () => {
    const h = controllerHarness({
      sets: [setWithUid('uid-1', 1, 1, '1')],
      retry: { budget: { delaysMs: [0] } },
      sourceRetry: { initialMs: 10, maxMs: 30_000 },
      body: (_, ctx) => {
        if (ctx.parent?.spec.replicas !== 9) throw new Error('a webhook rewrites every pod');
      },
    });
    await h.loop.start();
    await settle();
    await h.clock.advanceAsync(0);
    expect(h.loop.parked()).toMatchObject([{ key: 'ns/a', fingerprint: 'uid-1:1' }]);
    const before = h.seen.length;
    h.sets.disconnect(); // a 410 and a relist: the delete is never seen, only the new object
    h.sets.delete('ns/a');
    h.sets.upsert(...setWithUid('uid-2', 9, 1, '7'));
    await h.clock.advanceAsync(10);
    await settle();
    expect(h.seen.slice(before).map((s) => s.parent)).toEqual([9]);
    expect(h.loop.parked()).toEqual([]);
    await h.loop.stop();
  });

  interface ConfigMap {
    metadata: { name: string; namespace: string; uid: string; resourceVersion: string; labels?: Record<string, string> };
    data: { mode: string };
    status?: { lastError: string };
  }
  const cm = (uid: string, mode: string, resourceVersion: string, extra: Partial<ConfigMap> = {}): ConfigMap => ({
    metadata: { name: 'cfg', namespace: 'ns', uid, resourceVersion },
    data: { mode },
    ...extra,
  });

  async function parkedConfigMap() {
    const clock = new ManualClock();
    const maps = new InProcessSource<ConfigMap>('configmaps', [['ns/cfg', cm('u1', 'bad', '1')]], {
      retry: { initialMs: 10, maxMs: 30_000 },
    });
    const seen: Array<string | undefined> = [];
    const loop = new ReconcileLoop<ConfigMap, string>({
      source: maps,
      keyMap: (_, key) => key,
      retry: { budget: { delaysMs: [0] } },
      reconcile: (_, ctx) => {
        seen.push(ctx.parent === undefined ? undefined : `${ctx.parent.metadata.uid}/${ctx.parent.data.mode}`);
        if (ctx.parent?.data.mode === 'bad') throw new Error('bad mode');
      },
      clock,
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(0);
    expect(loop.parked().map((p) => p.key)).toEqual(['ns/cfg']);
    expect(seen).toEqual(['u1/bad', 'u1/bad']);
    seen.length = 0;
    return { loop, maps, seen, clock };
  }

  it('[loop: Dead-letter identity] a kind without generation (a ConfigMap) stays parked through status and label writes and is released by a data fix', async () => {
    const { loop, maps, seen } = await parkedConfigMap();
    maps.upsert('ns/cfg', cm('u1', 'bad', '2', { status: { lastError: 'bad mode' } })); // status-only write
    maps.upsert('ns/cfg', cm('u1', 'bad', '3', { metadata: { ...cm('u1', 'bad', '3').metadata, labels: { seen: 'yes' } } }));
    loop.enqueue('ns/cfg');
    await settle();
    expect(seen).toEqual([]);
    maps.upsert('ns/cfg', cm('u1', 'good', '4'));
    await settle();
    expect(seen).toEqual(['u1/good']);
    expect(loop.parked()).toEqual([]);
    await loop.stop();
  });

  it('[loop: Dead-letter identity] a parked ConfigMap: its deletion reaches reconcile; a re-create with the same data under a new uid is released by the relist', async () => {
    const { loop, maps, seen, clock } = await parkedConfigMap();
    maps.delete('ns/cfg');
    await settle();
    expect(seen).toEqual([undefined]);
    maps.upsert('ns/cfg', cm('u2', 'bad', '5')); // back, still bad: a fresh budget, parked again at its new identity
    await settle();
    await clock.advanceAsync(0);
    expect(seen).toEqual([undefined, 'u2/bad', 'u2/bad']);
    maps.disconnect();
    maps.delete('ns/cfg');
    maps.upsert('ns/cfg', cm('u3', 'bad', '6')); // same data, new identity, the delete never seen
    await clock.advanceAsync(10);
    await settle();
    expect(seen.at(-1)).toBe('u3/bad');
    await loop.stop();
  });
});
