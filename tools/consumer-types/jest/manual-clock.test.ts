// The loop README's ManualClock example as a Jest test, compiled to CommonJS by tsc and run by Jest
// in its default CommonJS mode with no transform: what a CommonJS user with Jest does.
import assert from 'node:assert/strict';
import { describe, expect, it } from '@jest/globals';
import { InProcessSource, ManualClock, ReconcileLoop } from '@reconcile-loop/loop';

interface Cell {
  pool: string;
}

describe('the loop README ManualClock example under Jest (CommonJS)', () => {
  it('retries at exactly 100 ms of manual time, with no real waiting', async () => {
    let backendUp = false;
    const attempts: number[] = [];
    const clock = new ManualClock(); // starts at 0; moves only when the test says so

    const cells = new InProcessSource<Cell>('cells', [['engine-0', { pool: 'engines' }]]);
    await using loop = new ReconcileLoop<Cell, string>({
      source: cells,
      keyMap: (cell) => cell.pool,
      reconcile: async () => {
        attempts.push(clock.now());
        if (!backendUp) throw new Error('backend down');
      },
      retry: { backoff: { initialMs: 100, maxMs: 1_000_000 } },
      clock, // retry deadlines, resync and the source retry all wait on this clock
    });

    await loop.start();
    await clock.advanceAsync(0); // no time passes; the first reconcile runs and fails
    assert.deepEqual(attempts, [0]);

    await clock.advanceAsync(99); // the retry deadline is not reached yet
    assert.deepEqual(attempts, [0]);

    backendUp = true;
    await clock.advanceAsync(1); // retried at exactly 100 ms, with no real waiting
    assert.deepEqual(attempts, [0, 100]);

    await clock.advanceAsync(60_000); // success forgot the backoff: nothing more to retry
    expect(attempts).toEqual([0, 100]);
  });

  it('the CommonJS build is what Jest loaded', () => {
    expect(require.resolve('@reconcile-loop/loop')).toMatch(/index\.cjs$/);
  });
});
