import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { ManualClock, type BackoffPolicy } from '@reconcile-loop/primitives';
import { ControlledSource, recordingLogger, settle } from '@reconcile-loop/test-support';
import {
  InProcessSource,
  ReconcileLoop,
  replaceEvent,
  upsertEvent,
  type ReconcileContext,
  type ReconcileLoopOptions,
} from '../src/index.js';
import { DEFAULT_RESYNC_PERIOD_MS } from '../src/options.js';

interface Cell {
  pool: string | undefined;
  v: number;
}

const cell = (pool: string | undefined, v = 0): Cell => ({ pool, v });

const CLEAN_STOP = { abandoned: [], abandonedSources: [] };

interface Call {
  key: string;
  at: number;
  members: Record<string, number>;
}

type Body = (key: string, ctx: ReconcileContext<Cell, string>) => void | Promise<void>;

function harness(
  options: Partial<ReconcileLoopOptions<Cell, string>> & {
    body?: Body;
    initial?: Array<[string, Cell]>;
    sourceRetry?: BackoffPolicy;
  } = {},
) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const registry = new InProcessSource<Cell>('cells', options.initial ?? [], { retry: options.sourceRetry });
  const calls: Call[] = [];
  const { body, initial: _initial, sourceRetry: _retry, ...rest } = options;
  const loop = new ReconcileLoop<Cell, string>({
    source: registry,
    keyMap: (c) => c.pool,
    reconcile: async (key, ctx) => {
      calls.push({ key, at: clock.now(), members: Object.fromEntries([...ctx.members].map(([k, c]) => [k, c.v])) });
      await body?.(key, ctx);
    },
    clock,
    logger,
    ...rest,
  });
  const keys = () => calls.map((c) => c.key);
  return { clock, logger, registry, calls, loop, keys };
}

describe('ReconcileLoop', () => {
  it('[source_stream_driver: WaitForCacheSync] start() waits for the first replace; nothing is reconciled before it', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const seen: Array<[string, number]> = [];
    const loop = new ReconcileLoop<Cell, string>({
      source,
      keyMap: (c) => c.pool,
      reconcile: (key, ctx) => {
        seen.push([key, ctx.members.size]);
      },
      clock,
    });
    let started = false;
    const starting = loop.start().then(() => (started = true));
    loop.enqueue('p1'); // a manual trigger before sync waits for sync too
    await settle();
    expect(loop.state).toBe('starting');
    expect(started).toBe(false);
    expect(loop.synced).toBe(false);
    expect(seen).toEqual([]);

    source.last.push(
      replaceEvent([
        ['a', cell('p1')],
        ['b', cell('p2')],
        ['c', cell('p2')],
      ]),
    );
    await starting;
    expect(loop.state).toBe('running');
    await settle();
    // Every parent of the listing is reconciled once, against the full listing.
    expect(seen).toEqual([
      ['p1', 1],
      ['p2', 2],
    ]);
    await loop.stop();
  });

  it('[source_stream_driver: Cache-before-notify ordering] a reconcile reads the state of the event that triggered it', async () => {
    const { registry, calls, loop } = harness({
      initial: [['a', cell('p1', 1)]],
      body: (key, ctx) => {
        // The whole-store view agrees with the snapshot: the store was updated before the enqueue.
        for (const [k, c] of ctx.members) expect(ctx.store.get(k)).toBe(c);
        expect(ctx.store.hasMembers(key)).toBe(ctx.members.size > 0);
      },
    });
    await loop.start();
    await settle();
    registry.upsert('a', cell('p1', 2));
    await settle();
    registry.upsert('b', cell('p1', 7));
    await settle();
    expect(calls.map((c) => c.members)).toEqual([{ a: 1 }, { a: 2 }, { a: 2, b: 7 }]);
    expect(loop.store.get('b')).toEqual(cell('p1', 7));
    await loop.stop();
  });

  it('[object_store: EnqueueRequestForOwner] an object whose key map stops mapping is evicted and re-drives the parent it left', async () => {
    const { registry, calls, loop, keys } = harness({
      initial: [
        ['a', cell('p1')],
        ['b', cell('p1')],
      ],
    });
    await loop.start();
    await settle();
    calls.length = 0;
    registry.upsert('a', cell(undefined)); // labels no longer map
    await settle();
    expect(calls).toEqual([{ key: 'p1', at: 0, members: { b: 0 } }]);
    expect(loop.store.has('a')).toBe(false);

    calls.length = 0;
    registry.upsert('b', cell('p2')); // moves: both the parent left and the parent joined are re-driven
    await settle();
    expect(keys().sort()).toEqual(['p1', 'p2']);
    expect(calls.find((c) => c.key === 'p1')?.members).toEqual({});
    await loop.stop();
  });

  it('[loop: Resync period] resync re-enqueues only parents that still have members, every period, without jitter', async () => {
    const { clock, registry, calls, loop, keys } = harness({
      sources: { resyncPeriodMs: 1_000 },
      initial: [
        ['a', cell('p1')],
        ['b', cell('p2')],
      ],
    });
    await loop.start();
    await settle();
    registry.delete('b'); // p2 loses its last member
    await settle();
    expect(keys()).toEqual(['p1', 'p2', 'p2']);
    calls.length = 0;
    await clock.advanceAsync(999);
    expect(calls).toEqual([]);
    await clock.advanceAsync(1);
    expect(calls).toEqual([{ key: 'p1', at: 1_000, members: { a: 0 } }]);
    await clock.advanceAsync(1_000);
    expect(calls.map((c) => c.at)).toEqual([1_000, 2_000]);
    await loop.stop();
    expect(clock.pending).toBe(0);
  });

  it('[loop: Resync period] defaults to 10 h, and 0 disables it', async () => {
    expect(DEFAULT_RESYNC_PERIOD_MS).toBe(36_000_000);
    const on = harness({ initial: [['a', cell('p1')]] });
    await on.loop.start();
    await settle();
    await on.clock.advanceAsync(DEFAULT_RESYNC_PERIOD_MS - 1);
    expect(on.keys()).toEqual(['p1']);
    await on.clock.advanceAsync(1);
    expect(on.keys()).toEqual(['p1', 'p1']);
    await on.loop.stop();

    const off = harness({ sources: { resyncPeriodMs: 0 }, initial: [['a', cell('p1')]] });
    await off.loop.start();
    await settle();
    expect(off.clock.pending).toBe(0);
    await off.clock.advanceAsync(10 * DEFAULT_RESYNC_PERIOD_MS);
    expect(off.keys()).toEqual(['p1']);
    await off.loop.stop();
  });

  it('[retry_scheduler: Delaying queue on earliest readyAt] a reconcile that throws is retried with exponential backoff; success forgets the backoff', async () => {
    let failuresLeft = 3;
    const { clock, registry, calls, loop, logger } = harness({
      retry: { backoff: { initialMs: 100, maxMs: 10_000 } },
      initial: [['a', cell('p1')]],
      body: async () => {
        if (failuresLeft === 0) return;
        failuresLeft -= 1;
        if (failuresLeft === 1) throw new Error('sync throw path'); // rejected promise and throw alike
        await Promise.reject(new Error('transient'));
      },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(1_000);
    expect(calls.map((c) => c.at)).toEqual([0, 100, 300, 700]);
    expect(logger.entries.filter((e) => e.message.includes('retrying')).map((e) => e.fields.retryInMs)).toEqual([100, 200, 400]);

    // Forgotten: the next failure starts again at the base delay.
    failuresLeft = 1;
    registry.upsert('a', cell('p1', 1));
    await settle();
    await clock.advanceAsync(100);
    expect(calls.map((c) => c.at)).toEqual([0, 100, 300, 700, 1_000, 1_100]);
    await loop.stop();
  });

  it('[loop: MaxConcurrentReconciles] one worker by default: reconciles never overlap', async () => {
    let running = 0;
    let peak = 0;
    const { clock, registry, loop, keys } = harness({
      body: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 10));
        running -= 1;
      },
    });
    await loop.start();
    for (const pool of ['p1', 'p2', 'p3']) registry.upsert(`${pool}-a`, cell(pool));
    await clock.advanceAsync(100);
    expect(keys()).toEqual(['p1', 'p2', 'p3']);
    expect(peak).toBe(1);
    await loop.stop();
  });

  it('[loop: Predicates] no filter by default: every event re-drives its parent, even one that changed nothing', async () => {
    const { registry, loop, keys } = harness({ initial: [['a', cell('p1')]] });
    await loop.start();
    await settle();
    registry.upsert('a', cell('p1'));
    await settle();
    registry.upsert('a', cell('p1'));
    await settle();
    expect(keys()).toEqual(['p1', 'p1', 'p1']);
    await loop.stop();
  });

  it('[retry_scheduler: Result{RequeueAfter}] only requeueAfterMs schedules: a returned object without it (a misspelt requeueAfter) schedules nothing', async () => {
    const { clock, loop, keys } = harness({
      sources: { resyncPeriodMs: 0 },
      initial: [['a', cell('p1')]],
      body: () => ({ requeueAfter: 10 }) as unknown as void,
    });
    await loop.start();
    await clock.advanceAsync(1_000);
    expect(keys()).toEqual(['p1']);
    expect(clock.pending).toBe(0);
    await loop.stop();
  });

  it('[source_stream_driver: Retry inside vs outside the stream] a dead stream is reopened after source.retry.initialMs and its relist re-drives a deletion missed meanwhile', async () => {
    const { clock, registry, calls, loop, logger } = harness({
      sourceRetry: { initialMs: 2_000, maxMs: 30_000 },
      initial: [
        ['a', cell('p1')],
        ['b', cell('p2')],
      ],
    });
    await loop.start();
    await settle();
    calls.length = 0;
    registry.disconnect(new Error('registry restarted'));
    await settle();
    registry.delete('b'); // missed: no stream is open
    await clock.advanceAsync(1_999);
    expect(calls).toEqual([]);
    expect(loop.store.has('b')).toBe(true);
    await clock.advanceAsync(1);
    expect(loop.store.has('b')).toBe(false);
    expect(calls.find((c) => c.key === 'p2')).toEqual({ key: 'p2', at: 2_000, members: {} });
    expect(logger.entries.some((e) => e.level === 'error' && (e.fields.err as Error).message === 'registry restarted')).toBe(
      true,
    );
    await loop.stop();
  });

  it('[source_stream_driver: source.Channel] dropped: in-process changes are method calls on a source, and a manual trigger is enqueue()', async () => {
    const { registry, loop, keys, logger } = harness({ initial: [['a', cell('p1')]] });
    await loop.start();
    await settle();
    loop.enqueue('nobody'); // a parent without members is still reconciled when asked
    loop.enqueue('p1');
    loop.enqueue('p1'); // dedup: already queued
    await settle();
    registry.upsert('b', cell('p2'));
    await settle();
    expect(keys()).toEqual(['p1', 'nobody', 'p1', 'p2']);
    expect(() => loop.enqueue({} as unknown as string)).toThrow(expect.objectContaining({ code: 'RL_QUEUE_INVALID_KEY' }));
    expect(logger.entries.filter((e) => e.level === 'error')).toEqual([]); // the typed throw, not a misleading log line
    await loop.stop();
    loop.enqueue('p1'); // ignored once stopped
    await settle();
    expect(keys()).toEqual(['p1', 'nobody', 'p1', 'p2']);
  });

  it('[work_queue: ShutDown vs ShutDownWithDrain] stop() aborts the in-flight reconcile, drops queued keys (no drain) and waits for everything to end', async () => {
    let reason: unknown;
    let finished = false;
    const { clock, registry, loop, keys } = harness({
      initial: [
        ['a', cell('p1')],
        ['b', cell('p2')],
        ['c', cell('p3')],
      ],
      body: async (key, ctx) => {
        if (key !== 'p1') return;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        reason = ctx.signal.reason;
        await settle(2); // cleanup after abort; stop() must wait for it
        finished = true;
      },
    });
    await loop.start();
    await settle();
    expect(keys()).toEqual(['p1']);
    const stopping = loop.stop();
    expect(loop.state).toBe('stopping');
    expect(finished).toBe(false);
    await stopping;
    expect(finished).toBe(true);
    expect(reason).toMatchObject({ code: 'RL_LOOP_STOPPED' });
    expect(keys()).toEqual(['p1']);
    expect(loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
    await settle();
    expect(registry.openStreams).toBe(0);
    await expect(loop.stop()).resolves.toEqual(CLEAN_STOP); // idempotent
  });

  it('[work_queue: ShutDown vs ShutDownWithDrain] stop() scheduled from inside reconcile (void loop.stop() or setImmediate) stops the loop', async () => {
    for (const schedule of ['void', 'setImmediate'] as const) {
      let loopRef: ReconcileLoop<Cell, string> | undefined;
      let stoppedFromInside: Promise<unknown> | undefined;
      const { loop, keys } = harness({
        initial: [
          ['a', cell('p1')],
          ['b', cell('p2')],
        ],
        body: (key) => {
          if (key !== 'p1') return;
          if (schedule === 'void') void loopRef!.stop();
          else setImmediate(() => (stoppedFromInside = loopRef!.stop()));
        },
      });
      loopRef = loop;
      await loop.start();
      await settle();
      expect(loop.state).toBe('stopped');
      if (schedule === 'void') {
        // The stop began inside p1's reconcile, so p2 (queued behind it) never ran.
        expect(keys()).toEqual(['p1']);
      } else {
        // Ran after the reconcile returned: a plain, successful stop.
        expect(keys()[0]).toBe('p1');
        await expect(stoppedFromInside).resolves.toEqual(CLEAN_STOP);
      }
    }
  });

  it('[work_queue: ShutDown vs ShutDownWithDrain] awaiting stop() inside reconcile rejects with StopInsideReconcileError instead of deadlocking', async () => {
    let inside: unknown;
    let loopRef: ReconcileLoop<Cell, string> | undefined;
    const { loop, logger } = harness({
      initial: [['a', cell('p1')]],
      body: async () => {
        try {
          await loopRef!.stop();
        } catch (error) {
          inside = error;
        }
      },
    });
    loopRef = loop;
    await loop.start();
    await settle();
    expect(inside).toMatchObject({ code: 'RL_LOOP_STOP_INSIDE_RECONCILE', name: 'StopInsideReconcileError' });
    expect(loop.state).toBe('stopped'); // the stop went ahead
    await expect(loop.stop()).resolves.toEqual(CLEAN_STOP);
    // Not retried: the loop is stopping, so the failure is not scheduled.
    expect(logger.entries.some((e) => e.message.includes('retrying'))).toBe(false);
  });

  it("[loop: One reconcile scope store] inside one loop's reconcile, another loop's stop() goes ahead (only a loop's own stop is refused)", async () => {
    const other = harness({ initial: [] });
    await other.loop.start();
    let result: unknown;
    const { loop } = harness({
      initial: [['a', cell('p1')]],
      body: async () => {
        result = await other.loop.stop().catch((error: unknown) => error);
      },
    });
    await loop.start();
    await settle();
    expect(result).toEqual(CLEAN_STOP);
    expect(other.loop.state).toBe('stopped');
    await loop.stop();
  });

  it('[loop: One reconcile scope store] every loop of the process runs its reconciles in one AsyncLocalStorage, so loops created and stopped leave no store that later promises pay for (Node 22)', async () => {
    const stores = new Set<unknown>();
    const run = AsyncLocalStorage.prototype.run;
    AsyncLocalStorage.prototype.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
      stores.add(this);
      return run.apply(this, args);
    } as typeof run;
    try {
      for (let i = 0; i < 3; i++) {
        let ran = false;
        const { loop } = harness({ initial: [['a', cell('p1')]], body: () => void (ran = true) });
        await loop.start();
        await settle();
        expect(ran).toBe(true);
        await loop.stop();
      }
    } finally {
      AsyncLocalStorage.prototype.run = run;
    }
    expect(stores.size).toBe(1);
  });

  it('[work_queue: ShutDown vs ShutDownWithDrain] stop() after a failed start returns quietly and leaves nothing running', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    let reconciled = false;
    const loop = new ReconcileLoop<Cell, string>({
      source,
      keyMap: (c) => c.pool,
      reconcile: () => {
        reconciled = true;
      },
      sources: { syncTimeoutMs: 5_000 },
      clock,
    });
    const owner = async (): Promise<void> => {
      try {
        await loop.start();
      } catch (error) {
        await loop.stop(); // the normal shape: must not mask `error`
        throw error;
      }
    };
    const outcome = owner();
    outcome.catch(() => {});
    await clock.advanceAsync(5_000);
    await expect(outcome).rejects.toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT' });
    expect(loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
    expect(source.last.closed).toBe(true);
    expect(source.streams).toHaveLength(1);
    await clock.advanceAsync(60_000);
    expect(source.streams).toHaveLength(1);
    expect(reconciled).toBe(false);
    await expect(loop.stop()).resolves.toEqual(CLEAN_STOP);
    await expect(loop.start()).rejects.toMatchObject({ code: 'RL_LOOP_ALREADY_STARTED' });
  });

  it('[loop deviation: syncTimeoutMs] a source that never syncs fails start() with SyncTimeoutError at the timeout, not before', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const loop = new ReconcileLoop<Cell, string>({
      source,
      keyMap: (c) => c.pool,
      reconcile: () => {},
      sources: { syncTimeoutMs: 30_000 },
      clock,
    });
    let settled = false;
    const starting = loop.start().finally(() => (settled = true));
    starting.catch(() => {});
    source.last.push(upsertEvent('a', cell('p1'))); // not a listing: does not count as sync
    await clock.advanceAsync(29_999);
    expect(settled).toBe(false);
    await clock.advanceAsync(1);
    const error = await starting.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'RL_LOOP_SYNC_TIMEOUT',
      name: 'SyncTimeoutError',
      sourceName: 'controlled',
      timeoutMs: 30_000,
    });
  });

  it('[loop deviation: syncTimeoutMs] stop() during start() rejects the start with LoopStoppedError', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const loop = new ReconcileLoop<Cell, string>({ source, keyMap: (c) => c.pool, reconcile: () => {}, clock });
    const starting = loop.start();
    starting.catch(() => {});
    await settle();
    await loop.stop();
    await expect(starting).rejects.toMatchObject({ code: 'RL_LOOP_STOPPED' });
    expect(source.last.closed).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('[loop deviation: reconcileTimeoutMs] a hung reconcile is aborted through its signal, counted as a failure, and does not stall other keys; its retry waits until the hung call settles', async () => {
    let hungReason: unknown;
    let hangs = 1;
    let unhang: (() => void) | undefined;
    const { clock, calls, loop, logger } = harness({
      controller: { reconcileTimeoutMs: 1_000 },
      retry: { backoff: { initialMs: 500, maxMs: 1_000_000 } },
      initial: [
        ['a', cell('p1')],
        ['b', cell('p2')],
      ],
      body: async (key, ctx) => {
        if (key !== 'p1' || hangs === 0) return;
        hangs -= 1;
        ctx.signal.addEventListener('abort', () => (hungReason = ctx.signal.reason));
        await new Promise<void>((resolve) => (unhang = resolve)); // ignores its signal entirely
      },
    });
    await loop.start();
    await settle();
    expect(calls.map((c) => c.key)).toEqual(['p1']);
    await clock.advanceAsync(999);
    expect(calls.map((c) => c.key)).toEqual(['p1']);
    await clock.advanceAsync(1);
    expect(hungReason).toMatchObject({ code: 'RL_LOOP_RECONCILE_TIMEOUT', parentKey: 'p1', timeoutMs: 1_000 });
    expect(calls.map((c) => [c.key, c.at])).toEqual([
      ['p1', 0],
      ['p2', 1_000],
    ]);
    expect(logger.entries.find((e) => e.message.includes('retrying'))?.fields).toMatchObject({ parentKey: 'p1', retryInMs: 500 });
    // The retry is due at 1 500, but the hung call still holds p1: the retry waits instead of overlapping it.
    await clock.advanceAsync(1_000);
    expect(calls.map((c) => [c.key, c.at])).toEqual([
      ['p1', 0],
      ['p2', 1_000],
    ]);
    expect(loop.health().inFlight).toEqual([{ parentKey: 'p1', startedAt: 0, ageMs: 2_000, timedOut: true }]);
    unhang!();
    await settle();
    expect(calls.map((c) => [c.key, c.at])).toEqual([
      ['p1', 0],
      ['p2', 1_000],
      ['p1', 2_000],
    ]);
    await loop.stop();
    expect(clock.pending).toBe(0);
  });

  it('[loop deviation: reconcileTimeoutMs] stop() waits for a hung call only as long as the grace and names it abandoned', async () => {
    const { clock, loop } = harness({
      controller: { reconcileTimeoutMs: 1_000 },
      initial: [['a', cell('p1')]],
      body: async () => {
        await new Promise(() => {});
      },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(1_500);
    expect(loop.health().inFlight).toEqual([{ parentKey: 'p1', startedAt: 0, ageMs: 1_500, timedOut: true }]);
    const stopping = loop.stop({ graceMs: 2_000 });
    await clock.advanceAsync(2_000);
    await expect(stopping).resolves.toEqual({ abandoned: ['p1'], abandonedSources: [] });
    expect(clock.pending).toBe(0);
  });

  it('[loop: Lifecycle] `await using` stops the loop at the end of the scope', async () => {
    const clock = new ManualClock();
    const registry = new InProcessSource<Cell>('cells', [['a', cell('p1')]]);
    let captured: ReconcileLoop<Cell, string> | undefined;
    const seen: string[] = [];
    {
      await using loop = new ReconcileLoop<Cell, string>({
        source: registry,
        keyMap: (c) => c.pool,
        reconcile: (key) => {
          seen.push(key);
        },
        clock,
      });
      captured = loop;
      await loop.start();
      await settle();
      expect(loop.state).toBe('running');
    }
    expect(captured.state).toBe('stopped');
    expect(seen).toEqual(['p1']);
    expect(clock.pending).toBe(0);
  });

  it('[loop: Lifecycle] `await using` unwinds a failed start carrying the start error, not a stop error', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const body = async (): Promise<void> => {
      await using loop = new ReconcileLoop<Cell, string>({
        source,
        keyMap: (c) => c.pool,
        reconcile: () => {},
        sources: { syncTimeoutMs: 10 },
        clock,
      });
      await loop.start();
    };
    const outcome = body();
    outcome.catch(() => {});
    await clock.advanceAsync(10);
    await expect(outcome).rejects.toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT' });
  });

  it('[loop: Lifecycle] [Symbol.asyncDispose]() is stop(); stop() before start() retires the loop', async () => {
    const registry = new InProcessSource<Cell>('cells');
    const loop = new ReconcileLoop<Cell, string>({
      source: registry,
      keyMap: (c) => c.pool,
      reconcile: () => {},
      clock: new ManualClock(),
    });
    await loop[Symbol.asyncDispose]();
    expect(loop.state).toBe('stopped');
    expect(registry.openStreams).toBe(0);
    await expect(loop.start()).rejects.toMatchObject({ code: 'RL_LOOP_ALREADY_STARTED' });
  });

  it('starting twice is a typed error', async () => {
    const { loop } = harness();
    await loop.start();
    await expect(loop.start()).rejects.toMatchObject({ code: 'RL_LOOP_ALREADY_STARTED', name: 'LoopAlreadyStartedError' });
    await loop.stop();
  });

  it('[source_stream_driver: Closing a stream during teardown] stop() resolves even when closing the stream throws, and logs it', async () => {
    const clock = new ManualClock();
    const logger = recordingLogger();
    const source = new ControlledSource<Cell>();
    source.onOpen = (stream) => {
      stream.push(replaceEvent([]));
      stream.closeError = new Error('close exploded');
    };
    const loop = new ReconcileLoop<Cell, string>({ source, keyMap: (c) => c.pool, reconcile: () => {}, clock, logger });
    await loop.start();
    await expect(loop.stop()).resolves.toEqual(CLEAN_STOP);
    expect(logger.entries.some((e) => (e.fields.err as Error | undefined)?.message === 'close exploded')).toBe(true);
  });

  it('rejects unusable options with RL_INVALID_OPTIONS', () => {
    const base = { source: new InProcessSource<Cell>('s'), keyMap: (c: Cell) => c.pool, reconcile: () => {} };
    const bad: Array<Partial<ReconcileLoopOptions<Cell, string>>> = [
      { sources: { resyncPeriodMs: -1 } },
      { sources: { resyncPeriodMs: 2 ** 31 } },
      { sources: { resyncPeriodMs: Number.NaN } },
      { sources: { syncTimeoutMs: 0 } },
      { controller: { reconcileTimeoutMs: Infinity } },
      { retry: { backoff: { initialMs: -5, maxMs: 10 } } },
      { retry: { backoff: { initialMs: 100, maxMs: 10 } } },
      { reconcile: undefined as never },
      { keyMap: 'pool' as never },
      { source: {} as never },
    ];
    for (const patch of bad) {
      expect(() => new ReconcileLoop<Cell, string>({ ...base, ...patch })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
      );
    }
  });

  it('is silent by default and never logs the objects it caches', async () => {
    const logger = recordingLogger();
    const secret = { pool: 'p1', v: 0, token: 's3cr3t' };
    const registry = new InProcessSource<Cell>('cells', [['a', secret]]);
    const loop = new ReconcileLoop<Cell, string>({
      source: registry,
      keyMap: (c) => c.pool,
      reconcile: () => {
        throw new Error('fails');
      },
      logger,
      clock: new ManualClock(),
    });
    await loop.start();
    await settle();
    await loop.stop();
    expect(logger.entries.length).toBeGreaterThan(0);
    expect(JSON.stringify(logger.entries, (_k, v: unknown) => (v instanceof Error ? v.message : v))).not.toContain('s3cr3t');
  });
});
