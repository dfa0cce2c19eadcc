import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { settle } from '@reconcile-loop/test-support';
import { controllerHarness, podOf, setOf } from './controller-fixtures.js';

const BUDGET = [0, 1_000, 5_000, 30_000];

async function parkedHarness(extra: Parameters<typeof controllerHarness>[0] = {}) {
  const h = controllerHarness({
    sets: [setOf('a', 1, 3), setOf('b', 1)],
    pods: [podOf('a-0', 'a')],
    retry: { budget: { delaysMs: BUDGET } },
    resyncPeriodMs: 100_000,
    body: (key, ctx) => {
      if (key === 'ns/a' && ctx.parent?.spec.replicas !== 9) throw new Error('a webhook rewrites every pod');
      return undefined;
    },
    ...extra,
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
      fingerprint: (parent) => {
        if (parent?.spec.replicas === 7) throw new Error('bad fingerprint');
        return parent?.spec.replicas;
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
            resyncPeriodMs: 1_000_000,
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
