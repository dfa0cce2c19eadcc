import { describe, expect, it } from 'vitest';
import { InvalidClockStepError, ManualClock, ReconcileLoopError, sleep, type Clock } from '../src/index.js';
import { macrotaskTurns } from './helpers.js';

/** Schedules one timer per `[label, delay]` that records `label@now()` into `fired`. */
function schedule(clock: ManualClock, fired: string[], timers: Array<[string, number]>): unknown[] {
  return timers.map(([label, delay]) => clock.setTimeout(() => fired.push(`${label}@${clock.now()}`), delay));
}

describe('clock: ManualClock', () => {
  it('[clock: ManualClock] timers fire earliest deadline first, ties in scheduling order, each at its deadline', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    schedule(clock, fired, [
      ['c', 30],
      ['a1', 10],
      ['b', 20],
      ['a2', 10],
      ['z', 0],
    ]);
    clock.advance(25);
    expect(fired).toEqual(['z@0', 'a1@10', 'a2@10', 'b@20']);
    expect(clock.now()).toBe(25);
    expect(clock.pending).toBe(1);
    clock.advance(5);
    expect(fired.at(-1)).toBe('c@30');
    expect(clock.pending).toBe(0);
  });

  it('[clock: ManualClock] a timer scheduled by a firing timer fires in the same step when it comes due on the way', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push(`first@${clock.now()}`);
      schedule(clock, fired, [
        ['second', 5],
        ['late', 50],
      ]);
    }, 10);
    clock.advance(20);
    expect(fired).toEqual(['first@10', 'second@15']);
    expect(clock.pending).toBe(1);
  });

  it('[clock: ManualClock] clearTimeout cancels a pending timer; a fired or cleared handle is ignored', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    const [keep, drop] = schedule(clock, fired, [
      ['keep', 10],
      ['drop', 10],
    ]);
    clock.clearTimeout(drop);
    expect(clock.pending).toBe(1);
    clock.advance(10);
    expect(fired).toEqual(['keep@10']);
    clock.clearTimeout(keep);
    clock.clearTimeout(drop);
    expect(clock.pending).toBe(0);
    expect(clock.clearTimeoutCalls).toBe(3);
  });

  it('[clock: ManualClock] advanceAsync runs promise continuations between timers, so work a timer starts can schedule the next', async () => {
    // Two sleeps in a row: the second is scheduled only by the first one's continuation.
    const chain = async (clock: Clock, at: number[]): Promise<void> => {
      await sleep(clock, 10);
      at.push(clock.now());
      await sleep(clock, 10);
      at.push(clock.now());
    };

    const synchronous = new ManualClock();
    const syncAt: number[] = [];
    void chain(synchronous, syncAt);
    synchronous.advance(25);
    await macrotaskTurns();
    // advance() returned before the continuation ran, so the second sleep started at 25, not 10.
    expect(syncAt).toEqual([25]);
    expect(synchronous.pending).toBe(1);

    const manual = new ManualClock();
    const asyncAt: number[] = [];
    const done = chain(manual, asyncAt);
    await manual.advanceAsync(25);
    expect(asyncAt).toEqual([10, 20]);
    expect(manual.now()).toBe(25);
    await expect(done).resolves.toBeUndefined();
  });

  it('[clock: ManualClock] jump moves time without firing timers; the next step fires what came due, at the current time', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    schedule(clock, fired, [
      ['due', 10],
      ['later', 200],
    ]);
    clock.jump(100);
    expect(clock.now()).toBe(100);
    expect(fired).toEqual([]);
    expect(clock.pending).toBe(2);
    clock.advance(0);
    expect(fired).toEqual(['due@100']);
    expect(clock.pending).toBe(1);
  });

  it('[clock: ManualClock] time never goes backwards: overdue timers fire at the current time, and a negative or non-finite step throws InvalidClockStepError', async () => {
    const clock = new ManualClock(1_000);
    const fired: string[] = [];
    schedule(clock, fired, [
      ['overdue', 5],
      ['negative', -50],
    ]);
    clock.jump(10);
    expect(clock.runNext()).toBe(true);
    expect(clock.runNext()).toBe(true);
    expect(fired).toEqual(['negative@1010', 'overdue@1010']); // a negative delay counts as zero
    expect(clock.now()).toBe(1_010);

    for (const step of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => clock.advance(step)).toThrow(InvalidClockStepError);
      expect(() => clock.jump(step)).toThrow(InvalidClockStepError);
      await expect(clock.advanceAsync(step)).rejects.toMatchObject({
        code: 'RL_INVALID_CLOCK_STEP',
        name: 'InvalidClockStepError',
      });
    }
    try {
      clock.jump(-5);
      expect.unreachable('jump(-5) must throw');
    } catch (error) {
      expect(error).toBeInstanceOf(ReconcileLoopError);
      expect((error as InvalidClockStepError).ms).toBe(-5);
      expect((error as Error).message).toContain('-5');
    }
    expect(clock.now()).toBe(1_010);
  });

  it('[clock: ManualClock] runNext fires only the earliest timer, moving time to its deadline; false when none is pending', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    schedule(clock, fired, [
      ['b', 20],
      ['a', 10],
    ]);
    expect(clock.runNext()).toBe(true);
    expect(fired).toEqual(['a@10']);
    expect(clock.now()).toBe(10);
    expect(clock.runNext()).toBe(true);
    expect(clock.runNext()).toBe(false);
    expect(fired).toEqual(['a@10', 'b@20']);
    expect(clock.now()).toBe(20);
  });

  it('[clock: ManualClock] counters record calls, the most timers pending at once, and delays as given', () => {
    const clock = new ManualClock();
    const handles = schedule(
      clock,
      [],
      [
        ['a', 5],
        ['b', -3],
        ['c', 7],
      ],
    );
    clock.clearTimeout(handles[0]);
    clock.advance(10);
    clock.setTimeout(() => {}, 1);
    expect(clock.setTimeoutCalls).toBe(4);
    expect(clock.clearTimeoutCalls).toBe(1);
    expect(clock.maxPending).toBe(3);
    expect(clock.delays).toEqual([5, -3, 7, 1]);
    expect(clock.pending).toBe(1);
  });

  it('[clock: ManualClock] earlyMs fires a timer that much early, but only when its delay is longer', () => {
    const clock = new ManualClock();
    clock.earlyMs = 4;
    const fired: string[] = [];
    schedule(clock, fired, [
      ['long', 10],
      ['short', 3],
    ]);
    clock.advance(3);
    expect(fired).toEqual(['short@3']);
    clock.advance(3);
    expect(fired).toEqual(['short@3', 'long@6']);
    expect(clock.delays).toEqual([10, 3]);
  });
});
