/**
 * The rebuild budget's pure functions : the decision per slot, the
 * generation reset, pruning, and a history annotation that is not what this module wrote.
 */
import { describe, expect, it } from 'vitest';
import { REBUILD_HISTORY_ANNOTATION } from '../src/api.js';
import {
  DEFAULT_REBUILD_DELAYS_MS as B,
  decide,
  prune,
  readHistory,
  recordPark,
  recordRebuild,
  writeHistory,
} from '../src/rebuild.js';

describe('the rebuild budget (pure)', () => {
  it('[cellset: rebuild budget] rebuild n waits delaysMs[n-1] after rebuild n-1; the need after the last parks; a parked slot stays parked at its generation', () => {
    let h = {};
    expect(decide(h, 0, 1, 100, B)).toEqual({ kind: 'rebuild', attempt: 1 });
    h = recordRebuild(h, 0, 1, 100);
    expect(decide(h, 0, 1, 1_099, B)).toEqual({ kind: 'wait', ms: 1, attempt: 2 });
    expect(decide(h, 0, 1, 1_100, B)).toEqual({ kind: 'rebuild', attempt: 2 });
    h = recordRebuild(h, 0, 1, 1_100);
    expect(decide(h, 0, 1, 1_100, B)).toEqual({ kind: 'wait', ms: 5_000, attempt: 3 });
    h = recordRebuild(recordRebuild(h, 0, 1, 6_100), 0, 1, 36_100);
    expect(decide(h, 0, 1, 10 ** 9, B)).toEqual({ kind: 'park', rebuilds: 4 });
    h = recordPark(h, 0, 1, 40_000);
    expect(decide(h, 0, 1, 10 ** 9, B)).toEqual({ kind: 'parked' });
    expect(h).toEqual({ '0': { count: 4, generation: 1, lastAt: 36_100, parked: true } });
    // Other slots have their own budget.
    expect(decide(h, 1, 1, 40_000, B)).toEqual({ kind: 'rebuild', attempt: 1 });
  });

  it('[cellset: generation releases] an entry of an older generation counts as none; pruning keeps only named slots at the current generation', () => {
    const h = recordPark(recordRebuild({}, 0, 1, 0), 0, 1, 0);
    expect(decide(h, 0, 2, 5, B)).toEqual({ kind: 'rebuild', attempt: 1 });
    const mixed = { ...recordRebuild(h, 3, 2, 9), ...recordRebuild({}, 1, 2, 7) };
    expect(prune(mixed, 2, 2)).toEqual({ '1': { count: 1, generation: 2, lastAt: 7 } });
  });

  it('[cellset: rebuild budget] a history annotation it did not write is dropped entry by entry, never thrown; its own round-trips', () => {
    expect(readHistory({})).toEqual({ history: {}, dropped: [] });
    expect(readHistory({ [REBUILD_HISTORY_ANNOTATION]: '{nope' })).toEqual({ history: {}, dropped: ['(not JSON)'] });
    expect(readHistory({ [REBUILD_HISTORY_ANNOTATION]: '[1]' })).toEqual({ history: {}, dropped: ['(not an object)'] });
    const text = JSON.stringify({
      '0': { count: 2, generation: 3, lastAt: 5 },
      x: { count: 1, generation: 1, lastAt: 1 },
      '1': { count: -1, generation: 1, lastAt: 1 },
      '2': { count: 1, generation: 1, lastAt: 'soon' },
    });
    expect(readHistory({ [REBUILD_HISTORY_ANNOTATION]: text })).toEqual({
      history: { '0': { count: 2, generation: 3, lastAt: 5 } },
      dropped: ['1', '2', 'x'],
    });
    const h = recordPark(recordRebuild({}, 10, 1, 4), 2, 1, 4);
    expect(readHistory({ [REBUILD_HISTORY_ANNOTATION]: writeHistory(h) }).history).toEqual(h);
    expect(Object.keys(JSON.parse(writeHistory(h)))).toEqual(['2', '10']); // numeric order: stable text
  });
});
