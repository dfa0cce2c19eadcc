/**
 * The check `./dev demo --shards N` ends with (demo/overlaps.ts): it must be able to fail. Pure
 * functions over hand-written intervals and replica lines, no server.
 */
import { describe, expect, it } from 'vitest';
import { findOverlaps, intervalsOf, type AdmissionEvent, type Interval } from '../demo/overlaps.js';

const at = (replica: string, key: string, start: number, end: number): Interval => ({ replica, key, start, end });

describe('[cellset: shards overlap check] no CellSet reconciled by two replicas at once', () => {
  it('[cellset: shards overlap check] reports two replicas holding one CellSet at the same time, and nothing for disjoint ones', () => {
    expect(findOverlaps([at('replica-0', 'cells/a', 100, 200), at('replica-1', 'cells/a', 150, 300)])).toEqual([
      'cells/a: replica-1 began reconciling it at 150 while replica-0 held it from 100 to 200',
    ]);
    // In either order of the input.
    expect(findOverlaps([at('replica-1', 'cells/a', 150, 300), at('replica-0', 'cells/a', 100, 200)])).toHaveLength(1);
    // One ending in the millisecond the other starts: the clock cannot order them, so it counts.
    expect(findOverlaps([at('replica-0', 'cells/a', 100, 200), at('replica-1', 'cells/a', 200, 300)])).toHaveLength(1);
    // Disjoint; another key; the same replica twice (the loop never runs one key twice at once, and that is not this check).
    expect(
      findOverlaps([
        at('replica-0', 'cells/a', 100, 200),
        at('replica-1', 'cells/a', 201, 300),
        at('replica-2', 'cells/b', 150, 250),
        at('replica-0', 'cells/a', 150, 160),
      ]),
    ).toEqual([]);
  });

  it('[cellset: shards overlap check] an admission left open counts until the kill, or for ever', () => {
    const h = (hash: string) => ({ h1: 'cells/a', h2: 'cells/b' })[hash];
    const lines: AdmissionEvent[] = [
      { e: 'enter', t: 100, h: 'h1' },
      { e: 'enter', t: 110, h: 'h2' },
      { e: 'release', t: 120, h: 'h2' },
    ];
    // Killed at 500: its open admission of a ends there.
    const killed = intervalsOf('replica-0', lines, h, 500);
    expect(killed).toEqual([at('replica-0', 'cells/b', 110, 120), at('replica-0', 'cells/a', 100, 500)]);
    expect(findOverlaps([...killed, at('replica-1', 'cells/a', 400, 450)])).toHaveLength(1);
    expect(findOverlaps([...killed, at('replica-1', 'cells/a', 501, 550)])).toEqual([]);
    // Not killed: it never ends.
    const open = intervalsOf('replica-0', lines, h);
    expect(findOverlaps([...open, at('replica-1', 'cells/a', 10_000, 10_001)])).toEqual([
      'cells/a: replica-1 began reconciling it at 10000 while replica-0 held it from 100 to an end it never reported',
    ]);
  });

  it('[cellset: shards overlap check] a record that cannot be right is an error, not a pass', () => {
    expect(() => intervalsOf('replica-0', [{ e: 'release', t: 1, h: 'h1' }], () => 'cells/a')).toThrow(/without entering it/);
    expect(() => intervalsOf('replica-0', [{ e: 'enter', t: 1, h: 'hx' }], () => undefined)).toThrow(/no CellSet's uid/);
  });
});
