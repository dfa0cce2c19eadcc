import type { Key } from '@reconcile-loop/primitives';
import { OptionsError } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import {
  RetryScheduler,
  RetrySchedulerFingerprintError,
  type RetrySchedulerObserver,
  type RetrySchedulerOptions,
} from '../src/index.js';

/** The retry delay `fail(key)` scheduled, or -1 when it scheduled none (parked, or after shutdown). */
function schedule<K extends Key>(scheduler: RetryScheduler<K>, key: K): number {
  const outcome = scheduler.fail(key);
  return outcome.action === 'retry' ? outcome.delayMs : -1;
}

const SEED_004 = [0, 1_000, 5_000, 30_000];

function setup(options: Partial<RetrySchedulerOptions<string>> = {}) {
  const clock = new ManualClock(0);
  const fired: Array<[string, number]> = [];
  const events: Array<[string, unknown]> = [];
  const observer: RetrySchedulerObserver<string> = {
    onFailure: (e) => events.push(['failure', e]),
    onPark: (e) => events.push(['park', e]),
    onRelease: (e) => events.push(['release', e]),
  };
  const scheduler = new RetryScheduler<string>({
    onRetry: (key) => fired.push([key, clock.now()]),
    clock,
    budget: { delaysMs: SEED_004 },
    observer,
    ...options,
  });
  return { clock, fired, events, scheduler };
}

/** Fails `key` at `fingerprint` and lets its retry fire, `n` times; returns the outcomes. */
function failAndWait(s: ReturnType<typeof setup>, key: string, fingerprint: number, n: number) {
  const outcomes = [];
  for (let i = 0; i < n; i++) {
    const outcome = s.scheduler.fail(key, { error: new Error(`attempt ${i + 1}`), fingerprint });
    outcomes.push(outcome);
    if (outcome.action === 'retry') s.clock.advance(outcome.delayMs);
  }
  return outcomes;
}

describe('RetryScheduler retry budget', () => {
  it('[retry_scheduler: retry budget] the schedule is followed exactly; the failure after its last step parks the key (dead-letter)', () => {
    const s = setup();
    const outcomes = failAndWait(s, 'cell', 3, 5);
    expect(outcomes).toEqual([
      { action: 'retry', delayMs: 0, failures: 1 },
      { action: 'retry', delayMs: 1_000, failures: 2 },
      { action: 'retry', delayMs: 5_000, failures: 3 },
      { action: 'retry', delayMs: 30_000, failures: 4 },
      { action: 'parked', failures: 5 },
    ]);
    expect(s.fired.map(([, at]) => at)).toEqual([0, 1_000, 6_000, 36_000]);
    expect(s.scheduler.isParked('cell')).toBe(true);
    expect(s.scheduler.parkedCount).toBe(1);
    expect(s.scheduler.pending).toBe(0);
    expect(s.clock.pending).toBe(0); // parked costs no timer
    const [parked] = s.scheduler.parked();
    expect(parked).toMatchObject({ key: 'cell', fingerprint: 3, failures: 5, parkedAt: 36_000 });
    expect((parked!.lastError as Error).message).toBe('attempt 5');
    s.clock.advance(10 * 3_600_000);
    expect(s.fired).toHaveLength(4); // never retried again by backoff
    expect(s.events.filter(([e]) => e === 'failure')).toHaveLength(4);
    expect(s.events.filter(([e]) => e === 'park')).toEqual([['park', parked]]);
  });

  it('[retry_scheduler: retry budget] a parked key stays parked while the fingerprint is unchanged: a change of members alone does not lift it', () => {
    const s = setup();
    failAndWait(s, 'cell', 7, 5);
    // Pod events, resync and requeues all offer the key at the same generation.
    for (let i = 0; i < 3; i++) expect(s.scheduler.offer('cell', 7)).toBe(false);
    s.scheduler.forget('cell'); // a success path does not lift it either
    expect(s.scheduler.requeueAfter('cell', 10)).toBe(-1);
    expect(s.scheduler.isParked('cell')).toBe(true);
    // A failure while parked (the loop ran it anyway) is recorded; the key stays parked.
    expect(s.scheduler.fail('cell', { error: 'again', fingerprint: 7 })).toEqual({ action: 'parked', failures: 6 });
    expect(s.scheduler.parked()[0]).toMatchObject({ failures: 6, lastError: 'again' });
    expect(s.clock.pending).toBe(0);
  });

  it('[retry_scheduler: retry budget] an offer with a different fingerprint releases the key with a fresh budget', () => {
    const s = setup();
    failAndWait(s, 'cell', 7, 5);
    s.clock.advance(500);
    expect(s.scheduler.offer('cell', 8)).toBe(true);
    expect(s.scheduler.isParked('cell')).toBe(false);
    expect(s.scheduler.parked()).toEqual([]);
    expect(s.scheduler.failures('cell')).toBe(0);
    expect(s.events.at(-1)).toEqual([
      'release',
      { key: 'cell', reason: 'fingerprint', parkedFingerprint: 7, fingerprint: 8, at: 36_500 },
    ]);
    expect(failAndWait(s, 'cell', 8, 1)).toEqual([{ action: 'retry', delayMs: 0, failures: 1 }]);
  });

  it('[retry_scheduler: retry budget] a failure at another fingerprint restarts the count, so a stale count cannot park a new spec', () => {
    const s = setup();
    failAndWait(s, 'cell', 1, 4); // one step short of parking at generation 1
    expect(s.scheduler.failures('cell')).toBe(4);
    expect(failAndWait(s, 'cell', 2, 1)).toEqual([{ action: 'retry', delayMs: 0, failures: 1 }]);
    // Offering a new fingerprint resets the count too, before any failure is seen at it.
    failAndWait(s, 'cell', 2, 2);
    expect(s.scheduler.offer('cell', 3)).toBe(true);
    expect(s.scheduler.failures('cell')).toBe(0);
    // A parked key failing at a new fingerprint is released and counted as the first failure there.
    failAndWait(s, 'other', 1, 5);
    expect(s.scheduler.fail('other', { fingerprint: 2 })).toEqual({ action: 'retry', delayMs: 0, failures: 1 });
    expect(s.events.at(-2)).toMatchObject([
      'release',
      { key: 'other', reason: 'fingerprint', parkedFingerprint: 1, fingerprint: 2 },
    ]);
  });

  it('[retry_scheduler: retry budget] release(key) lifts a parked key by hand with a fresh budget; unknown or unparked keys return false', () => {
    const s = setup();
    failAndWait(s, 'cell', 7, 5);
    expect(s.scheduler.release('nope')).toBe(false);
    expect(s.scheduler.release('cell')).toBe(true);
    expect(s.scheduler.release('cell')).toBe(false);
    expect(s.scheduler.isParked('cell')).toBe(false);
    expect(s.events.at(-1)).toEqual(['release', { key: 'cell', reason: 'manual', parkedFingerprint: 7, at: 36_000 }]);
    expect(s.scheduler.offer('cell', 7)).toBe(true);
    expect(failAndWait(s, 'cell', 7, 1)).toEqual([{ action: 'retry', delayMs: 0, failures: 1 }]);
  });

  it("[retry_scheduler: retry budget] drop(key) forgets a key entirely, a park or a pending retry included, with no observer hook: the key is no longer this scheduler's", () => {
    const s = setup();
    failAndWait(s, 'cell', 7, 5); // parked
    s.scheduler.fail('other', { fingerprint: 1 }); // a retry due at once (0 ms)
    s.scheduler.fail('other', { fingerprint: 1 }); // failed again: the next retry in 1 s
    const events = s.events.length;
    const fired = s.fired.length;
    expect([s.scheduler.parkedCount, s.scheduler.pending]).toEqual([1, 1]);
    expect(s.scheduler.drop('cell')).toBe(true);
    expect(s.scheduler.drop('other')).toBe(true);
    expect(s.scheduler.drop('never')).toBe(false);
    expect([s.scheduler.parkedCount, s.scheduler.pending, s.scheduler.parked()]).toEqual([0, 0, []]);
    expect([s.scheduler.isParked('cell'), s.scheduler.failures('cell'), s.scheduler.deadline('other')]).toEqual([
      false,
      0,
      undefined,
    ]);
    s.clock.advance(60_000);
    expect(s.fired).toHaveLength(fired); // the dropped retry never fires
    expect(s.events).toHaveLength(events); // not a release: no hook
    // Back later: a fresh key, with a whole budget.
    expect(s.scheduler.offer('cell', 7)).toBe(true);
    expect(failAndWait(s, 'cell', 7, 1)).toEqual([{ action: 'retry', delayMs: 0, failures: 1 }]);
  });

  it('[retry_scheduler: retry budget] success resets the budget; parked keys are listed oldest first; shutdown drops them', () => {
    const s = setup();
    failAndWait(s, 'a', 1, 3);
    s.scheduler.forget('a');
    expect(failAndWait(s, 'a', 1, 1)[0]).toEqual({ action: 'retry', delayMs: 0, failures: 1 });
    s.scheduler.forget('a');
    failAndWait(s, 'b', 1, 5);
    failAndWait(s, 'a', 1, 5);
    expect(s.scheduler.parked().map((p) => p.key)).toEqual(['b', 'a']);
    s.scheduler.shutdown();
    expect(s.scheduler.parked()).toEqual([]);
    expect(s.scheduler.isParked('a')).toBe(false);
    expect(s.scheduler.offer('a', 1)).toBe(false);
  });

  it('[retry_scheduler: retry budget] an empty schedule parks at the first failure; no budget never parks and offer always admits', () => {
    const s = setup({ budget: { delaysMs: [] } });
    expect(s.scheduler.fail('a', { fingerprint: 1 })).toEqual({ action: 'parked', failures: 1 });
    expect(schedule(s.scheduler, 'b')).toBe(-1);
    const plain = new RetryScheduler<string>({ onRetry: () => {}, clock: new ManualClock(0) });
    for (let i = 0; i < 50; i++) expect(plain.fail('a', { fingerprint: 1 }).action).toBe('retry');
    expect(plain.offer('a', 1)).toBe(true);
    expect(plain.offer('a', 2)).toBe(true);
    expect(plain.failures('a')).toBe(50); // fingerprints count only under a budget: the default is unchanged
    expect(plain.isParked('a')).toBe(false);
  });

  it('[retry_scheduler: retry budget] fingerprints compare by value (NaN equals itself); a non-primitive fingerprint is a typed error', () => {
    const s = setup();
    failAndWait(s, 'a', Number.NaN, 5);
    expect(s.scheduler.offer('a', Number.NaN)).toBe(false);
    expect(s.scheduler.offer('a', undefined)).toBe(true); // e.g. the parent was deleted
    expect(() => s.scheduler.offer('a', {} as unknown as string)).toThrow(RetrySchedulerFingerprintError);
    expect(() => s.scheduler.fail('a', { fingerprint: [] as unknown as string })).toThrow(
      expect.objectContaining({ code: 'RL_RETRY_INVALID_FINGERPRINT' }),
    );
    expect(s.scheduler.failures('a')).toBe(0);
  });

  it('[retry_scheduler: retry budget] bad budgets, and a budget combined with exponential options, are typed errors', () => {
    const onRetry = (): void => {};
    for (const budget of [{ delaysMs: [-1] }, { delaysMs: [Number.NaN] }, { delaysMs: 'x' }, {}, null]) {
      expect(() => new RetryScheduler({ onRetry, budget: budget as never })).toThrow(OptionsError);
    }
    expect(() => new RetryScheduler({ onRetry, budget: { delaysMs: [1] }, backoff: { initialMs: 5, maxMs: 5 } })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => new RetryScheduler({ onRetry, observer: 5 as never })).toThrow(OptionsError);
    // The schedule is copied: mutating the caller's array later changes nothing.
    const delaysMs = [10];
    const clock = new ManualClock(0);
    const scheduler = new RetryScheduler<string>({ onRetry, clock, budget: { delaysMs } });
    delaysMs[0] = 99;
    expect(schedule(scheduler, 'a')).toBe(10);
  });

  it('[retry_scheduler: retry budget] a throwing hook goes to onError and changes nothing', () => {
    const errors: unknown[] = [];
    const boom = new Error('counter down');
    const s = setup({
      observer: {
        onFailure: () => {
          throw boom;
        },
        onPark: () => {
          throw boom;
        },
      },
      onError: (error, key) => errors.push([error, key]),
    });
    const outcomes = failAndWait(s, 'a', 1, 5);
    expect(outcomes.at(-1)).toEqual({ action: 'parked', failures: 5 });
    expect(errors).toHaveLength(5);
    expect(s.fired).toHaveLength(4);
  });
});
