import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { WorkQueue, type WorkQueueObserver } from '../src/index.js';

type Event = [string, Record<string, unknown>];

function recording(): { events: Event[]; observer: WorkQueueObserver<string> } {
  const events: Event[] = [];
  return {
    events,
    observer: {
      onAdd: (e) => events.push(['add', { ...e }]),
      onGet: (e) => events.push(['get', { ...e }]),
      onDone: (e) => events.push(['done', { ...e }]),
    },
  };
}

describe('WorkQueue metrics hooks', () => {
  it('[work_queue: metrics hooks] adds, queue duration (add → get) and work duration (get → done) on the injected clock', () => {
    const clock = new ManualClock(1_000);
    const { events, observer } = recording();
    const q = new WorkQueue<string>({ clock, observer });
    q.add('a');
    q.add('b');
    q.add('a'); // already queued: not an add
    clock.advance(30);
    q.tryGet();
    clock.advance(70);
    q.add('a'); // held: a dirty add, counted
    q.add('a'); // already dirty: nothing
    clock.advance(5);
    q.done('a'); // requeued, measured from its dirty add
    clock.advance(10);
    q.tryGet();
    expect(events).toEqual([
      ['add', { key: 'a', at: 1000, depth: 1, dirty: false, priority: 'normal' }],
      ['add', { key: 'b', at: 1000, depth: 2, dirty: false, priority: 'normal' }],
      ['get', { key: 'a', at: 1030, depth: 1, queuedMs: 30, priority: 'normal' }],
      ['add', { key: 'a', at: 1100, depth: 1, dirty: true, priority: 'normal' }],
      ['done', { key: 'a', at: 1105, workMs: 75, requeued: true }],
      ['get', { key: 'b', at: 1115, depth: 1, queuedMs: 115, priority: 'normal' }],
    ]);
    clock.advance(1);
    q.tryGet();
    expect(events.at(-1)).toEqual(['get', { key: 'a', at: 1116, depth: 0, queuedMs: 16, priority: 'normal' }]);
  });

  it('[work_queue: metrics hooks] a key handed straight to a waiting consumer reports add then get with zero queue time', async () => {
    const clock = new ManualClock(0);
    const { events, observer } = recording();
    const q = new WorkQueue<string>({ clock, observer });
    const waiting = q.get();
    clock.advance(50);
    q.add('x');
    await expect(waiting).resolves.toBe('x');
    expect(events).toEqual([
      ['add', { key: 'x', at: 50, depth: 0, dirty: false, priority: 'normal' }],
      ['get', { key: 'x', at: 50, depth: 0, queuedMs: 0, priority: 'normal' }],
    ]);
  });

  it('[work_queue: metrics hooks] unfinishedWork reports held keys, their summed held time and the longest', () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue<string>({ clock });
    expect(q.unfinishedWork()).toEqual({ processing: 0, totalMs: 0, longestMs: 0 });
    q.add('a');
    q.add('b');
    q.tryGet();
    clock.advance(100);
    q.tryGet();
    clock.advance(20);
    expect(q.unfinishedWork()).toEqual({ processing: 2, totalMs: 140, longestMs: 120 });
    q.done('a');
    expect(q.unfinishedWork()).toEqual({ processing: 1, totalMs: 20, longestMs: 20 });
  });

  it('[work_queue: metrics hooks] a throwing hook goes to onError and changes nothing the queue does', async () => {
    const errors: Array<[unknown, string]> = [];
    const boom = new Error('metrics down');
    const q = new WorkQueue<string>({
      clock: new ManualClock(0),
      observer: {
        onAdd: () => {
          throw boom;
        },
        onGet: () => {
          throw boom;
        },
        onDone: () => {
          throw boom;
        },
      },
      onError: (error, hook) => errors.push([error, hook]),
    });
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    q.done('a');
    expect(q.tryGet()).toBe('a');
    expect(errors.map(([e, h]) => [e === boom, h])).toEqual([
      [true, 'onAdd'],
      [true, 'onGet'],
      [true, 'onAdd'],
      [true, 'onDone'],
      [true, 'onGet'],
    ]);
    const silent = new WorkQueue<string>({
      observer: {
        onAdd: () => {
          throw boom;
        },
      },
      onError: () => {
        throw new Error('sink down too');
      },
    });
    expect(() => silent.add('z')).not.toThrow();
    expect(silent.size).toBe(1);
  });

  it('[work_queue: metrics hooks] a hook that calls back into the queue sees it consistent and cannot break exclusion', async () => {
    const q: WorkQueue<string> = new WorkQueue<string>({
      clock: new ManualClock(0),
      observer: {
        // Re-adding the key from inside its own add/get hooks: it is already queued or held by then.
        onAdd: (e) => q.add(e.key),
        onGet: (e) => q.add(e.key),
      },
    });
    const w1 = q.get();
    const w2 = q.get();
    q.add('k');
    expect(await w1).toBe('k');
    expect(q.isDirty('k')).toBe(true);
    let second = false;
    void w2.then(() => (second = true));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(second).toBe(false); // 'k' is held by the first consumer
    q.done('k');
    await expect(w2).resolves.toBe('k');
  });
});
