import { describe, expect, it } from 'vitest';
import { WorkQueue, WorkQueueKeyError, WorkQueueStoppedError } from '../src/index.js';
import type { Key } from '@reconcile-loop/primitives';

/** Settles every promise callback already queued (the queue never uses timers). */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

function drain<K extends Key>(q: WorkQueue<K>): K[] {
  const out: K[] = [];
  for (let k = q.tryGet(); k !== undefined; k = q.tryGet()) out.push(k);
  return out;
}

describe('WorkQueue', () => {
  it('[work_queue: dedup set] a key added twice is delivered once', () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('a');
    expect(q.size).toBe(1);
    expect(q.has('a')).toBe(true);
    expect(drain(q)).toEqual(['a']);
    expect(q.size).toBe(0);
    expect(q.has('a')).toBe(false);
  });

  it('[work_queue: dedup set] keys come out in first-insertion order; re-adding a queued key keeps its place', () => {
    const q = new WorkQueue<string>();
    for (const k of ['b', 'a', 'c', 'b', 'a']) q.add(k);
    expect(drain(q)).toEqual(['b', 'a', 'c']);
  });

  it('[work_queue: dedup set] a waiting get wakes on add and the key is handed over, not left queued', async () => {
    const q = new WorkQueue<string>();
    const got = q.get();
    let settled = false;
    void got.then(() => (settled = true));
    await flush();
    expect(settled).toBe(false);
    q.add('x');
    expect(q.has('x')).toBe(false);
    expect(q.size).toBe(0);
    await expect(got).resolves.toBe('x');
    q.done('x');
    q.add('x');
    expect(q.size).toBe(1);
  });

  it('[work_queue: dedup set] tryGet never waits', () => {
    const q = new WorkQueue<number>();
    expect(q.tryGet()).toBeUndefined();
    q.add(1);
    expect(q.tryGet()).toBe(1);
    expect(q.tryGet()).toBeUndefined();
  });

  it('[work_queue: ShutDownWithDrain dropped] stop drops queued keys and rejects the waiting get', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    q.stop();
    expect(q.stopped).toBe(true);
    expect(q.size).toBe(0);
    expect(q.has('a')).toBe(false);
    expect(q.tryGet()).toBeUndefined();
    await expect(q.get()).rejects.toMatchObject({ code: 'RL_QUEUE_STOPPED' });

    const q2 = new WorkQueue<string>();
    const waiting = q2.get();
    q2.stop();
    await expect(waiting).rejects.toBeInstanceOf(WorkQueueStoppedError);
  });

  it('[work_queue: ShutDownWithDrain dropped] stop is idempotent and add after stop is a no-op', async () => {
    const q = new WorkQueue<string>();
    q.stop();
    q.stop();
    q.add('late');
    expect(q.size).toBe(0);
    expect(q.has('late')).toBe(false);
    await expect(q.get()).rejects.toBeInstanceOf(WorkQueueStoppedError);
  });

  it('[work_queue: abortable get] get rejects with the signal reason on abort and frees the consumer slot', async () => {
    const q = new WorkQueue<string>();
    const ac = new AbortController();
    const waiting = q.get(ac.signal);
    const reason = new Error('loop stopping');
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    // The aborted waiter is gone: a key added now stays queued for the next consumer.
    q.add('a');
    expect(q.size).toBe(1);
    await expect(q.get()).resolves.toBe('a');
  });

  it('[work_queue: abortable get] an already-aborted signal rejects without taking a key', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    const ac = new AbortController();
    ac.abort();
    await expect(q.get(ac.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(q.has('a')).toBe(true);
  });

  it('[work_queue: abortable get] aborting after the key was delivered changes nothing and leaves no listener', async () => {
    const q = new WorkQueue<string>();
    const ac = new AbortController();
    let listeners = 0;
    const add = ac.signal.addEventListener.bind(ac.signal);
    const remove = ac.signal.removeEventListener.bind(ac.signal);
    ac.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners += 1;
      add(...args);
    }) as typeof add;
    ac.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners -= 1;
      remove(...args);
    }) as typeof remove;
    const waiting = q.get(ac.signal);
    expect(listeners).toBe(1);
    q.add('a');
    expect(listeners).toBe(0);
    ac.abort();
    await expect(waiting).resolves.toBe('a');
  });

  it('[work_queue: primitive keys] keys dedup by value, and distinct primitive types stay distinct', () => {
    const q = new WorkQueue<Key>();
    for (const k of [1, '1', 1n, true, 1, '1', 1n, true, 0, -0]) q.add(k);
    expect(drain(q)).toEqual([1, '1', 1n, true, 0]);
    // NaN is not a Key (primitives' isKey): it would be a key no `===` lookup finds.
    expect(() => q.add(Number.NaN)).toThrow(WorkQueueKeyError);
  });

  it('[work_queue: primitive keys] a non-primitive key is a typed error, not a silent identity-keyed entry', () => {
    const q = new WorkQueue<string>();
    const bad = { ns: 'a', name: 'b' } as unknown as string;
    expect(() => q.add(bad)).toThrow(WorkQueueKeyError);
    expect(() => q.add(undefined as unknown as string)).toThrow(expect.objectContaining({ code: 'RL_QUEUE_INVALID_KEY' }));
    expect(q.size).toBe(0);
  });

  it('[work_queue: dedup set] order survives internal compaction across many keys', () => {
    const q = new WorkQueue<number>();
    const out: number[] = [];
    for (let i = 0; i < 5000; i++) {
      q.add(i);
      q.add(i + 1);
      if (i % 2 === 1) out.push(q.tryGet() as number);
    }
    out.push(...drain(q));
    expect(out).toEqual(Array.from({ length: 5001 }, (_, i) => i));
  });
});
