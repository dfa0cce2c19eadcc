import type { Key } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { RetryScheduler, RetrySchedulerDelayError, type RetrySchedulerOptions } from '../src/index.js';

/** The retry delay `fail(key)` scheduled, or -1 when it scheduled none (parked, or after shutdown). */
function schedule<K extends Key>(scheduler: RetryScheduler<K>, key: K): number {
  const outcome = scheduler.fail(key);
  return outcome.action === 'retry' ? outcome.delayMs : -1;
}

function setup(options: Partial<RetrySchedulerOptions<string>> = {}) {
  const clock = new ManualClock(1_000);
  const fired: Array<[string, number]> = [];
  const scheduler = new RetryScheduler<string>({ onRetry: (key) => fired.push([key, clock.now()]), clock, ...options });
  return { clock, fired, scheduler };
}

describe('RetryScheduler requeue-after', () => {
  it('[retry_scheduler: RequeueAfter] fires once after the delay and counts no failure; it resets an earlier failure count', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a');
    schedule(scheduler, 'a'); // 2 failures, retry pending at 1200
    expect(scheduler.requeueAfter('a', 5_000)).toBe(5_000);
    expect(scheduler.failures('a')).toBe(0);
    expect(scheduler.deadline('a')).toBe(6_000); // the pending retry was replaced
    clock.advance(4_999);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([['a', 6_000]]);
    expect(scheduler.pending).toBe(0);
    expect(clock.pending).toBe(0); // idle again: zero wakeups
    expect(schedule(scheduler, 'a')).toBe(100); // backoff starts over
  });

  it('[retry_scheduler: RequeueAfter] against a pending requeue the earliest deadline wins', () => {
    const { scheduler, clock, fired } = setup();
    expect(scheduler.requeueAfter('a', 10_000)).toBe(10_000);
    clock.advance(1_000);
    expect(scheduler.requeueAfter('a', 60_000)).toBe(9_000); // later ask: the earlier deadline stays
    expect(scheduler.deadline('a')).toBe(11_000);
    expect(scheduler.requeueAfter('a', 2_000)).toBe(2_000); // earlier ask: moves it earlier
    expect(scheduler.deadline('a')).toBe(4_000);
    clock.advance(100_000);
    expect(fired).toEqual([['a', 4_000]]);
  });

  it('[retry_scheduler: RequeueAfter] an error wins over a requeue: a failure replaces the pending requeue with its backoff', () => {
    const { scheduler, clock, fired } = setup();
    scheduler.requeueAfter('a', 60_000);
    expect(schedule(scheduler, 'a')).toBe(100);
    expect(scheduler.deadline('a')).toBe(1_100);
    clock.advance(100_000);
    expect(fired).toEqual([['a', 1_100]]); // once: the requeue is gone, the retry re-runs the reconcile that re-asks it
    const outcome = scheduler.fail('b', { error: new Error('x') });
    expect(outcome).toEqual({ action: 'retry', delayMs: 100, failures: 1 });
  });

  it('[retry_scheduler: RequeueAfter] a plain success (forget) drops a pending retry but keeps a pending requeue', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'retry');
    scheduler.requeueAfter('requeue', 500);
    scheduler.forget('retry');
    scheduler.forget('requeue');
    expect(scheduler.deadline('retry')).toBeUndefined();
    expect(scheduler.deadline('requeue')).toBe(1_500);
    clock.advance(10_000);
    expect(fired).toEqual([['requeue', 1_500]]);
  });

  it('[retry_scheduler: RequeueAfter] requeueAfter(key, 0) fires on the next timer; one timer for requeues and retries together', () => {
    const { scheduler, clock, fired } = setup();
    scheduler.requeueAfter('slow', 5_000);
    schedule(scheduler, 'x');
    scheduler.requeueAfter('now', 0);
    expect(clock.pending).toBe(1);
    expect(clock.maxPending).toBe(1);
    clock.advance(0);
    expect(fired).toEqual([['now', 1_000]]);
    clock.advance(10_000);
    expect(fired.map(([k]) => k)).toEqual(['now', 'x', 'slow']);
  });

  it('[retry_scheduler: RequeueAfter] a bad delay is a typed error; after shutdown it is a no-op returning -1', () => {
    const { scheduler, clock } = setup();
    for (const bad of [-1, Number.NaN, Infinity, '5' as unknown as number]) {
      expect(() => scheduler.requeueAfter('a', bad)).toThrow(RetrySchedulerDelayError);
    }
    expect(() => scheduler.requeueAfter('a', -5)).toThrow(expect.objectContaining({ code: 'RL_RETRY_INVALID_DELAY' }));
    expect(() => scheduler.requeueAfter({} as unknown as string, 5)).toThrow(
      expect.objectContaining({ code: 'RL_RETRY_INVALID_KEY' }),
    );
    expect(scheduler.pending).toBe(0);
    scheduler.shutdown();
    expect(scheduler.requeueAfter('a', 5)).toBe(-1);
    expect(scheduler.fail('a')).toEqual({ action: 'stopped' });
    expect(clock.setTimeoutCalls).toBe(0);
  });

  it('[retry_scheduler: RequeueAfter] the observer sees each request with the deadline that is now pending', () => {
    const events: unknown[] = [];
    const { scheduler, clock } = setup({ observer: { onRequeue: (e) => events.push(e) } });
    scheduler.requeueAfter('a', 300);
    clock.advance(100);
    scheduler.requeueAfter('a', 900);
    expect(events).toEqual([
      { key: 'a', delayMs: 300, deadline: 1_300, at: 1_000 },
      { key: 'a', delayMs: 900, deadline: 1_300, at: 1_100 },
    ]);
  });
});
