import { describe, expect, it } from 'vitest';
import type { SourceHealth } from '@reconcile-loop/object-store';
import { ManualClock } from '@reconcile-loop/primitives';
import { healthySource, ControlledSource, settle } from '@reconcile-loop/test-support';
import { ReconcileLoop, replaceEvent } from '../src/index.js';

interface Cell {
  pool: string;
}

/** A source that reports its health, cache cost included, as a reflector with `memoryBudgetBytes` does. */
class BudgetedSource extends ControlledSource<Cell> {
  report: SourceHealth = healthySource({
    cache: { objects: 2, bytesEstimate: 900, budgetBytes: 1_000, refused: 0, reason: undefined },
  });
  health(): SourceHealth {
    return this.report;
  }
}

describe('loop.health() with a source over its memory budget', () => {
  it('[loop: Cache budget health] a source whose cache its memory budget holds incomplete turns readiness red with the reason, stays alive, and turns ready again once it fits', async () => {
    const source = new BudgetedSource();
    const clock = new ManualClock();
    const loop = new ReconcileLoop<Cell, string>({ source, keyMap: (c) => c.pool, reconcile: () => {}, clock });
    const started = loop.start();
    await settle();
    source.last.push(replaceEvent([['a', { pool: 'p' }]]));
    await started;
    await settle();
    expect(loop.health().ready.ok).toBe(true);

    const reason = 'memory budget of 1000 bytes full (900 held): 3 objects not cached';
    source.report = { ...source.report, cache: { objects: 2, bytesEstimate: 900, budgetBytes: 1_000, refused: 3, reason } };
    const red = loop.health();
    expect(red.ready.ok).toBe(false);
    expect(red.ready.checks.find((c) => c.name === `source:${source.name}`)).toEqual({
      name: `source:${source.name}`,
      ok: false,
      reason,
    });
    expect(red.alive.ok).toBe(true);
    expect(red.sources[source.name]?.sourceHealth?.cache?.refused).toBe(3);

    source.report = {
      ...source.report,
      cache: { objects: 2, bytesEstimate: 900, budgetBytes: 1_000, refused: 0, reason: undefined },
    };
    expect(loop.health().ready.ok).toBe(true);
    await loop.stop();
  });
});
