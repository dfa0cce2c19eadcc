import { OptionsError } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { WorkQueue, WorkQueueDrainTimeoutError, WorkQueueNotProcessingError, WorkQueueStoppedError } from '../src/index.js';

/** Settles every promise callback already queued (the queue itself never uses timers here). */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** Tracks a promise's outcome without awaiting it. */
function track<T>(promise: Promise<T>): { value?: T; error?: unknown; settled: boolean } {
  const state: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  );
  return state;
}

describe('WorkQueue per-key exclusion', () => {
  it('[work_queue: per-key exclusion] a key added while held is marked dirty, not handed to a second consumer, and handed out right after done', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    expect(await q.get()).toBe('a');
    expect(q.isProcessing('a')).toBe(true);
    expect(q.processingCount).toBe(1);
    q.add('a');
    q.add('a'); // dedup: still one dirty mark
    expect(q.isDirty('a')).toBe(true);
    expect(q.has('a')).toBe(false);
    expect(q.size).toBe(0);
    const second = track(q.get());
    await flush();
    expect(second.settled).toBe(false); // "a" is held, so the second consumer waits
    q.done('a');
    await flush();
    expect(second.value).toBe('a');
    expect(q.isProcessing('a')).toBe(true);
    expect(q.isDirty('a')).toBe(false);
    q.done('a');
    expect(q.processingCount).toBe(0);
    expect(q.tryGet()).toBeUndefined(); // delivered exactly once more, not twice
  });

  it('[work_queue: per-key exclusion] a held key that was not re-added is simply released by done', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    expect(q.tryGet()).toBe('a');
    q.done('a');
    expect(q.isProcessing('a')).toBe(false);
    expect(q.has('a')).toBe(false);
    expect(q.size).toBe(1);
    expect(await q.get()).toBe('b');
  });

  it('[work_queue: per-key exclusion] done for a key nobody holds is a typed error', () => {
    const q = new WorkQueue<string>();
    expect(() => q.done('never')).toThrow(WorkQueueNotProcessingError);
    q.add('a');
    q.tryGet();
    q.done('a');
    expect(() => q.done('a')).toThrow(expect.objectContaining({ code: 'RL_QUEUE_NOT_PROCESSING', key: 'a' }));
  });

  it('[work_queue: several consumers] many consumers may wait at once; keys go to them first come first served', async () => {
    const q = new WorkQueue<string>();
    const w1 = track(q.get());
    const w2 = track(q.get());
    const w3 = track(q.get());
    expect(q.waiting).toBe(3);
    q.add('x');
    q.add('y');
    await flush();
    expect([w1.value, w2.value, w3.settled]).toEqual(['x', 'y', false]);
    expect(q.processingCount).toBe(2);
    expect(q.waiting).toBe(1);
    q.add('x'); // held by w1: dirty, must not reach w3
    await flush();
    expect(w3.settled).toBe(false);
    q.done('x');
    await flush();
    expect(w3.value).toBe('x');
  });

  it('[work_queue: several consumers] aborting one waiting consumer leaves the others waiting in order', async () => {
    const q = new WorkQueue<string>();
    const ac = new AbortController();
    const w1 = track(q.get());
    const w2 = track(q.get(ac.signal));
    const w3 = track(q.get());
    ac.abort(new Error('worker 2 leaving'));
    await flush();
    expect((w2.error as Error).message).toBe('worker 2 leaving');
    expect(q.waiting).toBe(2);
    q.add('a');
    q.add('b');
    await flush();
    expect([w1.value, w3.value]).toEqual(['a', 'b']);
  });

  it('[work_queue: fairness] a hot key re-added during every reconcile goes to the back each time and cannot starve the others', async () => {
    const q = new WorkQueue<string>();
    for (const k of ['hot', 'a', 'b', 'c']) q.add(k);
    const order: string[] = [];
    for (let i = 0; i < 8; i++) {
      const key = await q.get();
      order.push(key);
      q.add('hot'); // an event for the hot parent arrives during every reconcile
      q.done(key);
    }
    expect(order).toEqual(['hot', 'a', 'b', 'c', 'hot', 'hot', 'hot', 'hot']);
    // Another key added while the hot one cycles gets the very next turn after the key being reconciled.
    const key = await q.get();
    q.add('late');
    q.add('hot');
    q.done(key);
    expect([q.tryGet(), q.tryGet()]).toEqual(['late', 'hot']);
  });

  it('[work_queue: ShutDownWithDrain] stop rejects every waiting consumer, drops queued keys and dirty marks, and leaves held keys to their done', async () => {
    const q = new WorkQueue<string>();
    q.add('held');
    q.add('queued');
    expect(q.tryGet()).toBe('held');
    q.add('held'); // dirty
    expect(q.tryGet()).toBe('queued');
    const w2 = track(q.get());
    const w3 = track(q.get());
    q.stop();
    await flush();
    expect(w2.error).toBeInstanceOf(WorkQueueStoppedError);
    expect(w3.error).toBeInstanceOf(WorkQueueStoppedError);
    expect(q.processingCount).toBe(2);
    expect(q.isDirty('held')).toBe(false);
    q.done('held'); // its dirty mark was dropped by stop: not queued again
    q.done('queued');
    expect(q.size).toBe(0);
    expect(q.processingCount).toBe(0);
    await expect(q.get()).rejects.toMatchObject({ code: 'RL_QUEUE_STOPPED' });
  });

  it('[work_queue: ShutDownWithDrain] drain stops the queue and resolves when the last held key is done, clearing its deadline timer', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ clock });
    q.add('a');
    q.add('b');
    q.add('c');
    q.tryGet();
    q.tryGet();
    const drained = track(q.drain(5_000));
    expect(q.stopped).toBe(true);
    expect(q.size).toBe(0); // 'c' was queued, not in flight: dropped
    expect(clock.pending).toBe(1);
    q.add('d'); // ignored after stop
    q.done('a');
    await flush();
    expect(drained.settled).toBe(false);
    q.done('b');
    await flush();
    expect(drained.settled).toBe(true);
    expect(drained.error).toBeUndefined();
    expect(clock.pending).toBe(0);
    // Nothing held: a later drain resolves at once and arms nothing.
    await expect(q.drain(1)).resolves.toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('[work_queue: ShutDownWithDrain] a drain that outlives its deadline rejects with the keys still held; they are still released by done', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ clock });
    q.add('slow');
    q.add('quick');
    q.tryGet();
    q.tryGet();
    const drained = track(q.drain(1_000));
    q.done('quick');
    clock.advance(999);
    await flush();
    expect(drained.settled).toBe(false);
    clock.advance(1);
    await flush();
    expect(drained.error).toBeInstanceOf(WorkQueueDrainTimeoutError);
    expect(drained.error).toMatchObject({ code: 'RL_QUEUE_DRAIN_TIMEOUT', keys: ['slow'], timeoutMs: 1_000 });
    q.done('slow');
    expect(q.processingCount).toBe(0);
  });

  it('[work_queue: ShutDownWithDrain] drain can be aborted; bad deadlines are typed errors that leave the queue running', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ clock });
    for (const bad of [-1, Number.NaN, Infinity, 2 ** 31]) {
      await expect(q.drain(bad)).rejects.toBeInstanceOf(OptionsError);
    }
    expect(q.stopped).toBe(false);
    q.add('a');
    q.tryGet();
    const ac = new AbortController();
    const drained = track(q.drain(10_000, ac.signal));
    ac.abort(new Error('hard stop'));
    await flush();
    expect((drained.error as Error).message).toBe('hard stop');
    expect(clock.pending).toBe(0);
    const already = new AbortController();
    already.abort(new Error('gone'));
    await expect(q.drain(10, already.signal)).rejects.toThrow('gone');
  });

  it('[work_queue: options] options of the wrong type are typed errors', () => {
    const bad = [{ observer: 42 }, { observer: null }, { clock: { now: () => 0 } }, { onError: 'log' }] as unknown as Array<
      ConstructorParameters<typeof WorkQueue<string>>[0]
    >;
    for (const options of bad) {
      expect(() => new WorkQueue<string>(options)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
    }
  });
});
