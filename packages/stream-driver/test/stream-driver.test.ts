import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SOURCE_RETRY,
  ObjectStore,
  deleteEvent,
  releaseEvent,
  replaceEvent,
  upsertEvent,
  type SourceEvent,
} from '@reconcile-loop/object-store';
import { ManualClock, type BackoffPolicy } from '@reconcile-loop/primitives';
import { ControlledSource, recordingLogger, settle } from '@reconcile-loop/test-support';
import { InProcessSource, StreamDriver, type StreamDriverOptions } from '../src/index.js';

interface Cell {
  pool: string;
  v: number;
}

function setup(
  {
    retry = { initialMs: 1_000, maxMs: 30_000 },
    ...options
  }: Partial<StreamDriverOptions<Cell, string>> & { retry?: BackoffPolicy } = {},
  onOpen?: ControlledSource<Cell>['onOpen'],
) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const source = new ControlledSource<Cell>({ retry });
  source.onOpen = onOpen;
  const store = new ObjectStore<Cell, string>({ keyMap: (cell) => cell.pool });
  const notified: string[][] = [];
  const driver = new StreamDriver<Cell, string>({
    source,
    store,
    onAffected: (parents) => notified.push([...parents]),
    clock,
    logger,
    ...options,
  });
  const controller = new AbortController();
  const running = driver.run(controller.signal);
  return { clock, logger, source, store, notified, driver, controller, running };
}

const cell = (pool: string, v = 0): Cell => ({ pool, v });

describe('StreamDriver', () => {
  it('[source_stream_driver: WaitForCacheSync] waitForSync resolves only after the first replace is applied', async () => {
    const { source, store, driver, controller, running } = setup();
    let synced = false;
    const waiting = driver.waitForSync().then(() => {
      synced = true;
      // Resolved after the replace is in the store, never before.
      expect(store.has('a')).toBe(true);
    });
    await settle();
    expect(source.streams).toHaveLength(1);
    expect(synced).toBe(false);
    expect(driver.synced).toBe(false);

    source.last.push(replaceEvent([['a', cell('p1')]]));
    await waiting;
    expect(synced).toBe(true);
    expect(driver.synced).toBe(true);
    await expect(driver.waitForSync()).resolves.toBeUndefined();

    controller.abort();
    await running;
  });

  it('[source_stream_driver: WaitForCacheSync] waitForSync rejects with the abort reason, and with RL_DRIVER_STOPPED when run ends unsynced', async () => {
    const { driver, controller, running } = setup();
    const own = new AbortController();
    const waitOwn = driver.waitForSync(own.signal);
    const waitPlain = driver.waitForSync();
    own.abort(new Error('gave up'));
    await expect(waitOwn).rejects.toThrow('gave up');
    controller.abort();
    await running;
    await expect(waitPlain).rejects.toMatchObject({ code: 'RL_DRIVER_STOPPED' });
    await expect(driver.waitForSync()).rejects.toMatchObject({ code: 'RL_DRIVER_STOPPED' });
    expect(driver.synced).toBe(false);
  });

  it('[source_stream_driver: WaitForCacheSync] synced stays true across a reopen', async () => {
    const { clock, source, driver, controller, running } = setup({}, (stream) => stream.push(replaceEvent([])));
    await driver.waitForSync();
    source.last.fail(new Error('boom'));
    await settle();
    expect(driver.synced).toBe(true);
    await clock.advanceAsync(1_000);
    expect(source.streams).toHaveLength(2);
    expect(driver.synced).toBe(true);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Streaming a listing into the store] a stream that does not open with a replace is closed, logged and reopened; its events never reach the store', async () => {
    const { clock, logger, source, store, notified, driver, controller, running } = setup({}, (stream, index) => {
      if (index === 0) stream.push(upsertEvent('a', cell('p1')));
      else stream.push(replaceEvent([['b', cell('p2')]]));
    });
    await settle();
    expect(source.streams[0]!.closed).toBe(true);
    expect(store.has('a')).toBe(false);
    expect(notified).toEqual([]);
    const logged = logger.entries.find((e) => e.level === 'error');
    expect(logged?.fields.err).toMatchObject({ code: 'RL_DRIVER_NO_INITIAL_REPLACE', firstEventType: 'upsert' });

    await clock.advanceAsync(999);
    expect(source.streams).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(source.streams).toHaveLength(2);
    await driver.waitForSync();
    expect([...store.keys()]).toEqual(['b']);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Streaming a listing into the store] a listing arrives as one replace and later replaces mid-stream are applied whole', async () => {
    const { source, store, notified, driver, controller, running } = setup();
    await settle();
    source.last.push(
      replaceEvent([
        ['a', cell('p1')],
        ['b', cell('p2')],
      ]),
    );
    await driver.waitForSync();
    source.last.push(replaceEvent([['b', cell('p2', 1)]]));
    await settle();
    expect(store.keys()).toEqual(['b']);
    expect(notified).toEqual([
      ['p1', 'p2'],
      ['p2', 'p1'],
    ]);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Cache-before-notify ordering] onAffected sees the store already holding the event', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    const seen: Array<[string, number | undefined, number]> = [];
    const driver = new StreamDriver<Cell, string>({
      source,
      store,
      clock,
      onAffected: (parents) => {
        for (const parent of parents) seen.push([parent, store.get('a')?.v, store.members(parent).size]);
      },
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await settle();
    source.last.push(replaceEvent([['a', cell('p1', 1)]]), upsertEvent('a', cell('p1', 2)), deleteEvent('a'));
    await settle();
    expect(seen).toEqual([
      ['p1', 1, 1],
      ['p1', 2, 1],
      ['p1', undefined, 0],
    ]);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Retry inside vs outside the stream] a stream that fails or ends is logged, closed and reopened on the clock (outer retry)', async () => {
    const { clock, logger, source, driver, controller, running } = setup(
      { retry: { initialMs: 5_000, maxMs: 30_000 } },
      (stream) => stream.push(replaceEvent([])),
    );
    await driver.waitForSync();
    const failure = new Error('stream died');
    source.last.fail(failure);
    await settle();
    expect(source.streams[0]!.closed).toBe(true);
    expect(logger.entries.some((e) => e.level === 'error' && e.fields.err === failure)).toBe(true);
    await clock.advanceAsync(4_999);
    expect(source.streams).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(source.streams).toHaveLength(2);

    // A stream that ends cleanly gets the same outer retry; it counts as the second failure in a row.
    source.last.end();
    await settle();
    await clock.advanceAsync(9_999);
    expect(source.streams).toHaveLength(2);
    await clock.advanceAsync(1);
    expect(source.streams).toHaveLength(3);
    expect(logger.entries.some((e) => e.level === 'warn' && e.message.includes('ended'))).toBe(true);
    controller.abort();
    await running;
    expect(clock.pending).toBe(0);
  });

  it('[source_stream_driver: Retry inside vs outside the stream] run never rejects for a stream failure: open() throwing and a malformed event are retried', async () => {
    const clock = new ManualClock();
    const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    let opens = 0;
    const driver = new StreamDriver<Cell, string>({
      source: {
        name: 'flaky',
        retry: { initialMs: 10, maxMs: 30_000 },
        open: async function* () {
          opens += 1;
          if (opens === 1) throw new Error('cannot open');
          yield replaceEvent([['a', cell('p1')]]);
          if (opens === 2) yield { type: 'bogus' } as unknown as SourceEvent<Cell>;
          await new Promise(() => {});
        },
      },
      store,
      onAffected: () => {},
      clock,
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await clock.advanceAsync(10);
    expect(opens).toBe(2);
    expect(driver.synced).toBe(true);
    await clock.advanceAsync(20); // the second failure in a row waits twice as long
    expect(opens).toBe(3);
    expect(store.keys()).toEqual(['a']);
    controller.abort();
    // The third stream ignores its signal and is parked on a promise that never settles: the
    // driver requests the close and still returns.
    await expect(running).resolves.toBeUndefined();
  });

  it('[stream-driver deviation: abort with a pending next()] a source that ignores its signal cannot hang run(): the close is requested, not awaited', async () => {
    let closeRequested = false;
    const logger = recordingLogger();
    const driver = new StreamDriver<Cell, string>({
      source: {
        name: 'stuck',
        open: () => ({
          [Symbol.asyncIterator]: () => ({
            next: () => new Promise<IteratorResult<SourceEvent<Cell>>>(() => {}),
            return: () => {
              closeRequested = true;
              return Promise.reject(new Error('late close failure'));
            },
          }),
        }),
      },
      store: new ObjectStore<Cell, string>({ keyMap: (c) => c.pool }),
      onAffected: () => {},
      clock: new ManualClock(),
      logger,
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await settle();
    controller.abort();
    await expect(running).resolves.toBeUndefined();
    expect(closeRequested).toBe(true);
    await settle();
    expect(logger.entries.some((e) => e.level === 'warn' && (e.fields.err as Error).message === 'late close failure')).toBe(true);
  });

  it('[stream-driver deviation: abort with a pending next()] the abort race holds one signal listener per open stream and removes it on close', async () => {
    const { clock, source, driver, controller, running } = setup({}, (stream) => stream.push(replaceEvent([])));
    await driver.waitForSync();
    // Each ControlledStream keeps its own abort listener; the rest belong to the driver.
    const driverListeners = (): number => getEventListeners(controller.signal, 'abort').length - source.streams.length;
    for (let reopen = 0; reopen < 3; reopen++) {
      for (let v = 0; v < 50; v++) source.last.push(upsertEvent(`k${v}`, cell('p', v)));
      await settle();
      expect(driverListeners()).toBe(1);
      source.last.end();
      await settle();
      await clock.advanceAsync(10_000);
    }
    expect(source.streams).toHaveLength(4);
    expect(driverListeners()).toBe(1);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Closing a stream during teardown] a close that throws on abort is logged and swallowed', async () => {
    const { logger, source, driver, controller, running } = setup({}, (stream) => {
      stream.push(replaceEvent([]));
      stream.closeError = new Error('close failed');
    });
    await driver.waitForSync();
    controller.abort(new Error('stopping'));
    await expect(running).resolves.toBeUndefined();
    expect(source.last.closed).toBe(true);
    const warn = logger.entries.find((e) => e.level === 'warn' && e.message.includes('closing'));
    expect((warn!.fields.err as Error).message).toBe('close failed');
  });

  it('[source_stream_driver: Closing a stream during teardown] a close failure does not mask the stream failure being unwound', async () => {
    const { clock, logger, source, driver, controller, running } = setup({}, (stream) => {
      stream.push(replaceEvent([]));
      stream.closeError = new Error('close failed');
    });
    await driver.waitForSync();
    const failure = new Error('stream died');
    source.last.fail(failure);
    await settle();
    const errors = logger.entries.filter((e) => e.level === 'error');
    expect(errors.map((e) => e.fields.err)).toEqual([failure]);
    expect(logger.entries.some((e) => e.level === 'warn' && (e.fields.err as Error).message === 'close failed')).toBe(true);
    await clock.advanceAsync(1_000);
    expect(source.streams).toHaveLength(2);
    controller.abort();
    await running;
  });

  it('[source_stream_driver: Closing a stream during teardown] abort closes the stream even while next() is pending', async () => {
    const { source, driver, controller, running } = setup({}, (stream) => stream.push(replaceEvent([])));
    await driver.waitForSync();
    await settle();
    expect(source.last.closed).toBe(false);
    controller.abort();
    await running;
    expect(source.last.closed).toBe(true);
    expect(source.streams).toHaveLength(1);
  });

  it('[source_stream_driver: source.Channel] an in-process source opens with a replace of its world, then streams changes; a reopen replays deletions missed while disconnected', async () => {
    const clock = new ManualClock();
    const registry = new InProcessSource<Cell>('registry', [['a', cell('p1')]], { retry: { initialMs: 100, maxMs: 30_000 } });
    const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    const notified: string[][] = [];
    const driver = new StreamDriver<Cell, string>({
      source: registry,
      store,
      onAffected: (p) => notified.push([...p]),
      clock,
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await driver.waitForSync();
    expect(store.keys()).toEqual(['a']);
    registry.upsert('b', cell('p2'));
    await settle();
    expect(store.keys()).toEqual(['a', 'b']);
    expect(registry.openStreams).toBe(1);

    registry.disconnect();
    await settle();
    expect(registry.openStreams).toBe(0);
    registry.delete('a'); // nobody is listening: a missed deletion
    registry.upsert('c', cell('p3'));
    await settle();
    expect(store.keys()).toEqual(['a', 'b']);
    notified.length = 0;

    await clock.advanceAsync(100);
    expect(store.keys().sort()).toEqual(['b', 'c']);
    expect(notified).toEqual([['p2', 'p3', 'p1']]);
    controller.abort();
    await running;
    await settle();
    expect(registry.openStreams).toBe(0);
  });

  it('[source_stream_driver: source.Channel] disconnect with an error fails the open streams', async () => {
    const registry = new InProcessSource<Cell>('registry');
    const controller = new AbortController();
    const iterator = registry.open(controller.signal)[Symbol.asyncIterator]();
    await expect(iterator.next()).resolves.toMatchObject({ value: { type: 'replace' } });
    registry.upsert('a', cell('p1'));
    registry.disconnect(new Error('gone'));
    await expect(iterator.next()).resolves.toMatchObject({ value: { type: 'upsert', key: 'a' } });
    await expect(iterator.next()).rejects.toThrow('gone');
    expect(registry.delete('missing')).toBe(false);
    expect(registry.snapshot().size).toBe(1);
  });

  it('onAffected throwing is logged and the stream keeps flowing', async () => {
    const logger = recordingLogger();
    const registry = new InProcessSource<Cell>('registry');
    const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    let calls = 0;
    const driver = new StreamDriver<Cell, string>({
      source: registry,
      store,
      logger,
      clock: new ManualClock(),
      onAffected: () => {
        calls += 1;
        throw new Error('handler bug');
      },
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await driver.waitForSync();
    registry.upsert('a', cell('p1'));
    registry.upsert('b', cell('p2'));
    await settle();
    expect(calls).toBe(2);
    expect(store.size).toBe(2);
    expect(logger.entries.filter((e) => e.level === 'error')).toHaveLength(2);
    controller.abort();
    await running;
  });

  it('rejects bad options and a second run with typed errors', async () => {
    const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    const source = new InProcessSource<Cell>('s');
    const badRetry = new InProcessSource<Cell>('bad', [], { retry: { initialMs: -1, maxMs: 10 } });
    expect(() => new StreamDriver({ source: badRetry, store, onAffected: () => {} })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => new StreamDriver({ source: {} as never, store, onAffected: () => {} })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(DEFAULT_SOURCE_RETRY).toEqual({ initialMs: 1_000, maxMs: 30_000 });
    const driver = new StreamDriver({ source, store, onAffected: () => {}, clock: new ManualClock() });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await expect(driver.run(controller.signal)).rejects.toMatchObject({ code: 'RL_DRIVER_ALREADY_RUN' });
    controller.abort();
    await running;
  });
});

describe('StreamDriver: memory', () => {
  it("[source_stream_driver: Streaming a listing into the store] the listing's replace event is unreachable once applied, while the pump waits for the next event (the store keeps maps of its own)", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { source, store, controller, running } = setup();
    await settle();
    let listing: WeakRef<object> | undefined;
    let listed: WeakRef<object> | undefined;
    (() => {
      const event = replaceEvent([
        ['a', cell('p1')],
        ['b', cell('p2')],
      ]);
      listing = new WeakRef(event);
      listed = new WeakRef(event.objects);
      source.last.push(event);
    })();
    await settle();
    expect(store.size).toBe(2);
    // The pump is suspended in its wait for the next event: what it applied last must not be kept by that wait.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(listing?.deref()).toBeUndefined();
    expect(listed?.deref()).toBeUndefined();
    controller.abort();
    await running;
  });

  it('[stream_driver: Release before the listing] a stream may open with a release (a sharded source resharded while closed): applied, its parents passed on as released, and the replace after it syncs', async () => {
    const types: string[] = [];
    const { source, store, driver, controller, running } = setup({ onAffected: (_parents, type) => void types.push(type) });
    await settle();
    source.last.push(
      replaceEvent([
        ['a', cell('p1')],
        ['b', cell('p2')],
      ]),
    );
    await settle();
    source.last.end();
    await settle();
    controller.abort();
    await running;
    // A new driver over the same store: the next stream opens with a release, then its listing.
    const second = new StreamDriver<Cell, string>({
      source,
      store,
      onAffected: (_parents, type) => void types.push(type),
      clock: new ManualClock(),
      logger: recordingLogger(),
    });
    const stop = new AbortController();
    const run = second.run(stop.signal);
    await settle();
    source.last.push(
      releaseEvent<Cell>((c) => c.pool === 'p1'),
      replaceEvent([['a', cell('p1')]]),
    );
    await settle();
    expect(second.synced).toBe(true);
    expect(store.keys()).toEqual(['a']);
    expect(types).toEqual(['replace', 'release', 'replace']);
    expect(driver.synced).toBe(true);
    stop.abort();
    await run;
  });
});
