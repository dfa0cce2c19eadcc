import { ManualClock } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeLeaseServer } from '@reconcile-loop/test-support';
import { replica, start, type Fault, type Replica } from './fakes.js';

// Random interleavings of three electors: clock steps, requests that commit late, answer late, or are
// lost either way, freezes (SIGSTOP) and resumes, kills (gone without a release) and graceful stops
// (with release), each replica on its own wall-clock offset. Intervals where isLeader() is true are
// [start, end); two of them overlap only if one starts inside the other, so checking every other
// replica at every start instant is exact. All replicas share one clock rate, so the documented
// clock bound here is 0.

type Action =
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'freeze' | 'thaw' | 'kill' | 'stop' | 'restart'; readonly who: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 6_000 }).map((ms) => ({ kind: 'advance' as const, ms })) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('freeze' as const, 'thaw' as const, 'kill' as const, 'stop' as const, 'restart' as const),
      who: fc.integer({ min: 0, max: 2 }),
    }),
  },
  // The same, aimed at whoever leads now (-1): the interesting case, so it is not left to chance.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constantFrom('freeze' as const, 'kill' as const, 'stop' as const), who: fc.constant(-1) }),
  },
);

const fault: fc.Arbitrary<Fault> = fc.record({
  commitDelayMs: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 12_000 }) },
  ),
  responseDelayMs: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 12_000 }) },
  ),
  drop: fc.constantFrom('none' as const, 'none' as const, 'none' as const, 'request' as const, 'response' as const),
});

describe('[leader_election: never two leaders] fast-check over random interleavings', () => {
  it('no replica starts leading while another still answers isLeader() true; every start is a write of the Lease by that replica', async () => {
    let terms = 0;
    let takeovers = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 5, maxLength: 40 }),
        fc.array(fault, { minLength: 1, maxLength: 30 }),
        fc.array(fc.integer({ min: -3_600_000, max: 3_600_000 }), { minLength: 3, maxLength: 3 }),
        fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 1, maxLength: 10 }),
        async (actions, faults, offsets, randoms) => {
          const clock = new ManualClock(1_000_000);
          const server = new FakeLeaseServer(clock);
          let next = 0;
          const faultsOf = () => faults[next++ % faults.length]!;
          let r = 0;
          const violations: string[] = [];
          let made = 0;
          const make = (i: number): Replica => {
            const self = replica(server, `r${i}-${made++}`, {
              offsetMs: offsets[i]!,
              faults: faultsOf,
              elector: {
                leaseDurationMs: 15_000,
                random: () => randoms[r++ % randoms.length]!,
                releaseOnCancel: true,
                onStartedLeading: () => {
                  terms += 1;
                  for (const other of live) {
                    if (other !== self && other.elector.isLeader())
                      violations.push(`${self.id} started at ${clock.now()} while ${other.id} leads`);
                  }
                  const last = server.writes.at(-1);
                  if (last?.holder !== self.id) violations.push(`${self.id} started but the lease says ${last?.holder}`);
                },
              },
            });
            return self;
          };
          const live: Replica[] = [];
          for (let i = 0; i < 3; i++) live.push(start(make(i)));
          let previous: string | undefined;
          for (const step of actions) {
            if (step.kind === 'advance') {
              await clock.advanceAsync(step.ms);
            } else {
              const index = step.who >= 0 ? step.who : live.findIndex((x) => x.elector.isLeader());
              if (index < 0) continue;
              const target = live[index]!;
              if (step.kind === 'freeze') target.clock.freeze();
              if (step.kind === 'thaw') target.clock.thaw();
              if (step.kind === 'kill') {
                target.blackHole = true;
                target.clock.thaw();
                target.controller.abort(); // gone: its release (if any) never reaches the server
              }
              if (step.kind === 'stop') {
                target.clock.thaw();
                target.controller.abort();
              }
              if (step.kind === 'restart' && target.controller.signal.aborted) {
                live[index] = start(make(index));
              }
              await clock.advanceAsync(0);
            }
            const leaders = live.filter((x) => x.elector.isLeader());
            if (leaders.length > 1) violations.push(`${leaders.map((x) => x.id).join(', ')} lead at once at ${clock.now()}`);
            const holder = leaders[0]?.id;
            if (holder !== undefined && holder !== previous && previous !== undefined) takeovers += 1;
            if (holder !== undefined) previous = holder;
          }
          for (const x of live) {
            x.clock.thaw();
            x.controller.abort();
          }
          await clock.advanceAsync(30_000);
          await Promise.all(live.map((x) => x.run));
          expect(violations).toEqual([]);
        },
      ),
      { numRuns: 150 },
    );
    // Not vacuous: the runs elected leaders and handed leadership over. The counts depend on fast-check's
    // random seed (measured over many seeds: terms 92–128, takeovers 8–21 in 150 runs), so the floors sit
    // well below the observed range: they catch a property that stopped electing, not a quiet seed.
    expect(terms).toBeGreaterThan(40);
    expect(takeovers).toBeGreaterThan(2);
  }, 120_000);
});
