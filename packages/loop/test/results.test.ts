import { describe, expect, it } from 'vitest';
import { settle } from '@reconcile-loop/test-support';
import { TerminalError } from '../src/index.js';
import { controllerHarness, podOf, setOf } from './controller-fixtures.js';

const at = (seen: Array<{ key: string; at: number }>) => seen.map((s) => [s.key, s.at]);

describe('reconcile results', () => {
  it('[loop: RequeueAfter] { requeueAfterMs } re-runs the key after the delay, counts no failure, and is counted', async () => {
    let n = 0;
    const { loop, seen, clock } = controllerHarness({
      sets: [setOf('a', 1)],
      body: () => (++n <= 2 ? { requeueAfterMs: 5_000 } : undefined),
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(4_999);
    expect(at(seen)).toEqual([['ns/a', 0]]);
    await clock.advanceAsync(1);
    await clock.advanceAsync(5_000);
    await clock.advanceAsync(20_000);
    expect(at(seen)).toEqual([
      ['ns/a', 0],
      ['ns/a', 5_000],
      ['ns/a', 10_000],
    ]);
    expect(loop.health().reconciles).toEqual({ succeeded: 1, requeued: 2, failed: 0, terminal: 0, parked: 0, released: 0 });
    expect(loop.health().retriesPending).toBe(0);
    await loop.stop();
  });

  it('[loop: RequeueAfter] the earliest pending requeue wins; an event in between runs the key at once and keeps the owed re-check', async () => {
    const asks = [10_000, 60_000, undefined, undefined];
    const { loop, seen, clock, pods } = controllerHarness({
      sets: [setOf('a', 1)],
      body: () => {
        const ms = asks.shift();
        return ms === undefined ? undefined : { requeueAfterMs: ms };
      },
    });
    await loop.start();
    await settle(); // asks 10 s
    await clock.advanceAsync(1_000);
    pods.upsert(...podOf('a-0', 'a')); // runs now, asks 60 s: the 10 s deadline stays
    await settle();
    await clock.advanceAsync(9_000);
    expect(at(seen)).toEqual([
      ['ns/a', 0],
      ['ns/a', 1_000],
      ['ns/a', 10_000],
    ]);
    await clock.advanceAsync(100_000);
    expect(seen).toHaveLength(3);
    await loop.stop();
  });

  it('[loop: RequeueAfter] an error wins over a requeue: a failure replaces a pending requeue with its backoff', async () => {
    let n = 0;
    const { loop, seen, clock } = controllerHarness({
      sets: [setOf('a', 1)],
      retry: { backoff: { initialMs: 100, maxMs: 1_000_000 } },
      body: () => {
        n += 1;
        if (n === 1) return { requeueAfterMs: 10_000 };
        if (n === 2) throw new Error('flaky');
        return undefined;
      },
    });
    await loop.start();
    await settle();
    loop.enqueue('ns/a'); // n=2 fails at t=0: retry at 100 replaces the 10 s requeue
    await settle();
    await clock.advanceAsync(100);
    expect(at(seen)).toEqual([
      ['ns/a', 0],
      ['ns/a', 0],
      ['ns/a', 100],
    ]);
    await clock.advanceAsync(20_000);
    expect(seen).toHaveLength(3);
    await loop.stop();
  });

  it('[loop: TerminalError] a TerminalError (also as a cause) is not retried, logged at error level and counted; a later event still reconciles', async () => {
    let n = 0;
    const { loop, seen, clock, logger, pods } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      body: (key) => {
        n += 1;
        if (key === 'ns/a' && n <= 2) throw new TerminalError('spec.replicas is negative');
        if (key === 'ns/b' && n <= 2) throw new Error('wrapped', { cause: new TerminalError('quota gone for good') });
        return undefined;
      },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(3_600_000);
    expect(seen.map((s) => s.key).sort()).toEqual(['ns/a', 'ns/b']);
    const errors = logger.entries.filter((e) => e.message === 'reconcile failed with a terminal error; not retried');
    expect(errors.map((e) => [e.level, e.fields['parentKey']]).sort()).toEqual([
      ['error', 'ns/a'],
      ['error', 'ns/b'],
    ]);
    expect(loop.health().reconciles).toMatchObject({ terminal: 2, failed: 0 });
    pods.upsert(...podOf('a-0', 'a'));
    await settle();
    expect(seen.map((s) => s.key).at(-1)).toBe('ns/a');
    await loop.stop();
  });

  it('[loop: Requeue rate-limited] { requeueAfterMs: 0 } is Requeue: true, rate-limited per key: 5 ms doubling, 8 runs in the first second', async () => {
    let n = 0;
    const { loop, seen, clock } = controllerHarness({
      sets: [setOf('a', 1)],
      body: () => (++n <= 100 ? { requeueAfterMs: 0 } : undefined),
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(0);
    expect(seen).toHaveLength(1); // not a hot loop at t = 0
    for (let t = 0; t < 1_000; t += 1) await clock.advanceAsync(1);
    expect(at(seen).map(([, t]) => t)).toEqual([0, 5, 15, 35, 75, 155, 315, 635]);
    expect(loop.health().reconciles).toMatchObject({ requeued: 8, failed: 0 });
    await loop.stop();
  });

  it('[loop: Requeue rate-limited] a requeue count resets on any other outcome: the next { requeueAfterMs: 0 } waits 5 ms again', async () => {
    const asks: Array<number | undefined> = [0, 0, 0, undefined, 0];
    const { loop, seen, clock } = controllerHarness({
      sets: [setOf('a', 1)],
      body: () => (asks.length > 0 ? { requeueAfterMs: asks.shift() } : undefined),
    });
    await loop.start();
    await settle(); // t=0: 0 → 5 ms
    for (let t = 0; t < 100; t += 1) await clock.advanceAsync(1); // 5: 0 → 10 ms; 15: 0 → 20 ms; 35: done
    loop.enqueue('ns/a'); // t=100: 0 → 5 ms again
    await settle();
    for (let t = 0; t < 100; t += 1) await clock.advanceAsync(1);
    expect(at(seen).map(([, t]) => t)).toEqual([0, 5, 15, 35, 100, 105]);
    await loop.stop();
  });

  it.each([[-1], [-60_000], [Number.MIN_SAFE_INTEGER]])(
    '[loop: Requeue rate-limited] a negative requeueAfterMs (%d) is a plain success: no failure, no requeue, a budget is not spent',
    async (requeueAfterMs) => {
      const { loop, seen, clock } = controllerHarness({
        sets: [setOf('a', 1)],
        retry: { budget: { delaysMs: [] } },
        body: () => ({ requeueAfterMs }),
      });
      await loop.start();
      await settle();
      await clock.advanceAsync(60_000);
      expect(seen).toHaveLength(1);
      expect(loop.health().reconciles).toMatchObject({ succeeded: 1, failed: 0, parked: 0, requeued: 0 });
      loop.enqueue('ns/a'); // not parked: still runs
      await settle();
      expect(seen).toHaveLength(2);
      await loop.stop();
    },
  );

  it.each([[{ requeueAfterMs: Number.NaN }], [{ requeueAfterMs: '5' }], [42], [null], [{ requeueAfterMs: 2 ** 31 }]])(
    '[loop: RequeueAfter] an invalid result %j is a failure with InvalidReconcileResultError (retried with backoff)',
    async (result) => {
      let n = 0;
      const { loop, seen, clock, logger } = controllerHarness({
        sets: [setOf('a', 1)],
        retry: { backoff: { initialMs: 100, maxMs: 1_000_000 } },
        body: () => (++n === 1 ? (result as never) : undefined),
      });
      await loop.start();
      await settle();
      await clock.advanceAsync(100);
      expect(at(seen)).toEqual([
        ['ns/a', 0],
        ['ns/a', 100],
      ]);
      const warn = logger.entries.find((e) => e.message === 'reconcile failed; retrying after backoff');
      expect(warn?.fields['err']).toMatchObject({ code: 'RL_LOOP_INVALID_RESULT', parentKey: 'ns/a' });
      await loop.stop();
    },
  );
});
