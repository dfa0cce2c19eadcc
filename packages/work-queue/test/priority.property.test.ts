import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { WorkQueue, type WorkQueuePriority } from '../src/index.js';

const KEYS = 12;
const CONSUMERS = 3;
const AGING_MS = 20;

type Op =
  | { kind: 'add'; key: number; priority: WorkQueuePriority }
  | { kind: 'get'; consumer: number }
  | { kind: 'done'; consumer: number }
  | { kind: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({ key: fc.integer({ min: 0, max: KEYS - 1 }), priority: fc.constantFrom<WorkQueuePriority>('normal', 'low') })
      .map((o) => ({ kind: 'add' as const, ...o })),
  },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: CONSUMERS - 1 }).map((consumer) => ({ kind: 'get' as const, consumer })) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: CONSUMERS - 1 }).map((consumer) => ({ kind: 'done' as const, consumer })) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 40 }).map((ms) => ({ kind: 'advance' as const, ms })) },
);

/** A queued key being watched: its priority, when it joined that priority, and how many of its priority were ahead. */
interface Watch {
  priority: WorkQueuePriority;
  since: number;
  ahead: number;
  /** Hand-outs of other keys since `since + AGING_MS` (low) or since `since` (normal). */
  handOuts: number;
}

interface Tally {
  agedTurns: number;
  promotions: number;
  maxLowHandOuts: number;
}

/**
 * Runs `ops` on a priority queue and checks, at every step: no key held twice; a key is queued at one
 * priority at most, never while held; `size` and `byPriority` agree with the queued keys; and the
 * documented bound — a low key with L low keys ahead of it is handed out within 2·(L+1) hand-outs
 * once it has waited `agingMs`, a normal key with N normal keys ahead within 2·(N+1) hand-outs.
 */
function check(ops: readonly Op[]): Tally {
  const clock = new ManualClock(0);
  const q = new WorkQueue<number>({ priority: true, agingMs: AGING_MS, clock });
  const holding = new Map<number, number>(); // consumer → key
  const watches = new Map<number, Watch>(); // queued key → its watch
  const tally: Tally = { agedTurns: 0, promotions: 0, maxLowHandOuts: 0 };
  const queuedAt = (priority: WorkQueuePriority): number => [...watches.values()].filter((w) => w.priority === priority).length;
  const watch = (key: number, priority: WorkQueuePriority): void => {
    watches.set(key, { priority, since: clock.now(), ahead: queuedAt(priority), handOuts: 0 });
  };
  for (const op of ops) {
    switch (op.kind) {
      case 'add': {
        const before = watches.get(op.key);
        const held = q.isProcessing(op.key);
        q.add(op.key, op.priority);
        if (held) break; // dirty: watched when done() queues it
        if (before === undefined) watch(op.key, op.priority);
        else if (before.priority === 'low' && op.priority === 'normal') {
          tally.promotions += 1;
          watch(op.key, 'normal');
        }
        break;
      }
      case 'get': {
        if (holding.has(op.consumer)) break;
        const normalWaiting = q.byPriority().normal.depth > 0;
        const key = q.tryGet();
        if (key === undefined) break;
        expect([...holding.values()]).not.toContain(key);
        const handed = watches.get(key)!;
        if (handed.priority === 'low' && normalWaiting) tally.agedTurns += 1;
        watches.delete(key);
        holding.set(op.consumer, key);
        for (const w of watches.values()) {
          const counting = w.priority === 'normal' || clock.now() >= w.since + AGING_MS;
          if (counting) w.handOuts += 1;
          expect(w.handOuts).toBeLessThanOrEqual(2 * (w.ahead + 1));
          if (w.priority === 'low') tally.maxLowHandOuts = Math.max(tally.maxLowHandOuts, w.handOuts);
        }
        break;
      }
      case 'done': {
        const key = holding.get(op.consumer);
        if (key === undefined) break;
        holding.delete(op.consumer);
        const dirty = q.isDirty(key);
        q.done(key);
        if (dirty) {
          // Queued at the higher priority of its re-adds; read back from where it landed.
          const { normal } = q.byPriority();
          const level: WorkQueuePriority = normal.depth > queuedAt('normal') ? 'normal' : 'low';
          watch(key, level);
        }
        break;
      }
      case 'advance':
        clock.advance(op.ms);
        break;
    }
    const byPriority = q.byPriority();
    expect(byPriority.normal.depth).toBe(queuedAt('normal'));
    expect(byPriority.low.depth).toBe(queuedAt('low'));
    expect(q.size).toBe(watches.size);
    for (const key of watches.keys()) {
      expect(q.has(key)).toBe(true);
      expect(q.isProcessing(key)).toBe(false);
    }
    for (const key of holding.values()) expect(q.isProcessing(key)).toBe(true);
  }
  return tally;
}

const opsArb = fc.array(opArb, { minLength: 50, maxLength: 150 });

describe('WorkQueue priorities (property)', () => {
  it('[work_queue: aging] for any interleaving, no low key waits more than 2·(L+1) hand-outs past agingMs, no normal key more than 2·(N+1); one key, one holder, one priority', () => {
    fc.assert(
      fc.property(opsArb, (ops) => {
        check(ops);
      }),
      { numRuns: 100 },
    );
  });

  it('[work_queue: aging] the runs are not vacuous: on a fixed sample low keys age past normal ones and get promoted', () => {
    let agedTurns = 0;
    let promotions = 0;
    let maxLowHandOuts = 0;
    for (const ops of fc.sample(opsArb, { seed: 28, numRuns: 40 })) {
      const tally = check(ops);
      agedTurns += tally.agedTurns;
      promotions += tally.promotions;
      maxLowHandOuts = Math.max(maxLowHandOuts, tally.maxLowHandOuts);
    }
    expect(agedTurns).toBeGreaterThan(10);
    expect(promotions).toBeGreaterThan(10);
    expect(maxLowHandOuts).toBeGreaterThan(0);
  });
});
