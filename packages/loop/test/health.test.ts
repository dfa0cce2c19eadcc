import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SourceHealth } from '@reconcile-loop/object-store';
import { ManualClock } from '@reconcile-loop/primitives';
import { ControlledSource, settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop, replaceEvent, upsertEvent, type ReconcileLoopOptions } from '../src/index.js';
import { verdicts, type SourceStatus } from '../src/health.js';
import { DEFAULT_HEALTH_LIMITS } from '../src/options.js';

interface Cell {
  pool: string;
}
const cell = (pool: string): Cell => ({ pool });

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

function make(source: ControlledSource<Cell> | InProcessSource<Cell>, options: Partial<ReconcileLoopOptions<Cell, string>> = {}) {
  const clock = new ManualClock();
  const loop = new ReconcileLoop<Cell, string>({ source, keyMap: (c) => c.pool, reconcile: () => {}, clock, ...options });
  return { clock, loop };
}

const failed = (checks: readonly { name: string; ok: boolean }[]): string[] => checks.filter((c) => !c.ok).map((c) => c.name);

describe('loop.health()', () => {
  it('[loop: health] reports state, sync, queue depth, retries, in-flight reconciles with their age, and per-source status keyed by name', async () => {
    const source = new ReportingSource();
    let release: (() => void) | undefined;
    const { clock, loop } = make(source, {
      reconcile: (key) => {
        if (key === 'p1') return new Promise<void>((resolve) => (release = resolve));
        if (key === 'p3') throw new Error('fails');
      },
    });
    let health = loop.health();
    expect(health).toMatchObject({
      state: 'idle',
      synced: false,
      startedAt: undefined,
      lastSyncAt: undefined,
      queueDepth: 0,
      inFlight: [],
      error: undefined,
    });
    expect(health.ready.ok).toBe(false);
    expect(health.alive.ok).toBe(true);

    const starting = loop.start();
    await clock.advanceAsync(2_000);
    health = loop.health();
    expect(health.state).toBe('starting');
    expect(failed(health.ready.checks)).toEqual(['started', 'source:controlled']);
    expect(health.ready.checks.find((c) => c.name === 'source:controlled')?.reason).toBe('not synced yet');

    const quarantined = [
      { key: 'ns/poison', resourceVersion: '9', issues: ['spec.replicas: expected number, received string'], since: 2_000 },
    ];
    source.report = { ...source.report, listed: true, streaming: true, lastListAt: 2_000, lastEventAt: 2_000, quarantined };
    source.last.push(
      replaceEvent([
        ['a', cell('p1')],
        ['b', cell('p2')],
        ['c', cell('p3')],
      ]),
    );
    await starting;
    await clock.advanceAsync(500);
    health = loop.health();
    expect(health).toMatchObject({
      state: 'running',
      synced: true,
      startedAt: 0,
      lastSyncAt: 2_000,
      queueDepth: 2,
      retriesPending: 0,
    });
    expect(health.inFlight).toEqual([{ parentKey: 'p1', startedAt: 2_000, ageMs: 500, timedOut: false }]);
    expect(health.sources['controlled']).toMatchObject({
      synced: true,
      streaming: true,
      msSinceLastEvent: 500,
      quarantined,
      consecutiveFailures: 0,
    });
    expect(health.ready.ok).toBe(true);
    expect(health.alive.ok).toBe(true);

    release!();
    await settle();
    health = loop.health();
    expect(health).toMatchObject({ queueDepth: 0, retriesPending: 1, inFlight: [] });
    await loop.stop();
    expect(loop.health()).toMatchObject({ state: 'stopped', error: undefined, ready: { ok: false }, alive: { ok: true } });
  });

  it('[loop: health] a failing source turns readiness false after sourceFailingMs and liveness false after sourceWedgedMs; healing turns both back', async () => {
    const source = new ReportingSource();
    source.onOpen = (stream) => stream.push(replaceEvent([]));
    const { clock, loop } = make(source, { health: { sourceFailingMs: 10_000, sourceWedgedMs: 60_000 } });
    source.report = { ...source.report, listed: true, streaming: true, lastListAt: 0, lastEventAt: 0 };
    await loop.start();
    const rbac = Object.assign(new Error('forbidden'), {
      statusCode: 403,
      status: { code: 403, reason: 'Forbidden', message: 'pods is forbidden' },
    });
    source.report = { ...source.report, streaming: false, lastError: rbac, consecutiveFailures: 2 };
    expect(loop.health().ready.ok).toBe(true); // first seen now
    await clock.advanceAsync(10_000);
    expect(loop.health().ready.ok).toBe(true);
    await clock.advanceAsync(1);
    let health = loop.health();
    expect(health.ready.ok).toBe(false);
    expect(health.ready.checks).toContainEqual({
      name: 'source:controlled',
      ok: false,
      reason: 'failing for 10 s (2 failures): 403 Forbidden: pods is forbidden',
    });
    expect(health.alive.ok).toBe(true);
    expect(health.sources['controlled']?.lastError).toBe(rbac);
    await clock.advanceAsync(50_000);
    health = loop.health();
    expect(health.alive.ok).toBe(false);
    expect(failed(health.alive.checks)).toEqual(['source:controlled']);

    source.report = { ...source.report, streaming: true, lastError: undefined, consecutiveFailures: 0, lastEventAt: clock.now() };
    health = loop.health();
    expect(health.ready.ok).toBe(true);
    expect(health.alive.ok).toBe(true);
    await loop.stop();
  });

  it('[loop: health] a streaming source that reports health and goes silent past sourceSilentMs is not alive; an in-process source may be silent forever', async () => {
    const source = new ReportingSource();
    source.onOpen = (stream) => stream.push(replaceEvent([]));
    const { clock, loop } = make(source, { health: { sourceSilentMs: 60_000 } });
    source.report = { ...source.report, listed: true, streaming: true, lastListAt: 0, lastEventAt: 0 };
    await loop.start();
    await clock.advanceAsync(60_000);
    expect(loop.health().alive.ok).toBe(true);
    await clock.advanceAsync(1);
    const health = loop.health();
    expect(health.alive.checks).toContainEqual({
      name: 'source:controlled',
      ok: false,
      reason: 'streaming but no frame for 60 s',
    });
    expect(health.ready.ok).toBe(true); // silence alone does not fail readiness
    source.last.push(upsertEvent('a', cell('p1'))); // a frame the driver sees also counts
    await settle();
    expect(loop.health().alive.ok).toBe(true);
    await loop.stop();

    const quiet = make(new InProcessSource<Cell>('cells'), { health: { sourceSilentMs: 1_000 } });
    await quiet.loop.start();
    await quiet.clock.advanceAsync(3_600_000);
    expect(quiet.loop.health().alive.ok).toBe(true);
    expect(quiet.loop.health().ready.ok).toBe(true);
    await quiet.loop.stop();
  });

  it('[loop: health] a hung reconcile turns readiness and liveness false after reconcileStuckMs, naming the key', async () => {
    const registry = new InProcessSource<Cell>('cells', [['a', cell('engines')]]);
    const { clock, loop } = make(registry, {
      reconcile: () => new Promise(() => {}),
      health: { reconcileStuckMs: 30_000 },
      shutdown: { timeoutMs: 1 },
    });
    await loop.start();
    await clock.advanceAsync(30_000);
    expect(loop.health().ready.ok).toBe(true);
    await clock.advanceAsync(1);
    const health = loop.health();
    expect(health.ready.checks).toContainEqual({ name: 'reconcile', ok: false, reason: 'reconcile of engines running for 30 s' });
    expect(health.alive.checks).toContainEqual({ name: 'worker', ok: false, reason: 'reconcile of engines running for 30 s' });
    const stopping = loop.stop();
    await clock.advanceAsync(1);
    await expect(stopping).resolves.toEqual({ abandoned: ['engines'], abandonedSources: [] });
  });

  it('[loop: health] rejects unusable health limits', () => {
    for (const health of [{ sourceFailingMs: 0 }, { reconcileStuckMs: -1 }, { sourceSilentMs: Number.NaN }]) {
      expect(() => make(new InProcessSource<Cell>('s'), { health })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
      );
    }
    expect(() => make(new InProcessSource<Cell>('s'), { health: { sourceWedgedMs: Infinity } })).not.toThrow();
  });

  it('[loop: health] property: the verdicts equal the model (ready = running ∧ synced ∧ not failing past the limit ∧ nothing stuck; alive = no fatal error ∧ nothing wedged)', () => {
    const limits = DEFAULT_HEALTH_LIMITS;
    const source = fc.record({
      synced: fc.boolean(),
      permanent: fc.boolean(),
      failingMs: fc.option(fc.integer({ min: 0, max: 2 * limits.sourceWedgedMs })),
      reports: fc.boolean(),
      streaming: fc.boolean(),
      silentMs: fc.option(fc.integer({ min: 0, max: 2 * limits.sourceSilentMs })),
    });
    const input = fc.record({
      state: fc.constantFrom('idle', 'starting', 'running', 'stopping', 'stopped' as const),
      fatal: fc.boolean(),
      ages: fc.array(fc.integer({ min: 0, max: 2 * limits.reconcileStuckMs }), { maxLength: 3 }),
      sources: fc.array(source, { minLength: 1, maxLength: 3 }),
    });
    fc.assert(
      fc.property(input, (i) => {
        const now = 10_000_000;
        const sources: SourceStatus[] = i.sources.map((s, n) => ({
          source: `s${n}`,
          synced: s.synced,
          streaming: s.streaming,
          lastSyncAt: undefined,
          lastEventAt: s.silentMs === null ? undefined : now - s.silentMs,
          msSinceLastEvent: s.silentMs ?? undefined,
          lastError: undefined,
          consecutiveFailures: s.failingMs === null ? 0 : 1,
          failingSince: s.failingMs === null ? undefined : now - s.failingMs,
          retryInMs: undefined,
          opens: 1,
          permanentError: s.permanent ? new Error('permanent') : undefined,
          quarantined: [],
          sourceHealth: s.reports ? ({} as SourceHealth) : undefined,
          cache: { objects: 0, bytesEstimate: 0, budgetBytes: undefined, refused: 0, reason: undefined },
        }));
        const inFlight = i.ages.map((ageMs) => ({ parentKey: 'k', startedAt: now - ageMs, ageMs, timedOut: false }));
        const { ready, alive } = verdicts({
          state: i.state,
          now,
          inFlight,
          sources,
          error: i.fatal ? new Error('fatal') : undefined,
          limits,
        });
        const stuck = i.ages.some((a) => a > limits.reconcileStuckMs);
        const failingMs = (s: (typeof i.sources)[number]): number => s.failingMs ?? 0;
        const modelReady =
          i.state === 'running' &&
          !stuck &&
          i.sources.every((s) => s.synced && !s.permanent && failingMs(s) <= limits.sourceFailingMs);
        const modelAlive =
          !i.fatal &&
          !stuck &&
          i.sources.every(
            (s) =>
              !s.permanent &&
              failingMs(s) <= limits.sourceWedgedMs &&
              !(s.reports && s.streaming && s.silentMs !== null && s.silentMs > limits.sourceSilentMs),
          );
        expect(ready.ok).toBe(modelReady);
        expect(alive.ok).toBe(modelAlive);
        expect(ready.ok).toBe(ready.checks.every((c) => c.ok));
      }),
      { numRuns: 300 },
    );
  });
});
