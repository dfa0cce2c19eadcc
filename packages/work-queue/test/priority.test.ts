import { describe, expect, it } from 'vitest';
import { ManualClock, OptionsError } from '@reconcile-loop/primitives';
import { WorkQueue, type WorkQueueObserver } from '../src/index.js';

/** Every key handed out by `tryGet` until the queue is empty, each released at once. */
function drainOrder(q: WorkQueue<string>): string[] {
  const order: string[] = [];
  for (let key = q.tryGet(); key !== undefined; key = q.tryGet()) {
    order.push(key);
    q.done(key);
  }
  return order;
}

describe('WorkQueue priorities', () => {
  it('[work_queue: priority] normal keys are handed out before low ones, each priority in order of readiness', () => {
    const q = new WorkQueue<string>({ priority: true, clock: new ManualClock(0) });
    q.add('l1', 'low');
    q.add('n1');
    q.add('l2', 'low');
    q.add('n2', 'normal');
    expect(q.size).toBe(4);
    expect(q.byPriority()).toEqual({ normal: { depth: 2, oldestMs: 0 }, low: { depth: 2, oldestMs: 0 } });
    expect(drainOrder(q)).toEqual(['n1', 'n2', 'l1', 'l2']);
  });

  it('[work_queue: priority] without the option every key is one FIFO, whatever priority it is added at', () => {
    const q = new WorkQueue<string>({ clock: new ManualClock(0) });
    q.add('l1', 'low');
    q.add('n1');
    q.add('l2', 'low');
    expect(q.byPriority().low.depth).toBe(0);
    expect(drainOrder(q)).toEqual(['l1', 'n1', 'l2']);
  });

  it('[work_queue: priority] a key queued low and added normal is promoted (one entry, at the back of normal); added low again it stays where it is', () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ priority: true, clock });
    q.add('a', 'low');
    q.add('b', 'low');
    q.add('n');
    q.add('b'); // promoted behind n
    q.add('b', 'low'); // already normal: no demotion
    q.add('n', 'low'); // already normal: nothing
    expect(q.size).toBe(3);
    expect(q.byPriority()).toEqual({ normal: { depth: 2, oldestMs: 0 }, low: { depth: 1, oldestMs: 0 } });
    expect(drainOrder(q)).toEqual(['n', 'b', 'a']);
  });

  it('[work_queue: priority] a held key re-added is dirty once, at the higher priority of its re-adds, and queued there at done', () => {
    const q = new WorkQueue<string>({ priority: true, clock: new ManualClock(0) });
    q.add('a', 'low');
    q.add('b', 'low');
    expect(q.tryGet()).toBe('a');
    q.add('a', 'low');
    expect(q.isDirty('a')).toBe(true);
    expect(q.has('a')).toBe(false); // held, never queued twice
    q.add('a'); // raised to normal while dirty
    q.add('a', 'low'); // not lowered again
    q.done('a');
    expect(q.byPriority().normal.depth).toBe(1);
    expect(q.tryGet()).toBe('a'); // normal before the low b
    expect(q.tryGet()).toBe('b');
    expect(q.tryGet()).toBeUndefined();
  });

  it('[work_queue: aging] once the oldest low key has waited agingMs, normal and low keys take turns', () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ priority: true, agingMs: 1_000, clock });
    for (const key of ['l1', 'l2', 'l3']) q.add(key, 'low');
    for (const key of ['n1', 'n2', 'n3', 'n4']) q.add(key);
    const handed: string[] = [];
    const take = (): void => {
      const key = q.tryGet() as string;
      handed.push(key);
      q.done(key);
    };
    take(); // l1 has waited 0 ms: normal first
    clock.advance(999);
    take(); // 999 ms: still normal
    expect(q.byPriority().low.oldestMs).toBe(999);
    clock.advance(1);
    take(); // aged: the turns begin
    take();
    take();
    take();
    take();
    expect(handed).toEqual(['n1', 'n2', 'n3', 'l1', 'n4', 'l2', 'l3']);
  });

  it('[work_queue: aging] a low key is never starved by a stream of normal keys that never lets the normal queue empty', () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ priority: true, agingMs: 100, clock });
    q.add('initial', 'low');
    let handed = 0;
    let next = 0;
    for (;;) {
      q.add(`change-${next++}`);
      q.add(`change-${next++}`); // two new changes for every hand-out: the normal queue only grows
      clock.advance(10);
      const key = q.tryGet() as string;
      handed += 1;
      q.done(key);
      if (key === 'initial') break;
      expect(handed).toBeLessThan(1_000);
    }
    // Aged at 100 ms = the 10th hand-out; 2·(0+1) hand-outs later at the latest.
    expect(handed).toBeLessThanOrEqual(12);
  });

  it('[work_queue: priority] hooks carry the priority of each add and hand-out; byPriority reports depth and oldest age', () => {
    const clock = new ManualClock(500);
    const events: unknown[] = [];
    const observer: WorkQueueObserver<string> = {
      onAdd: ({ key, priority, dirty }) => events.push(['add', key, priority, dirty]),
      onGet: ({ key, priority, queuedMs }) => events.push(['get', key, priority, queuedMs]),
    };
    const q = new WorkQueue<string>({ priority: true, clock, observer });
    q.add('a', 'low');
    clock.advance(40);
    q.add('b');
    clock.advance(10);
    expect(q.byPriority()).toEqual({ normal: { depth: 1, oldestMs: 10 }, low: { depth: 1, oldestMs: 50 } });
    q.add('a'); // promoted: not a new add, and its queue time still counts from its first add
    expect(q.byPriority()).toEqual({ normal: { depth: 2, oldestMs: 10 }, low: { depth: 0, oldestMs: 0 } });
    clock.advance(5);
    q.tryGet();
    q.tryGet();
    expect(events).toEqual([
      ['add', 'a', 'low', false],
      ['add', 'b', 'normal', false],
      ['get', 'b', 'normal', 15],
      ['get', 'a', 'normal', 55],
    ]);
  });

  it('[work_queue: priority] a waiting consumer gets a low key at once; stop drops both priorities', async () => {
    const q = new WorkQueue<string>({ priority: true, clock: new ManualClock(0) });
    const waiting = q.get();
    q.add('a', 'low');
    await expect(waiting).resolves.toBe('a');
    q.add('b', 'low');
    q.add('c');
    q.stop();
    expect(q.size).toBe(0);
    expect(q.byPriority()).toEqual({ normal: { depth: 0, oldestMs: 0 }, low: { depth: 0, oldestMs: 0 } });
  });

  it('[work_queue: options] priority must be a boolean, agingMs a finite number in [0, 2³¹−1], an add priority normal or low', () => {
    expect(() => new WorkQueue({ priority: 'yes' as unknown as boolean })).toThrow(OptionsError);
    for (const agingMs of [-1, Number.NaN, Infinity, 2 ** 31, '5' as unknown as number]) {
      expect(() => new WorkQueue({ priority: true, agingMs })).toThrow(OptionsError);
    }
    const q = new WorkQueue<string>({ priority: true });
    expect(() => q.add('a', 'high' as unknown as 'low')).toThrow(OptionsError);
    expect(q.size).toBe(0);
  });
});
