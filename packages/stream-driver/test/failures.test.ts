/**
 * Issue 9 on the stream driver: no flat retry, permanent errors surface, closes are bounded, sync
 * flips only after the replace is applied, and health() says why a source is not well.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ObjectStore, replaceEvent, upsertEvent, type SourceEvent, type SourceHealth } from '@reconcile-loop/object-store';
import { ManualClock, type BackoffPolicy } from '@reconcile-loop/primitives';
import { ControlledSource, recordingLogger, settle } from '@reconcile-loop/test-support';
import { StreamDriver, type StreamDriverOptions } from '../src/index.js';

interface Cell {
  pool: string;
}

const cell = (pool: string): Cell => ({ pool });

/** A permanent source error as a reflector throws it (400 on the first LIST). */
function permanent(message: string): Error & { permanent: true; status: { code: number; reason: string } } {
  return Object.assign(new Error(message), { permanent: true as const, status: { code: 400, reason: 'BadRequest' } });
}

/** A controlled source that also reports health, as a reflector does. */
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

function setup(
  { retry, ...options }: Partial<StreamDriverOptions<Cell, string>> & { retry?: BackoffPolicy } = {},
  onOpen?: ControlledSource<Cell>['onOpen'],
  source = new ControlledSource<Cell>(),
) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  source.onOpen = onOpen;
  source.retry = retry;
  const store = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
  const driver = new StreamDriver<Cell, string>({ source, store, onAffected: () => {}, clock, logger, ...options });
  const controller = new AbortController();
  const running = driver.run(controller.signal);
  running.catch(() => {});
  return { clock, logger, source, store, driver, controller, running };
}

/** Clock times at which streams were opened. */
function openTimes(source: ControlledSource<Cell>, clock: ManualClock): number[] {
  const times: number[] = [];
  const previous = source.onOpen;
  source.onOpen = (stream, index) => {
    times.push(clock.now());
    previous?.(stream, index);
  };
  return times;
}

describe('StreamDriver outer retry', () => {
  it('[stream-driver: outer retry backoff] reopens back off exponentially from source.retry.initialMs up to its maxMs', async () => {
    const { clock, logger, source, controller, running } = setup({ retry: { initialMs: 1_000, maxMs: 8_000 } });
    const times = openTimes(source, clock);
    await settle();
    for (let i = 0; i < 6; i++) {
      source.last.fail(new Error(`down ${i}`));
      await settle();
      await clock.advanceAsync(20_000);
    }
    // The first stream opened at 0 (before the recorder); each failure at once waits 1, 2, 4, 8, 8, 8 s.
    expect(times).toEqual([1_000, 22_000, 44_000, 68_000, 88_000, 108_000]);
    expect(logger.entries.filter((e) => e.message.includes('backoff')).map((e) => e.fields.retryInMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 8_000, 8_000,
    ]);
    controller.abort();
    await running;
  });

  it('[stream-driver: outer retry backoff] only a healthy stretch resets it: listed and open for retry.resetAfterMs', async () => {
    const { clock, logger, source, controller, running } = setup({
      retry: { initialMs: 100, maxMs: 30_000, resetAfterMs: 10_000 },
    });
    const delays = (): unknown[] => logger.entries.filter((e) => e.message.includes('backoff')).map((e) => e.fields.retryInMs);
    await settle();
    // Listed, then failed at once (the LIST-then-fail loop): no reset.
    for (let i = 0; i < 3; i++) {
      source.last.push(replaceEvent([]));
      await settle();
      source.last.fail(new Error('fails right after listing'));
      await settle();
      await clock.advanceAsync(1_000);
    }
    expect(delays()).toEqual([100, 200, 400]);
    // Open a long time but never listed: no reset either.
    await clock.advanceAsync(60_000);
    source.last.fail(new Error('never listed'));
    await settle();
    await clock.advanceAsync(1_000);
    expect(delays()).toEqual([100, 200, 400, 800]);
    // Listed and ran 10 s: healthy, so the next failure waits the base delay again.
    source.last.push(replaceEvent([]));
    await clock.advanceAsync(10_000);
    source.last.end();
    await settle();
    expect(delays()).toEqual([100, 200, 400, 800, 100]);
    controller.abort();
    await running;
  });

  it('[stream-driver: outer retry backoff] jitter stretches a delay by up to retry.jitter of it', async () => {
    const { logger, source, controller, running } = setup({
      retry: { initialMs: 1_000, maxMs: 30_000, jitter: 0.5 },
      random: () => 0.5,
    });
    await settle();
    source.last.fail(new Error('down'));
    await settle();
    expect(logger.entries.find((e) => e.message.includes('backoff'))?.fields.retryInMs).toBe(1_250);
    controller.abort();
    await running;
    expect(() => setup({ retry: { initialMs: 1_000, maxMs: 30_000, jitter: -1 } })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => setup({ retry: { initialMs: 10, maxMs: 5 } })).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
    expect(() => setup({ closeTimeoutMs: 0 })).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
  });

  it('[stream-driver: outer retry backoff] property: every reopen happens exactly when the model says (base · 2^(n-1), capped; reset by a healthy stretch)', async () => {
    const base = 100;
    const cap = 1_600;
    const healthy = 5_000;
    const stream = fc.record({ listed: fc.boolean(), openMs: fc.integer({ min: 0, max: 8_000 }), fail: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(stream, { minLength: 1, maxLength: 12 }), async (streams) => {
        const { clock, source, controller, running } = setup({ retry: { initialMs: base, maxMs: cap, resetAfterMs: healthy } });
        const times = openTimes(source, clock);
        await settle(3);
        let failures = 0;
        let now = 0;
        const expected: number[] = [];
        for (const s of streams) {
          if (s.listed) source.last.push(replaceEvent([]));
          await clock.advanceAsync(s.openMs);
          now += s.openMs;
          if (s.fail) source.last.fail(new Error('x'));
          else source.last.end();
          await settle(3);
          if (s.listed && s.openMs >= healthy) failures = 0;
          failures += 1;
          const delay = Math.min(base * 2 ** (failures - 1), cap);
          now += delay;
          expected.push(now);
          await clock.advanceAsync(delay);
        }
        controller.abort();
        await running;
        expect(times).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });
});

describe('StreamDriver permanent errors', () => {
  it('[stream-driver: permanent source error] before sync: run() and every waitForSync() reject with the same error, nothing reopens, nothing is left', async () => {
    const { clock, logger, source, driver, running } = setup();
    const waiting = driver.waitForSync();
    waiting.catch(() => {});
    await settle();
    const error = permanent('LIST answered 400 BadRequest: unable to parse requirement');
    source.last.fail(error);
    await expect(running).rejects.toBe(error);
    await expect(waiting).rejects.toBe(error);
    await expect(driver.waitForSync()).rejects.toBe(error);
    expect(driver.permanentError).toBe(error);
    expect(source.last.closed).toBe(true);
    expect(clock.pending).toBe(0);
    await clock.advanceAsync(3_600_000);
    expect(source.streams).toHaveLength(1);
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => [e.message, e.fields.err])).toEqual([
      ['source failed permanently; not reopening it', error],
    ]);
    const health = driver.health();
    expect(health).toMatchObject({
      synced: false,
      streaming: false,
      permanentError: error,
      lastError: error,
      consecutiveFailures: 1,
    });
  });

  it('[stream-driver: permanent source error] after sync: run() rejects, the store keeps its state, and health reports it', async () => {
    const { clock, source, store, driver, running } = setup({}, (stream) => stream.push(replaceEvent([['a', cell('p1')]])));
    await driver.waitForSync();
    const error = permanent('gone for good');
    source.last.fail(error);
    await expect(running).rejects.toBe(error);
    expect(driver.synced).toBe(true);
    expect(store.keys()).toEqual(['a']);
    await clock.advanceAsync(3_600_000);
    expect(source.streams).toHaveLength(1);
    expect(driver.health()).toMatchObject({ synced: true, streaming: false, permanentError: error, failingSince: 0 });
  });

  it('[stream-driver: permanent source error] an error without permanent: true is retried', async () => {
    const { clock, source, running, controller } = setup();
    await settle();
    source.last.fail(Object.assign(new Error('403'), { permanent: false }));
    await settle();
    await clock.advanceAsync(1_000);
    expect(source.streams).toHaveLength(2);
    controller.abort();
    await expect(running).resolves.toBeUndefined();
  });
});

describe('StreamDriver sync and close', () => {
  it('[source_stream_driver: WaitForCacheSync] synced flips only after the replace is applied; a replace the store rejects syncs nothing', async () => {
    const clock = new ManualClock();
    const source = new ControlledSource<Cell>();
    const inner = new ObjectStore<Cell, string>({ keyMap: (c) => c.pool });
    const syncedDuringApply: boolean[] = [];
    let rejectNext = true;
    let driver: StreamDriver<Cell, string> | undefined;
    const store = {
      apply(event: SourceEvent<Cell>) {
        syncedDuringApply.push(driver!.synced);
        if (event.type === 'replace' && rejectNext) {
          rejectNext = false;
          throw new Error('store rejected the listing');
        }
        return inner.apply(event);
      },
    };
    source.retry = { initialMs: 10, maxMs: 30_000 };
    driver = new StreamDriver<Cell, string>({ source, store, onAffected: () => {}, clock });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    let synced = false;
    void driver.waitForSync().then(() => (synced = true));
    await settle();
    source.last.push(replaceEvent([['a', cell('p1')]]));
    await settle();
    expect(driver.synced).toBe(false);
    expect(synced).toBe(false);
    expect(driver.health().lastSyncAt).toBeUndefined();
    await clock.advanceAsync(10);
    source.last.push(replaceEvent([['a', cell('p1')]]));
    await settle();
    expect(synced).toBe(true);
    expect(syncedDuringApply).toEqual([false, false]);
    expect(driver.health().lastSyncAt).toBe(10);
    controller.abort();
    await running;
  });

  it('[stream-driver: bounded close] a stream whose return() never settles is abandoned after closeTimeoutMs and logged; the driver reopens', async () => {
    const hang = (stream: ControlledSource<Cell>['streams'][number]): void => {
      stream.return = () => new Promise(() => {});
    };
    const { clock, logger, source, controller, running } = setup(
      { closeTimeoutMs: 2_000, retry: { initialMs: 100, maxMs: 30_000 } },
      (stream) => {
        stream.push(replaceEvent([]));
        hang(stream);
      },
    );
    await settle();
    source.last.fail(new Error('dropped'));
    await settle();
    await clock.advanceAsync(1_999);
    expect(logger.entries.some((e) => e.message.includes('did not close'))).toBe(false);
    await clock.advanceAsync(1);
    expect(logger.entries.find((e) => e.message.includes('did not close'))).toMatchObject({
      level: 'warn',
      fields: { closeTimeoutMs: 2_000 },
    });
    await clock.advanceAsync(100);
    expect(source.streams).toHaveLength(2);
    // On abort with next() pending, the hung close is requested and not awaited: run() ends at once.
    controller.abort();
    await expect(running).resolves.toBeUndefined();
    expect(source.last.closed).toBe(false); // return() was replaced by one that never settles
    expect(clock.pending).toBe(0);
  });
});

describe('StreamDriver health', () => {
  it('[stream-driver: health] merges the source report: its lastError with Status, failures, quarantine, streaming and frame time', async () => {
    const source = new ReportingSource();
    const { clock, driver, controller, running } = setup({}, undefined, source);
    await settle();
    const forbidden = Object.assign(new Error('pods is forbidden'), {
      statusCode: 403,
      status: { code: 403, reason: 'Forbidden' },
    });
    await clock.advanceAsync(5_000);
    source.report = { ...source.report, lastError: forbidden, consecutiveFailures: 3 };
    let health = driver.health();
    expect(health).toMatchObject({
      source: 'controlled',
      synced: false,
      streaming: false,
      lastError: forbidden,
      consecutiveFailures: 3,
      opens: 1,
    });
    // Never listed: the failures can only have begun when the stream opened.
    expect(health.failingSince).toBe(0);

    source.last.push(replaceEvent([['a', cell('p1')]]));
    await settle();
    const quarantined = [{ key: 'ns/bad', resourceVersion: '7', issues: ['spec.replicas: expected number'], since: 5_000 }];
    source.report = {
      ...source.report,
      listed: true,
      streaming: true,
      lastListAt: 5_000,
      lastEventAt: 5_000,
      lastError: undefined,
      consecutiveFailures: 0,
      quarantined,
    };
    await clock.advanceAsync(1_000);
    source.last.push(upsertEvent('a', cell('p1')));
    await settle();
    health = driver.health();
    expect(health).toMatchObject({
      synced: true,
      streaming: true,
      lastError: undefined,
      consecutiveFailures: 0,
      failingSince: undefined,
      lastSyncAt: 5_000,
      lastEventAt: 6_000,
      quarantined,
    });
    // What a reconcile context reads: the source's own list, without building the health snapshot.
    expect(driver.quarantined()).toEqual(quarantined);

    // A failure after sync is first seen by this probe: failingSince is the probe's time.
    await clock.advanceAsync(1_000);
    source.report = { ...source.report, streaming: false, lastError: forbidden, consecutiveFailures: 1 };
    expect(driver.health()).toMatchObject({ streaming: false, failingSince: 7_000, consecutiveFailures: 1 });
    await clock.advanceAsync(1_000);
    expect(driver.health().failingSince).toBe(7_000);
    controller.abort();
    await running;
  });

  it('[stream-driver: health] a source that lists and dies at once keeps counting failures from the first one; a listed stream reads as healthy', async () => {
    const { clock, source, driver, controller, running } = setup({ retry: { initialMs: 1_000, maxMs: 30_000 } }, (stream) =>
      stream.push(replaceEvent([])),
    );
    await settle();
    for (let i = 1; i <= 3; i++) {
      source.last.fail(new Error(`poison ${i}`));
      await settle();
      // Probed while it waits to reopen (where a probe lands: the listed window is a moment).
      expect(driver.health()).toMatchObject({ consecutiveFailures: i, failingSince: 0, streaming: false });
      await clock.advanceAsync(2 ** (i - 1) * 1_000); // reopens and lists again
    }
    // Probed while a stream is open and listed: working, and the failure run is over.
    expect(driver.health()).toMatchObject({ consecutiveFailures: 0, failingSince: undefined, streaming: true });
    controller.abort();
    await running;
  });

  it('[stream-driver: health] without a source report: the driver counts failed streams, keeps the last error and the time to the next reopen; a throwing health() is tolerated', async () => {
    const { clock, logger, source, driver, controller, running } = setup({ retry: { initialMs: 1_000, maxMs: 30_000 } });
    await settle();
    const error = new Error('stream died');
    await clock.advanceAsync(500);
    source.last.fail(error);
    await settle();
    await clock.advanceAsync(200);
    expect(driver.health()).toMatchObject({
      lastError: error,
      consecutiveFailures: 1,
      failingSince: 500,
      retryInMs: 800,
      streaming: false,
    });
    await clock.advanceAsync(800);
    source.last.push(replaceEvent([]));
    await settle();
    expect(driver.health()).toMatchObject({
      lastError: undefined,
      consecutiveFailures: 0,
      failingSince: undefined,
      retryInMs: undefined,
      streaming: true,
      opens: 2,
    });

    (source as unknown as { health: () => never }).health = () => {
      throw new Error('broken report');
    };
    expect(driver.health().sourceHealth).toBeUndefined();
    expect(logger.entries.some((e) => e.message.includes('health() threw'))).toBe(true);
    controller.abort();
    await running;
  });
});
