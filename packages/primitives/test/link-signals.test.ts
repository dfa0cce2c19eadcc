import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ManualClock, linkSignals, sleep } from '../src/index.js';

describe('primitives: linkSignals', () => {
  it('[primitives: linkSignals] aborts with the reason of the first input to abort, then detaches from every input', () => {
    const a = new AbortController();
    const b = new AbortController();
    const link = linkSignals([a.signal, undefined, b.signal]);
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(1);
    b.abort(new Error('b went'));
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toEqual(new Error('b went'));
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
    a.abort(new Error('a went later'));
    expect(link.signal.reason).toEqual(new Error('b went'));
  });

  it('[primitives: linkSignals] an input already aborted aborts the link at once and attaches nothing', () => {
    const a = new AbortController();
    const b = new AbortController();
    b.abort('early');
    const clock = new ManualClock();
    const link = linkSignals([a.signal, b.signal], { timeoutMs: 5, clock });
    expect(link.signal.reason).toBe('early');
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });

  it('[primitives: linkSignals] the timeout runs on the given clock and aborts with its reason; dispose clears the timer and listeners', () => {
    const clock = new ManualClock();
    const parent = new AbortController();
    const timed = linkSignals([parent.signal], { timeoutMs: 100, clock, timeoutReason: () => new Error('too slow') });
    clock.advance(99);
    expect(timed.signal.aborted).toBe(false);
    clock.advance(1);
    expect(timed.signal.reason).toEqual(new Error('too slow'));
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);

    const disposed = linkSignals([parent.signal], { timeoutMs: 100, clock });
    expect(clock.pending).toBe(1);
    {
      using _ = disposed;
    }
    expect(clock.pending).toBe(0);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    clock.advance(1_000);
    parent.abort();
    expect(disposed.signal.aborted).toBe(false);
    disposed.dispose();
  });

  it('[primitives: linkSignals] the default timeout reason is a TimeoutError', async () => {
    const clock = new ManualClock();
    const link = linkSignals([], { timeoutMs: 10, clock });
    const waiting = sleep(clock, 1_000, { signal: link.signal });
    clock.advance(10);
    await expect(waiting).rejects.toMatchObject({ name: 'TimeoutError' });
  });
});
