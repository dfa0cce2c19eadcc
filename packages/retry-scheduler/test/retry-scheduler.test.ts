import { OptionsError, type Key } from '@reconcile-loop/primitives';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { DEFAULT_RETRY_BACKOFF, RetryScheduler, RetrySchedulerKeyError, type RetrySchedulerOptions } from '../src/index.js';
import type { FailureOutcome } from '../src/scheduler.js';
import { systemClock } from '@reconcile-loop/primitives';

/** The retry delay `fail(key)` scheduled, or -1 when it scheduled none (parked, or after shutdown). */
function schedule<K extends Key>(scheduler: RetryScheduler<K>, key: K): number {
  const outcome = scheduler.fail(key);
  return outcome.action === 'retry' ? outcome.delayMs : -1;
}

function setup<K extends Key = string>(options: Partial<RetrySchedulerOptions<K>> = {}) {
  const clock = new ManualClock(1_000);
  const fired: Array<{ key: K; at: number }> = [];
  const scheduler = new RetryScheduler<K>({
    onRetry: (key) => fired.push({ key, at: clock.now() }),
    clock,
    ...options,
  });
  return { clock, fired, scheduler };
}

describe('RetryScheduler backoff', () => {
  it('[retry_scheduler: per-key exponential backoff] delay = backoff.initialMs * 2^(failures-1), capped at backoff.maxMs', () => {
    const { scheduler } = setup({ backoff: { initialMs: 10, maxMs: 100 } });
    const delays = Array.from({ length: 7 }, () => schedule(scheduler, 'a'));
    expect(delays).toEqual([10, 20, 40, 80, 100, 100, 100]);
    expect(scheduler.failures('a')).toBe(7);
    // Another key has its own count.
    expect(schedule(scheduler, 'b')).toBe(10);
  });

  it("[retry_scheduler: default delays] 100 ms base and client-go's 1000 s cap", () => {
    expect(DEFAULT_RETRY_BACKOFF).toEqual({ initialMs: 100, maxMs: 1_000_000 });
    const { scheduler } = setup();
    const delays = Array.from({ length: 16 }, () => schedule(scheduler, 'a'));
    expect(delays.slice(0, 5)).toEqual([100, 200, 400, 800, 1600]);
    expect(delays[13]).toBe(819_200);
    expect(delays[14]).toBe(1_000_000);
    expect(delays[15]).toBe(1_000_000);
  });

  it('[retry_scheduler: per-key exponential backoff] a huge failure count stays at the cap, never NaN or Infinity', () => {
    const { scheduler } = setup({ backoff: { initialMs: 0, maxMs: 50 } });
    for (let i = 0; i < 1100; i++) expect(schedule(scheduler, 'zero')).toBe(0);
    const s2 = setup({ backoff: { initialMs: 1, maxMs: Infinity } }).scheduler;
    let last = 0;
    for (let i = 0; i < 1100; i++) last = schedule(s2, 'k');
    expect(Number.isNaN(last)).toBe(false);
    expect(last).toBe(2 ** 1000); // primitives' backoffDelay stops the exponent at 1000
  });

  it('[retry_scheduler: per-key exponential backoff] forget resets the failure count', () => {
    const { scheduler } = setup();
    schedule(scheduler, 'a');
    schedule(scheduler, 'a');
    scheduler.forget('a');
    expect(scheduler.failures('a')).toBe(0);
    expect(schedule(scheduler, 'a')).toBe(100);
  });

  it('[retry_scheduler: per-key exponential backoff] a fired key keeps its failure count until forgotten', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a');
    clock.advance(100);
    expect(fired.map((f) => f.key)).toEqual(['a']);
    expect(scheduler.failures('a')).toBe(1);
    expect(schedule(scheduler, 'a')).toBe(200);
  });

  it('[retry_scheduler: invalid input] bad options and non-primitive keys are typed errors', () => {
    const onRetry = (): void => {};
    expect(() => new RetryScheduler({ onRetry, backoff: { initialMs: -1, maxMs: 10 } })).toThrow(OptionsError);
    expect(() => new RetryScheduler({ onRetry, backoff: { initialMs: Number.NaN, maxMs: 10 } })).toThrow(OptionsError);
    expect(() => new RetryScheduler({ onRetry, backoff: { initialMs: 10, maxMs: 5 } })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => new RetryScheduler({ onRetry: undefined as unknown as () => void })).toThrow(OptionsError);
    const { scheduler } = setup();
    expect(() => schedule(scheduler, {} as unknown as string)).toThrow(RetrySchedulerKeyError);
    expect(() => schedule(scheduler, null as unknown as string)).toThrow(
      expect.objectContaining({ code: 'RL_RETRY_INVALID_KEY' }),
    );
    expect(scheduler.pending).toBe(0);
  });
});

describe('RetryScheduler deadlines', () => {
  it('[retry_scheduler: latest-wins deadlines] a new failure replaces the pending deadline; the key fires once, at the latest', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a'); // deadline 1100
    clock.advance(50);
    schedule(scheduler, 'a'); // replaced: 1050 + 200 = 1250
    expect(scheduler.deadline('a')).toBe(1250);
    expect(scheduler.pending).toBe(1);
    clock.advance(100); // past the replaced deadline 1100
    expect(fired).toEqual([]);
    clock.advance(100);
    expect(fired).toEqual([{ key: 'a', at: 1250 }]);
    clock.advance(10_000);
    expect(fired).toHaveLength(1);
    expect(scheduler.deadline('a')).toBeUndefined();
    expect(scheduler.pending).toBe(0);
  });

  it('[retry_scheduler: latest-wins deadlines] latest wins even when it is earlier than the replaced deadline', () => {
    const { scheduler, clock, fired } = setup();
    for (let i = 0; i < 4; i++) schedule(scheduler, 'a'); // 800 ms
    scheduler.forget('a');
    schedule(scheduler, 'a'); // 100 ms
    clock.advance(100);
    expect(fired).toEqual([{ key: 'a', at: 1100 }]);
    clock.advance(1000);
    expect(fired).toHaveLength(1);
  });

  it('[retry_scheduler: latest-wins deadlines] a forgotten key never fires', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a');
    schedule(scheduler, 'b');
    scheduler.forget('a');
    expect(scheduler.pending).toBe(1);
    clock.advance(10_000);
    expect(fired.map((f) => f.key)).toEqual(['b']);
  });

  it('[retry_scheduler: one exact timer] a retry fires at its deadline, not up to a poll interval late', () => {
    const { scheduler, clock, fired } = setup({ backoff: { initialMs: 37, maxMs: 1_000_000 } });
    schedule(scheduler, 'a');
    clock.advance(36);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([{ key: 'a', at: 1037 }]);
  });

  it('[retry_scheduler: one exact timer] nothing is armed while no key is pending (zero idle wakeups)', () => {
    const { scheduler, clock } = setup();
    clock.advance(3_600_000);
    expect(clock.setTimeoutCalls).toBe(0);
    schedule(scheduler, 'a');
    expect(clock.pending).toBe(1);
    clock.advance(100);
    expect(clock.pending).toBe(0);
    const calls = clock.setTimeoutCalls;
    clock.advance(3_600_000);
    expect(clock.setTimeoutCalls).toBe(calls);
    schedule(scheduler, 'b');
    scheduler.forget('b');
    expect(clock.pending).toBe(0);
  });

  it('[retry_scheduler: one exact timer] one timer for the earliest deadline, re-armed only when the earliest changes', () => {
    const { scheduler, clock, fired } = setup();
    for (let i = 0; i < 3; i++) schedule(scheduler, 'slow'); // 400 ms → 1400
    expect(clock.delays).toEqual([100, 200, 400]);
    schedule(scheduler, 'x'); // 1100: earlier, re-arm
    schedule(scheduler, 'y'); // 1100: same earliest, no new timer
    expect(clock.delays).toEqual([100, 200, 400, 100]);
    expect(clock.pending).toBe(1);
    scheduler.forget('x');
    scheduler.forget('y'); // earliest is 1400 again
    expect(clock.delays).toEqual([100, 200, 400, 100, 400]);
    expect(clock.maxPending).toBe(1);
    clock.advance(400);
    expect(fired).toEqual([{ key: 'slow', at: 1400 }]);
  });

  it('[retry_scheduler: one exact timer] keys due together fire in deadline order, then scheduling order', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'late');
    schedule(scheduler, 'late'); // 1200
    schedule(scheduler, 'c'); // 1100
    schedule(scheduler, 'a'); // 1100
    schedule(scheduler, 'b'); // 1100
    clock.advance(100);
    expect(fired.map((f) => f.key)).toEqual(['c', 'a', 'b']);
    // Same check when every deadline is overdue by the time the (single) timer runs.
    const s2 = setup();
    schedule(s2.scheduler, 'late');
    schedule(s2.scheduler, 'late');
    schedule(s2.scheduler, 'c');
    schedule(s2.scheduler, 'a');
    s2.clock.jump(500); // time jumps without the timer running (a blocked event loop)
    s2.clock.advance(0);
    expect(s2.fired.map((f) => f.key)).toEqual(['c', 'a', 'late']);
  });

  it('[retry_scheduler: one exact timer] a timer that fires early re-arms instead of retrying early', () => {
    const { scheduler, clock, fired } = setup();
    clock.earlyMs = 30;
    schedule(scheduler, 'a'); // deadline 1100, timer fires at 1070
    clock.advance(70);
    expect(fired).toEqual([]);
    expect(clock.pending).toBe(1);
    clock.earlyMs = 0;
    clock.advance(30);
    expect(fired).toEqual([{ key: 'a', at: 1100 }]);
  });

  it('[retry_scheduler: one exact timer] a deadline beyond the 2^31-1 ms timer limit is reached by re-arming', () => {
    const { scheduler, clock, fired } = setup({ backoff: { initialMs: 3_000_000_000, maxMs: Infinity } });
    schedule(scheduler, 'far');
    expect(clock.delays).toEqual([2 ** 31 - 1]);
    clock.advance(2 ** 31 - 1);
    expect(fired).toEqual([]);
    clock.advance(3_000_000_000 - (2 ** 31 - 1));
    expect(fired).toEqual([{ key: 'far', at: 1000 + 3_000_000_000 }]);
  });

  it('[retry_scheduler: lazy timer] constructing a scheduler touches no clock', () => {
    const clock = { now: vi.fn(() => 0), setTimeout: vi.fn(), clearTimeout: vi.fn() };
    new RetryScheduler({ onRetry: () => {}, clock });
    expect(clock.now).not.toHaveBeenCalled();
    expect(clock.setTimeout).not.toHaveBeenCalled();
  });
});

describe('RetryScheduler callbacks', () => {
  it('[retry_scheduler: re-entrant onRetry] onRetry may schedule the same key again; it fires again at the new deadline', () => {
    const clock = new ManualClock(0);
    const fired: Array<[string, number]> = [];
    const scheduler: RetryScheduler<string> = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push([key, clock.now()]);
        // The key has already left the pending set when its callback runs.
        expect(scheduler.deadline(key)).toBeUndefined();
        expect(scheduler.pending).toBe(0);
        if (fired.length < 3) schedule(scheduler, key);
      },
    });
    schedule(scheduler, 'a');
    clock.advance(10_000);
    expect(fired).toEqual([
      ['a', 100],
      ['a', 300],
      ['a', 700],
    ]);
    expect(clock.maxPending).toBe(1);
  });

  it('[retry_scheduler: re-entrant onRetry] a zero delay rescheduled from onRetry goes to the next timer, not a spin', () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const scheduler: RetryScheduler<string> = new RetryScheduler<string>({
      clock,
      backoff: { initialMs: 0, maxMs: 0 },
      onRetry: (key) => {
        calls += 1;
        schedule(scheduler, key);
      },
    });
    schedule(scheduler, 'a');
    expect(clock.runNext()).toBe(true);
    expect(calls).toBe(1);
    expect(clock.pending).toBe(1);
    expect(clock.runNext()).toBe(true);
    expect(calls).toBe(2);
  });

  it('[retry_scheduler: re-entrant onRetry] onRetry may forget another due key, which then does not fire', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const scheduler: RetryScheduler<string> = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push(key);
        if (key === 'a') scheduler.forget('b');
      },
    });
    schedule(scheduler, 'a');
    schedule(scheduler, 'b');
    schedule(scheduler, 'c');
    clock.advance(100);
    expect(fired).toEqual(['a', 'c']);
  });

  it('[retry_scheduler: shutdown] onRetry calling shutdown stops the sweep; nothing fires afterwards', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const scheduler: RetryScheduler<string> = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push(key);
        scheduler.shutdown();
      },
    });
    schedule(scheduler, 'a');
    schedule(scheduler, 'b');
    clock.advance(10_000);
    expect(fired).toEqual(['a']);
    expect(clock.pending).toBe(0);
  });

  it('[retry_scheduler: throwing onRetry] is reported to onError and neither the sweep nor the timer breaks', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const errors: Array<[unknown, string]> = [];
    const boom = new Error('boom');
    const scheduler = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push(key);
        if (key === 'a') throw boom;
      },
      onError: (error, key) => errors.push([error, key]),
    });
    schedule(scheduler, 'a');
    schedule(scheduler, 'b');
    schedule(scheduler, 'c');
    schedule(scheduler, 'c'); // 200 ms: needs a later timer
    clock.advance(1000);
    expect(fired).toEqual(['a', 'b', 'c']);
    expect(errors).toEqual([[boom, 'a']]);
    expect(scheduler.deadline('a')).toBeUndefined();
    schedule(scheduler, 'a');
    clock.advance(1000);
    expect(fired).toEqual(['a', 'b', 'c', 'a']);
  });

  it('[retry_scheduler: throwing onRetry] a throwing onError, or none at all, is swallowed', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const s1 = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push(key);
        throw new Error('x');
      },
      onError: () => {
        throw new Error('sink down');
      },
    });
    const s2 = new RetryScheduler<string>({
      clock,
      onRetry: (key) => {
        fired.push(`s2:${key}`);
        throw new Error('y');
      },
    });
    schedule(s1, 'a');
    schedule(s1, 'b');
    schedule(s2, 'a');
    expect(() => clock.advance(100)).not.toThrow();
    expect(fired).toEqual(['a', 'b', 's2:a']);
  });
});

describe('RetryScheduler shutdown', () => {
  it('[retry_scheduler: shutdown] cancels the timer, drops every key, nothing fires afterwards; idempotent', () => {
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a');
    schedule(scheduler, 'b');
    scheduler.shutdown();
    expect(clock.pending).toBe(0);
    expect(scheduler.pending).toBe(0);
    expect(scheduler.deadline('a')).toBeUndefined();
    scheduler.shutdown();
    clock.advance(10_000);
    expect(fired).toEqual([]);
  });

  it('[retry_scheduler: schedule after shutdown] is a no-op returning -1, so a reconcile failing during stop is harmless', () => {
    const { scheduler, clock, fired } = setup();
    scheduler.shutdown();
    expect(schedule(scheduler, 'late')).toBe(-1);
    expect(scheduler.failures('late')).toBe(0);
    expect(scheduler.pending).toBe(0);
    expect(clock.setTimeoutCalls).toBe(0);
    expect(() => scheduler.forget('late')).not.toThrow();
    clock.advance(10_000);
    expect(fired).toEqual([]);
  });
});

describe('RetryScheduler scope', () => {
  it('[retry_scheduler: delaying queue → onRetry] the scheduler holds no queue: its only output is one onRetry per due key', () => {
    const proto = RetryScheduler.prototype as unknown as Record<string, unknown>;
    const publicNames = Object.getOwnPropertyNames(proto)
      .filter((n) => n !== 'constructor')
      .sort();
    // The budget and requeue-after calls added public members; none of them is a queue or a read-back of fired keys.
    expect(publicNames).toEqual([
      'deadline',
      'drop',
      'fail',
      'failures',
      'forget',
      'isParked',
      'offer',
      'parked',
      'parkedCount',
      'pending',
      'release',
      'requeueAfter',
      'shutdown',
    ]);
    const { scheduler, clock, fired } = setup();
    schedule(scheduler, 'a');
    clock.advance(100);
    // Delivered once and not retained anywhere: no pending deadline, nothing to read back.
    expect(fired).toEqual([{ key: 'a', at: 1100 }]);
    expect(scheduler.pending).toBe(0);
    expect(scheduler.deadline('a')).toBeUndefined();
    clock.advance(100_000);
    expect(fired).toHaveLength(1);
  });

  it('[retry_scheduler: bucket rate limiter dropped] many keys failing together all retry at the per-key delay, with no aggregate throttle', () => {
    const { scheduler, clock, fired } = setup();
    for (let i = 0; i < 500; i++) schedule(scheduler, `k${i}`);
    clock.advance(100);
    // client-go's 10 qps / 100 burst bucket would have spread the last 400 over 40 s.
    expect(fired).toHaveLength(500);
    expect(new Set(fired.map((f) => f.at))).toEqual(new Set([1100]));
  });

  it('[retry_scheduler: Result{RequeueAfter}] fail takes the key and a failure record, no delay: a timed re-check is the separate requeueAfter(key, ms)', () => {
    const { scheduler } = setup();
    const fail = scheduler.fail.bind(scheduler) as (key: string, failure?: unknown, afterMs?: number) => FailureOutcome;
    expect(fail('a', {}, 5_000)).toMatchObject({ action: 'retry', delayMs: 100 });
    expect(scheduler.deadline('a')).toBe(1100);
    expect(scheduler.requeueAfter('b', 5_000)).toBe(5_000);
    expect(scheduler.deadline('b')).toBe(6_000);
    expect(scheduler.failures('b')).toBe(0);
  });
});

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('[retry_scheduler: zero dependencies] its own systemClock follows vi.useFakeTimers', () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const scheduler = new RetryScheduler<string>({ onRetry: (k) => fired.push(k) });
    schedule(scheduler, 'a');
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['a']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("[retry_scheduler: zero dependencies] systemClock timers are unref'd, so a pending retry never holds the process open", () => {
    const handle = systemClock.setTimeout(() => {}, 1e9) as { hasRef(): boolean };
    try {
      expect(handle.hasRef()).toBe(false);
    } finally {
      systemClock.clearTimeout(handle);
    }
  });
});
