import { describe, expect, it } from 'vitest';
import { ManualClock, type Logger } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { InProcessSource, ReconcileLoop } from '../src/index.js';

interface Cell {
  pool: string;
  data: string;
}

const cell = (pool: string): Cell => ({ pool, data: 'x'.repeat(200) });

function loopOver(source: InProcessSource<Cell>, memoryBudgetBytes?: number, logger?: Logger) {
  const reconciled: string[] = [];
  const loop = new ReconcileLoop<Cell, string>({
    source,
    keyMap: (c) => c.pool,
    reconcile: (key) => void reconciled.push(key),
    clock: new ManualClock(),
    memoryBudgetBytes,
    logger,
  });
  return { loop, reconciled };
}

/** One cell's estimated cost, read from an unbudgeted loop over one. */
async function oneCellCost(): Promise<number> {
  const { loop } = loopOver(new InProcessSource<Cell>('cells', [['a', cell('p')]]));
  await loop.start();
  const one = loop.health().sources.cells!.cache.bytesEstimate;
  await loop.stop();
  return one;
}

describe('loop.health() with a store over its memory budget', () => {
  it('[loop: Cache budget health] a store its memory budget holds incomplete turns the source not ready with the reason, stays alive, reconciles nothing it refused, and turns ready again once it fits', async () => {
    const one = await oneCellCost();

    const source = new InProcessSource<Cell>('cells', [['a', cell('p')]]);
    const logger = recordingLogger();
    const { loop, reconciled } = loopOver(source, Math.floor(one * 1.5), logger);
    await loop.start();
    await settle();
    expect(loop.health().ready.ok).toBe(true);
    expect(loop.health().sources.cells!.cache).toMatchObject({ objects: 1, bytesEstimate: one, refused: 0 });

    source.upsert('b', cell('q'));
    await settle();
    const red = loop.health();
    expect(red.ready.ok).toBe(false);
    const check = red.ready.checks.find((c) => c.name === 'source:cells');
    expect(check?.ok).toBe(false);
    expect(check?.reason).toMatch(/^memory budget of \d+ bytes full \(\d+ held\): 1 objects not cached$/);
    expect(red.alive.ok).toBe(true);
    expect(red.sources.cells!.cache).toMatchObject({ objects: 1, refused: 1 });
    expect(reconciled).not.toContain('q');
    expect(logger.entries.filter((e) => e.level === 'error' && /memory budget full/.test(e.message))).toHaveLength(1);

    // Deleted on the server: nothing is missing any more.
    source.delete('b');
    await settle();
    expect(loop.health().ready.ok).toBe(true);
    expect(loop.health().sources.cells!.cache.reason).toBeUndefined();
    await loop.stop();
  });

  it('[loop: Cache budget health] objects the primary key map evicts (a pod tracker’s unlabelled pods) are neither counted nor refused: the source stays ready', async () => {
    const one = await oneCellCost();

    const source = new InProcessSource<Cell>('cells', [['a', cell('p')]]);
    const { loop } = loopOver(source, Math.floor(one * 1.5));
    await loop.start();
    await settle();
    for (const key of ['stray-1', 'stray-2', 'stray-3']) source.upsert(key, { data: 'y'.repeat(200) } as Cell);
    await settle();
    expect(loop.store.keys()).toEqual(['a']);
    expect(loop.health().sources.cells!.cache).toMatchObject({ objects: 1, bytesEstimate: one, refused: 0 });
    expect(loop.health().ready.ok).toBe(true);
    await loop.stop();
  });

  it('[loop: Cache budget health] a secondary source’s own memoryBudgetBytes bounds its store, not the primary’s', async () => {
    const one = await oneCellCost();
    const source = new InProcessSource<Cell>('cells', [['a', cell('p')]]);
    const pods = new InProcessSource<Cell>('pods', [['pod-1', cell('p')]]);
    const loop = new ReconcileLoop<Cell, string, { pods: Cell }>({
      source,
      keyMap: (c) => c.pool,
      reconcile: () => {},
      clock: new ManualClock(),
      secondary: { pods: { source: pods, keyMap: (c) => c.pool, memoryBudgetBytes: Math.floor(one * 1.5) } },
    });
    await loop.start();
    await settle();
    source.upsert('b', cell('q')); // the primary has no budget: cached
    pods.upsert('pod-2', cell('q')); // past the secondary's budget: refused
    await settle();
    const health = loop.health();
    expect(health.sources.cells!.cache).toMatchObject({ objects: 2, refused: 0, budgetBytes: undefined });
    expect(health.sources.pods!.cache).toMatchObject({ objects: 1, refused: 1, budgetBytes: Math.floor(one * 1.5) });
    expect(health.ready.checks.find((c) => c.name === 'source:pods')?.ok).toBe(false);
    expect(health.ready.checks.find((c) => c.name === 'source:cells')?.ok).toBe(true);
    await loop.stop();
  });

  it('[loop: Cache budget health] memoryBudgetBytes must be a finite number above 0, at the top level and in a secondary source', () => {
    const source = new InProcessSource<Cell>('cells', []);
    const base = { source, keyMap: (c: Cell) => c.pool, reconcile: () => {} };
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '1000']) {
      expect(() => new ReconcileLoop<Cell, string>({ ...base, memoryBudgetBytes: bad as number })).toThrow(
        /memoryBudgetBytes must be a finite number > 0/,
      );
      const secondary = {
        pods: { source: new InProcessSource<Cell>('pods', []), keyMap: () => 'x', memoryBudgetBytes: bad as number },
      };
      expect(() => new ReconcileLoop<Cell, string>({ ...base, secondary })).toThrow(/secondary\.pods\.memoryBudgetBytes must be/);
    }
  });
});
