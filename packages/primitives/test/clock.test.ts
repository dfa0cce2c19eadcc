import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, ManualClock, abortReason, raceAbort, sleep, systemClock, timerDelay } from '../src/index.js';
import { macrotaskTurns } from './helpers.js';

/** Settles-state probe that never waits on time: flushes microtasks only. */
async function state(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  let result: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => (result = 'resolved'),
    () => (result = 'rejected'),
  );
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return result;
}

describe('clock: sleep', () => {
  it('[clock: sleep] resolves once the manual clock reaches the delay, not before', async () => {
    const clock = new ManualClock();
    const done = sleep(clock, 100);
    clock.advance(99);
    expect(await state(done)).toBe('pending');
    clock.advance(1);
    expect(await state(done)).toBe('resolved');
    expect(clock.pending).toBe(0);
  });

  it('[clock: sleep] a negative delay is clamped to zero', async () => {
    const clock = new ManualClock();
    const done = sleep(clock, -5);
    // The clock is handed 0, not -5: what a real timer would do with a negative delay is not relied on.
    expect(clock.delays).toEqual([0]);
    clock.advance(0);
    expect(await state(done)).toBe('resolved');
  });

  it('[clock: sleep] rejects with the abort reason and clears its timer and listener', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const reason = new Error('stopping');
    const done = sleep(clock, 1_000, controller.signal);
    expect(clock.pending).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort(reason);
    await expect(done).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('[clock: sleep] an abort without a reason rejects with an AbortError', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const done = sleep(clock, 1_000, controller.signal);
    controller.abort();
    await expect(done).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('[clock: sleep] an already-aborted signal rejects at once and schedules no timer', async () => {
    const clock = new ManualClock();
    const reason = new Error('already');
    const done = sleep(clock, 1_000, AbortSignal.abort(reason));
    await expect(done).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
  });

  it('[clock: sleep] a sleep that resolves removes its abort listener, so a later abort does nothing', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const done = sleep(clock, 10, controller.signal);
    clock.advance(10);
    await expect(done).resolves.toBeUndefined();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort(new Error('late'));
    expect(clock.pending).toBe(0);
  });

  it('[clock: sleep] abortReason falls back to an AbortError for a signal without a reason', () => {
    const signal = { aborted: true, reason: undefined } as unknown as AbortSignal;
    const reason = abortReason(signal);
    expect(reason).toBeInstanceOf(DOMException);
    expect((reason as DOMException).name).toBe('AbortError');
    const given = new Error('x');
    expect(abortReason(AbortSignal.abort(given))).toBe(given);
  });
});

describe('clock: raceAbort', () => {
  /** Runs `body`, then lets Node report unhandled rejections; returns the reasons it reported. */
  async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
    const reported: unknown[] = [];
    const record = (reason: unknown): void => void reported.push(reason);
    process.on('unhandledRejection', record);
    try {
      await body();
      await macrotaskTurns();
    } finally {
      process.off('unhandledRejection', record);
    }
    return reported;
  }

  it("[clock: raceAbort] resolves with the promise's value and leaves no listener", async () => {
    const controller = new AbortController();
    const raced = raceAbort(Promise.resolve(42), controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    await expect(raced).resolves.toBe(42);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it("[clock: raceAbort] passes the promise's own rejection through and leaves no listener", async () => {
    const controller = new AbortController();
    const failure = new Error('list failed');
    await expect(raceAbort(Promise.reject(failure), controller.signal)).rejects.toBe(failure);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('[clock: raceAbort] rejects with the abort reason as soon as the signal aborts, though the promise never settles', async () => {
    const controller = new AbortController();
    const reason = new Error('stopping');
    const raced = raceAbort(new Promise<never>(() => {}), controller.signal);
    expect(await state(raced)).toBe('pending');
    controller.abort(reason);
    await expect(raced).rejects.toBe(reason);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('[clock: raceAbort] an abort without a reason rejects with an AbortError', async () => {
    const controller = new AbortController();
    const raced = raceAbort(new Promise<never>(() => {}), controller.signal);
    controller.abort();
    await expect(raced).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('[clock: raceAbort] an already-aborted signal rejects at once with its reason and adds no listener', async () => {
    const reason = new Error('already');
    const signal = AbortSignal.abort(reason);
    const raced = raceAbort(Promise.resolve('too late'), signal);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    await expect(raced).rejects.toBe(reason);
  });

  it("[clock: raceAbort] the losing promise's later rejection is not unhandled (abort while pending)", async () => {
    const late = new Error('late failure');
    const reported = await unhandledDuring(async () => {
      let rejectLate!: (error: unknown) => void;
      const losing = new Promise<never>((_resolve, reject) => (rejectLate = reject));
      const controller = new AbortController();
      const raced = raceAbort(losing, controller.signal);
      controller.abort(new Error('stop'));
      await expect(raced).rejects.toThrow('stop');
      rejectLate(late);
    });
    expect(reported).not.toContain(late);
  });

  it("[clock: raceAbort] the losing promise's later rejection is not unhandled (signal already aborted)", async () => {
    const late = new Error('late failure');
    const reported = await unhandledDuring(async () => {
      let rejectLate!: (error: unknown) => void;
      const losing = new Promise<never>((_resolve, reject) => (rejectLate = reject));
      await expect(raceAbort(losing, AbortSignal.abort(new Error('stop')))).rejects.toThrow('stop');
      rejectLate(late);
    });
    expect(reported).not.toContain(late);
  });
});

describe('clock: systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('[clock: systemClock] reads the globals at call time, so vi.useFakeTimers drives now() and setTimeout', () => {
    vi.useFakeTimers();
    const start = systemClock.now();
    const fired = vi.fn();
    systemClock.setTimeout(fired, 50);
    vi.advanceTimersByTime(49);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    expect(systemClock.now() - start).toBe(50);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('[clock: systemClock] clearTimeout cancels a pending callback; clearing twice is ignored', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const handle = systemClock.setTimeout(fired, 10);
    expect(vi.getTimerCount()).toBe(1);
    systemClock.clearTimeout(handle);
    systemClock.clearTimeout(handle);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(fired).not.toHaveBeenCalled();
  });

  it('[clock: systemClock] sleep on systemClock under fake timers resolves and aborts without a timer left behind', async () => {
    vi.useFakeTimers();
    const done = sleep(systemClock, 1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(done).resolves.toBeUndefined();
    const controller = new AbortController();
    const aborted = sleep(systemClock, 1_000, controller.signal);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("[clock: systemClock] real timers are unref'd, so a pending retry never keeps the process alive", () => {
    const handle = systemClock.setTimeout(() => {}, 60_000) as NodeJS.Timeout;
    try {
      expect(handle.hasRef()).toBe(false);
    } finally {
      systemClock.clearTimeout(handle);
    }
  });

  it("[clock: systemClock] a wait that asks to keep the process alive is ref'd; the clamp keeps an endless delay a valid timer", () => {
    const kept = systemClock.setTimeout(() => {}, 60_000, { keepAlive: true }) as NodeJS.Timeout;
    const endless = systemClock.setTimeout(() => {}, Number.POSITIVE_INFINITY) as NodeJS.Timeout;
    try {
      expect(kept.hasRef()).toBe(true);
      expect(endless.hasRef()).toBe(false);
    } finally {
      systemClock.clearTimeout(kept);
      systemClock.clearTimeout(endless);
    }
    expect(timerDelay(Number.POSITIVE_INFINITY)).toBe(MAX_TIMER_MS);
    expect(timerDelay(-1)).toBe(0);
    expect(timerDelay(Number.NaN)).toBe(0);
    expect(timerDelay(1_500)).toBe(1_500);
  });

  it('[clock: systemClock] is frozen', () => {
    expect(Object.isFrozen(systemClock)).toBe(true);
  });
});
