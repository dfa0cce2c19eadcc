import type { Key } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { MinHeap } from '../src/heap.js';
import { RetryScheduler } from '../src/index.js';

/** The retry delay `fail(key)` scheduled, or -1 when it scheduled none (parked, or after shutdown). */
function schedule<K extends Key>(scheduler: RetryScheduler<K>, key: K): number {
  const outcome = scheduler.fail(key);
  return outcome.action === 'retry' ? outcome.delayMs : -1;
}

describe('MinHeap', () => {
  it('[retry_scheduler: one exact timer] pops in order for any input', () => {
    fc.assert(
      fc.property(fc.array(fc.integer()), (xs) => {
        const heap = new MinHeap<number>((a, b) => a < b);
        for (const x of xs) heap.push(x);
        const out: number[] = [];
        while (heap.length > 0) out.push(heap.pop() as number);
        expect(out).toEqual([...xs].sort((a, b) => a - b));
        expect(heap.pop()).toBeUndefined();
      }),
    );
  });

  it('[retry_scheduler: one exact timer] 10,000 entries cost O(log n) comparisons per push and pop', () => {
    let comparisons = 0;
    const heap = new MinHeap<number>((a, b) => {
      comparisons += 1;
      return a < b;
    });
    const n = 10_000;
    const log2n = Math.ceil(Math.log2(n));
    // Descending input is the worst case for push: every entry sifts to the root.
    for (let i = n; i > 0; i--) heap.push(i);
    expect(comparisons).toBeLessThanOrEqual(n * log2n);
    comparisons = 0;
    for (let i = 0; i < n; i++) heap.pop();
    expect(comparisons).toBeLessThanOrEqual(2 * n * log2n);
  });

  it('[retry_scheduler: one exact timer] compact keeps heap order over the kept entries', () => {
    const heap = new MinHeap<number>((a, b) => a < b);
    for (let i = 100; i > 0; i--) heap.push(i);
    heap.compact((x) => x % 3 === 0);
    const out: number[] = [];
    while (heap.length > 0) out.push(heap.pop() as number);
    expect(out).toEqual(Array.from({ length: 33 }, (_, i) => 3 * (i + 1)));
  });
});

describe('RetryScheduler at scale', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('[retry_scheduler: one exact timer] replaced and forgotten deadlines do not pile up: the heap stays O(pending)', () => {
    let maxLength = 0;
    const push = MinHeap.prototype.push;
    vi.spyOn(MinHeap.prototype, 'push').mockImplementation(function (this: MinHeap<unknown>, item: unknown) {
      push.call(this, item);
      maxLength = Math.max(maxLength, this.length);
    });
    const clock = new ManualClock(0);
    const scheduler = new RetryScheduler<number>({ onRetry: () => {}, clock, backoff: { initialMs: 100, maxMs: 100 } });
    // One key rescheduled 10,000 times: lazy deletion alone would keep 10,000 entries.
    for (let i = 0; i < 10_000; i++) schedule(scheduler, 1);
    expect(maxLength).toBeLessThanOrEqual(130);
    // 10,000 keys each replaced three times: bounded by twice the live count (plus slack).
    maxLength = 0;
    for (let r = 0; r < 3; r++) for (let k = 2; k < 10_002; k++) schedule(scheduler, k);
    expect(scheduler.pending).toBe(10_001);
    expect(maxLength).toBeLessThanOrEqual(2 * 10_001 + 1);
  });

  it('[retry_scheduler: one exact timer] 10,000 keys fire in deadline order, then scheduling order, with one timer at a time', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const scheduler = new RetryScheduler<number>({
      onRetry: (k) => fired.push(k),
      clock,
      backoff: { initialMs: 1, maxMs: 1 << 12 },
    });
    // Deterministic shuffle of failure counts so deadlines interleave with scheduling order.
    const expected: Array<{ key: number; deadline: number; seq: number }> = [];
    let seq = 0;
    for (let key = 0; key < 10_000; key++) {
      const failures = ((key * 7919) % 13) + 1;
      let delay = 0;
      for (let f = 0; f < failures; f++) delay = schedule(scheduler, key);
      expected.push({ key, deadline: delay, seq: seq++ });
    }
    expected.sort((a, b) => a.deadline - b.deadline || a.seq - b.seq);
    clock.advance(1 << 13);
    expect(fired).toEqual(expected.map((e) => e.key));
    expect(clock.maxPending).toBe(1);
    expect(clock.pending).toBe(0);
    // One timer per distinct deadline plus the re-arms while the earliest dropped: far fewer than keys.
    expect(clock.setTimeoutCalls).toBeLessThan(40);
  });
});
