/**
 * Issue 9 on the loop: start() always settles and cleans up after itself, permanent errors reach
 * the caller, stop() is bounded by a grace period, and nothing fails silently.
 */
import { describe, expect, it, vi } from 'vitest';
import type { SourceHealth } from '@reconcile-loop/object-store';
import { ManualClock } from '@reconcile-loop/primitives';
import { ControlledSource, recordingLogger, settle } from '@reconcile-loop/test-support';
import {
  InProcessSource,
  ReconcileLoop,
  describeError,
  replaceEvent,
  upsertEvent,
  type ReconcileLoopOptions,
} from '../src/index.js';
import { DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS, DEFAULT_SYNC_TIMEOUT_MS } from '../src/options.js';

interface Cell {
  pool: string;
}

const cell = (pool: string): Cell => ({ pool });

/** A reflector-like permanent error: the first LIST answered 400 with a Status. */
function badRequest(): Error & { permanent: true } {
  return Object.assign(new Error('apiserver answered HTTP 400 BadRequest: unable to parse requirement'), {
    permanent: true as const,
    statusCode: 400,
    status: {
      kind: 'Status',
      code: 400,
      reason: 'BadRequest',
      message: 'unable to parse requirement: found "=", expected: identifier',
    },
  });
}

function forbidden(): Error {
  return Object.assign(new Error('apiserver answered HTTP 403 Forbidden'), {
    statusCode: 403,
    status: {
      kind: 'Status',
      code: 403,
      reason: 'Forbidden',
      message: 'pods is forbidden: User "system:serviceaccount:ml:tracker" cannot list resource "pods"',
    },
  });
}

/** A controlled source that reports health like a reflector retrying a 403 inside itself. */
class ReportingSource extends ControlledSource<Cell> {
  report: SourceHealth = {
    listed: false,
    streaming: false,
    lastListAt: undefined,
    lastEventAt: undefined,
    lastError: undefined,
    consecutiveFailures: 0,
    quarantined: [],
  };
  health(): SourceHealth {
    return this.report;
  }
}

function make(source: ControlledSource<Cell>, options: Partial<ReconcileLoopOptions<Cell, string>> = {}) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const loop = new ReconcileLoop<Cell, string>({ source, keyMap: (c) => c.pool, reconcile: () => {}, clock, logger, ...options });
  return { clock, logger, loop };
}

async function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );
}

describe('start() always settles', () => {
  it('[loop: start always settles] the default sync timeout is 2 min (CacheSyncTimeout); the SyncTimeoutError names the source and carries its last error as cause', async () => {
    expect(DEFAULT_SYNC_TIMEOUT_MS).toBe(120_000);
    const source = new ReportingSource();
    const { clock, loop, logger } = make(source);
    const starting = outcome(loop.start());
    await settle();
    source.report = { ...source.report, lastError: forbidden(), consecutiveFailures: 4 };
    await clock.advanceAsync(119_999);
    expect(loop.state).toBe('starting');
    await clock.advanceAsync(1);
    const error = (await starting) as Error & { cause: unknown; sourceName: string };
    expect(error).toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT', sourceName: 'controlled', timeoutMs: 120_000 });
    expect(error.cause).toBe(source.report.lastError);
    expect(error.message).toContain('last error: 403 Forbidden: pods is forbidden');
    expect(loop.health()).toMatchObject({ state: 'stopped', error, ready: { ok: false }, alive: { ok: false } });
    expect(logger.entries.find((e) => e.level === 'error')?.fields.err).toBe(error);
  });

  it('[loop: start always settles] without a source report the cause is the last stream failure; Infinity waits forever', async () => {
    const source = new ControlledSource<Cell>();
    const { clock, loop } = make(source, { sources: { syncTimeoutMs: 10_000 } });
    const starting = outcome(loop.start());
    await settle();
    const dropped = new Error('connection reset');
    source.last.fail(dropped);
    await clock.advanceAsync(10_000);
    expect(((await starting) as Error).cause).toBe(dropped);

    const forever = make(new ControlledSource<Cell>(), { sources: { syncTimeoutMs: Infinity } });
    let settled = false;
    void forever.loop
      .start()
      .finally(() => (settled = true))
      .catch(() => {});
    await forever.clock.advanceAsync(24 * 3_600_000);
    expect(settled).toBe(false);
    expect(forever.clock.pending).toBe(0); // not even a timer: nothing to wait for but the source
    await forever.loop.stop();
  });

  it('[loop: start always settles] a permanent source error rejects start() at once with that error, Status intact', async () => {
    const source = new ControlledSource<Cell>();
    const onError = vi.fn();
    const { clock, loop } = make(source, { onError });
    const starting = outcome(loop.start());
    await settle();
    const error = badRequest();
    source.last.fail(error);
    expect(await starting).toBe(error);
    expect(clock.now()).toBe(0);
    expect((error as unknown as { status: { code: number } }).status.code).toBe(400);
    expect(loop.state).toBe('stopped');
    expect(onError).not.toHaveBeenCalled(); // start() is the one channel during start
    const health = loop.health();
    expect(health.error).toBe(error);
    expect(health.sources['controlled']).toMatchObject({ permanentError: error, synced: false });
    expect(health.ready.checks).toContainEqual({
      name: 'source:controlled',
      ok: false,
      reason: expect.stringContaining('failed permanently: apiserver answered HTTP 400 BadRequest: unable to parse'),
    });
  });

  it('[loop: start always settles] a failed start tears everything down itself: nothing runs afterwards, without calling stop()', async () => {
    for (const failure of ['timeout', 'permanent'] as const) {
      const source = new ControlledSource<Cell>();
      let reconciled = false;
      const { clock, loop } = make(source, {
        sources: { syncTimeoutMs: 5_000 },
        reconcile: () => {
          reconciled = true;
        },
      });
      loop.enqueue('p1');
      const starting = outcome(loop.start());
      await settle();
      if (failure === 'permanent') source.last.fail(badRequest());
      else await clock.advanceAsync(5_000);
      await starting;
      // No stop() here: the failed start must have cleaned up on its own.
      expect(loop.state).toBe('stopped');
      expect(clock.pending).toBe(0);
      expect(source.last.closed || failure === 'permanent').toBe(true);
      expect(source.last.signal.aborted).toBe(true);
      await clock.advanceAsync(3_600_000);
      expect(source.streams).toHaveLength(1);
      expect(reconciled).toBe(false);
      expect(clock.pending).toBe(0);
      loop.enqueue('p2'); // ignored: the queue is stopped
      expect(loop.health().queueDepth).toBe(0);
    }
  });
});

describe('a permanent failure after start', () => {
  it('[loop: permanent failure after start] stops the loop, calls onError once, and health turns red', async () => {
    const source = new ControlledSource<Cell>();
    source.onOpen = (stream) => stream.push(replaceEvent([['a', cell('p1')]]));
    const onError = vi.fn();
    const { clock, loop, logger } = make(source, { onError });
    await loop.start();
    await settle();
    expect(loop.health().ready.ok).toBe(true);
    const error = badRequest();
    source.last.fail(error);
    await settle();
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledWith(error);
    expect(loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
    const health = loop.health();
    expect(health).toMatchObject({ error, ready: { ok: false }, alive: { ok: false } });
    expect(health.alive.checks).toContainEqual({ name: 'loop', ok: false, reason: expect.stringContaining('400 BadRequest') });
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.fields.err)).toContain(error);
    await expect(loop.stop()).resolves.toEqual({ abandoned: [], abandonedSources: [] });
  });

  it('[loop: permanent failure after start] a throwing onError is logged and the loop still stops', async () => {
    const source = new ControlledSource<Cell>();
    source.onOpen = (stream) => stream.push(replaceEvent([]));
    const { loop, logger } = make(source, {
      onError: () => {
        throw new Error('handler bug');
      },
    });
    await loop.start();
    source.last.fail(badRequest());
    await settle();
    expect(loop.state).toBe('stopped');
    expect(logger.entries.some((e) => e.message === 'onError threw; ignored')).toBe(true);
  });
});

describe('stop() grace period', () => {
  it('[loop: GracefulShutdownTimeout] a reconcile that never settles no longer blocks stop(): after the grace it resolves and names the abandoned key', async () => {
    expect(DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS).toBe(30_000);
    const registry = new InProcessSource<Cell>('cells', [['a', cell('p1')]]);
    const clock = new ManualClock();
    const logger = recordingLogger();
    const loop = new ReconcileLoop<Cell, string>({
      source: registry,
      keyMap: (c) => c.pool,
      reconcile: () => new Promise(() => {}), // ignores its signal
      clock,
      logger,
    });
    await loop.start();
    await settle();
    let report: unknown;
    const stopping = loop.stop().then((r) => (report = r));
    await clock.advanceAsync(29_999);
    expect(report).toBeUndefined();
    expect(loop.state).toBe('stopping');
    await clock.advanceAsync(1);
    await stopping;
    expect(report).toEqual({ abandoned: ['p1'], abandonedSources: [] });
    expect(loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
    expect(logger.entries.find((e) => e.message.includes('grace period'))).toMatchObject({
      level: 'warn',
      fields: { abandoned: ['p1'], graceMs: 30_000 },
    });
    expect(registry.openStreams).toBe(0);
    // Idempotent: a later stop() returns the same report.
    await expect(loop.stop()).resolves.toEqual(report);
  });

  it('[loop: GracefulShutdownTimeout] stop({ graceMs }) overrides the option; a reconcile that honours its signal ends cleanly within it', async () => {
    const registry = new InProcessSource<Cell>('cells', [['a', cell('p1')]]);
    const clock = new ManualClock();
    const loop = new ReconcileLoop<Cell, string>({
      source: registry,
      keyMap: (c) => c.pool,
      reconcile: (_key, { signal }) =>
        new Promise((resolve) => signal.addEventListener('abort', () => clock.setTimeout(resolve, 50))),
      shutdown: { timeoutMs: Infinity },
      clock,
    });
    await loop.start();
    await settle();
    const stopping = loop.stop({ graceMs: 100 });
    await clock.advanceAsync(50);
    await expect(stopping).resolves.toEqual({ abandoned: [], abandonedSources: [] });
    expect(() => loop.stop({ graceMs: -1 })).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
  });

  it('[loop: GracefulShutdownTimeout] a source whose close is still pending when the grace runs out is reported in abandonedSources', async () => {
    const source = new ControlledSource<Cell>();
    source.onOpen = (stream) => {
      stream.push(replaceEvent([]));
      stream.return = () => new Promise(() => {}); // a close that never settles
    };
    const { clock, loop } = make(source, { shutdown: { timeoutMs: 1_000 } });
    await loop.start();
    source.last.fail(new Error('dropped')); // the driver now awaits the hung close (bounded at 5 s)
    await settle();
    const stopping = loop.stop();
    await clock.advanceAsync(1_000);
    await expect(stopping).resolves.toEqual({ abandoned: [], abandonedSources: ['controlled'] });
    expect(loop.state).toBe('stopped');
    await clock.advanceAsync(4_000); // the driver's own close deadline ends it; nothing reopens
    expect(source.streams).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });

  it('[loop: GracefulShutdownTimeout] `await using` propagates the scope error after the grace instead of hanging on a stuck reconcile', async () => {
    const clock = new ManualClock();
    const registry = new InProcessSource<Cell>('cells', [['a', cell('p1')]]);
    let entered = false;
    const scope = async (): Promise<void> => {
      await using loop = new ReconcileLoop<Cell, string>({
        source: registry,
        keyMap: (c) => c.pool,
        reconcile: () => {
          entered = true;
          return new Promise(() => {});
        },
        shutdown: { timeoutMs: 1_000 },
        clock,
      });
      await loop.start();
      await settle();
      throw new Error('the scope failed');
    };
    let result: unknown = 'pending';
    void scope().then(
      () => (result = 'resolved'),
      (error: unknown) => (result = error),
    );
    await settle();
    expect(entered).toBe(true);
    await clock.advanceAsync(999);
    expect(result).toBe('pending'); // disposal is waiting out the grace
    await clock.advanceAsync(1);
    await settle();
    // The scope's own error, not a SuppressedError: disposal resolved.
    expect(result).toBeInstanceOf(Error);
    expect(result).toMatchObject({ message: 'the scope failed' });
    expect(result).not.toHaveProperty('suppressed');
  });
});

describe('silence is never the failure mode', () => {
  it('[loop: silent default logger] without a logger nothing is written to console, stdout or stderr, even when everything fails', async () => {
    const writes: string[] = [];
    for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
      vi.spyOn(console, method).mockImplementation(
        (...args: unknown[]) => void writes.push(`console.${method} ${args.join(' ')}`),
      );
    }
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => (writes.push(`stdout ${String(chunk)}`), true));
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => (writes.push(`stderr ${String(chunk)}`), true));
    try {
      const clock = new ManualClock();
      const source = new ControlledSource<Cell>();
      source.onOpen = (stream, index) =>
        index === 0 ? stream.push(upsertEvent('a', cell('p1'))) : stream.push(replaceEvent([['a', cell('p1')]]));
      const loop = new ReconcileLoop<Cell, string>({
        source,
        keyMap: (c) => c.pool,
        reconcile: () => {
          throw new Error('reconcile fails');
        },
        controller: { reconcileTimeoutMs: 10 },
        clock,
      });
      const starting = loop.start();
      await clock.advanceAsync(1_000); // the first stream opened with an upsert: logged (silently) and reopened
      await starting;
      await clock.advanceAsync(1_000); // reconcile failures and retries
      source.last.fail(badRequest()); // a permanent failure after start
      await settle();
      expect(loop.state).toBe('stopped');
      const timeout = new ReconcileLoop<Cell, string>({
        source: new ControlledSource<Cell>(),
        keyMap: (c) => c.pool,
        reconcile: () => {},
        sources: { syncTimeoutMs: 5 },
        clock,
      });
      const failed = outcome(timeout.start());
      await clock.advanceAsync(5);
      expect(await failed).toMatchObject({ code: 'RL_LOOP_SYNC_TIMEOUT' });
    } finally {
      vi.restoreAllMocks();
    }
    expect(writes).toEqual([]);
  });

  it('[loop: ctx.store is read-only] the reconcile context exposes the frozen read-only view, not the writable store', async () => {
    const registry = new InProcessSource<Cell>('cells', [['a', cell('p1')]]);
    let seen: unknown;
    const loop = new ReconcileLoop<Cell, string>({
      source: registry,
      keyMap: (c) => c.pool,
      reconcile: (_key, ctx) => {
        seen = ctx.store;
      },
      clock: new ManualClock(),
    });
    await loop.start();
    await settle();
    expect(seen).toBe(loop.store);
    expect(Object.isFrozen(seen)).toBe(true);
    expect(seen).not.toHaveProperty('apply');
    expect((seen as { get(k: string): unknown }).get('a')).toEqual(cell('p1'));
    await loop.stop();
  });
});

describe('describeError', () => {
  it('[loop: start always settles] one line per error: the Status when there is one (also on a wrapped cause), else the message', () => {
    expect(describeError(forbidden())).toBe(
      '403 Forbidden: pods is forbidden: User "system:serviceaccount:ml:tracker" cannot list resource "pods"',
    );
    expect(describeError(Object.assign(new Error('HTTP 500'), { statusCode: 500 }))).toBe('500: HTTP 500');
    const wrapped = Object.assign(new Error('first LIST rejected'), { permanent: true, cause: badRequest() });
    expect(describeError(wrapped)).toBe(
      'first LIST rejected (apiserver answered HTTP 400 BadRequest: unable to parse requirement)',
    );
    const selfDescribing = Object.assign(
      new Error('reflector "pods": the first LIST was rejected with HTTP 400 BadRequest: bad selector (GET /api/v1/pods)'),
      {
        permanent: true,
        status: { code: 400, reason: 'BadRequest', message: 'bad selector' },
      },
    );
    expect(describeError(selfDescribing)).toBe(selfDescribing.message);
    expect(describeError(new Error('plain'))).toBe('plain');
    expect(describeError('a string')).toBe('a string');
  });
});
