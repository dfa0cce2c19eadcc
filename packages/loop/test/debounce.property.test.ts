import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { Debouncer } from '../src/debounce.js';

interface Plan {
  delayMs: number;
  maxWaitMs: number;
  /** Events as (gap before it in ms, key). */
  events: Array<{ gap: number; key: number }>;
  /** A real timer may fire this much early; the debouncer must still keep its invariants. */
  earlyMs: number;
}

const planArb: fc.Arbitrary<Plan> = fc
  .record({
    delayMs: fc.integer({ min: 1, max: 100 }),
    extraWaitMs: fc.integer({ min: 0, max: 300 }),
    events: fc.array(fc.record({ gap: fc.integer({ min: 0, max: 150 }), key: fc.integer({ min: 0, max: 3 }) }), {
      minLength: 1,
      maxLength: 60,
    }),
    earlyMs: fc.constantFrom(0, 0, 1),
  })
  .map(({ delayMs, extraWaitMs, events, earlyMs }) => ({ delayMs, maxWaitMs: delayMs + extraWaitMs, events, earlyMs }));

/** `seq` orders events and offers that share a clock time. */
interface Outcome {
  events: Array<{ at: number; key: number; seq: number }>;
  offers: Array<{ at: number; key: number; seq: number }>;
}

function run(plan: Plan): Outcome {
  const clock = new ManualClock(0);
  clock.earlyMs = plan.earlyMs;
  const offers: Outcome['offers'] = [];
  const events: Outcome['events'] = [];
  let seq = 0;
  const debouncer = new Debouncer<number>({
    delayMs: plan.delayMs,
    maxWaitMs: plan.maxWaitMs,
    clock,
    offer: (key) => offers.push({ at: clock.now(), key, seq: seq++ }),
  });
  for (const { gap, key } of plan.events) {
    clock.advance(gap);
    events.push({ at: clock.now(), key, seq: seq++ });
    debouncer.push(key);
  }
  clock.advance(plan.maxWaitMs + 1);
  expect(debouncer.pending).toBe(0);
  return { events, offers };
}

describe('debounce with a maximum wait (property, ManualClock)', () => {
  it('[loop: debounce] every event is covered by an offer of its key no later than maxWaitMs after it; an offer ends a quiet delayMs or a burst at its first event + maxWaitMs; never more offers than events', () => {
    fc.assert(
      fc.property(planArb, (plan) => {
        const { events, offers } = run(plan);
        expect(offers.length).toBeLessThanOrEqual(events.length);
        for (const event of events) {
          // The first offer of its key at or after it: the one that carries it.
          const cover = offers.find((o) => o.key === event.key && o.seq > event.seq);
          expect(cover, `event of ${event.key} at ${event.at} never offered`).toBeDefined();
          expect(cover!.at - event.at).toBeLessThanOrEqual(plan.maxWaitMs);
        }
        for (const [i, offer] of offers.entries()) {
          const previous = offers.slice(0, i).findLast((o) => o.key === offer.key)?.seq ?? -1;
          const burst = events.filter((e) => e.key === offer.key && e.seq > previous && e.seq < offer.seq);
          // Every offer carries at least one event: nothing is offered from nothing.
          expect(burst.length).toBeGreaterThan(0);
          const first = burst[0]!.at;
          const last = burst.at(-1)!.at;
          const quiet = offer.at - last >= plan.delayMs;
          const capped = offer.at === first + plan.maxWaitMs;
          expect(quiet || capped, `offer of ${offer.key} at ${offer.at} (burst ${first}..${last})`).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('[loop: debounce] the runs are not vacuous: on a fixed sample bursts coalesce and the maximum wait cuts some', () => {
    let coalesced = 0;
    let capped = 0;
    for (const plan of fc.sample(planArb, { seed: 28, numRuns: 200 })) {
      const { events, offers } = run(plan);
      coalesced += events.length - offers.length;
      capped += offers.filter((o) =>
        events.some((e) => e.key === o.key && o.at - e.at === plan.maxWaitMs && o.at - e.at > plan.delayMs),
      ).length;
    }
    expect(coalesced).toBeGreaterThan(100);
    expect(capped).toBeGreaterThan(5);
  });
});
