import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { RetryScheduler } from '../src/index.js';

/** The retry delay `fail(key)` scheduled, or -1 when it scheduled none (parked, or after shutdown). */
function schedule<K extends string>(scheduler: RetryScheduler<K>, key: K): number {
  const outcome = scheduler.fail(key);
  return outcome.action === 'retry' ? outcome.delayMs : -1;
}

const BASE = 10;
const MAX = 160;
const KEYS = ['a', 'b', 'c', 'd', 'e'] as const;
type Key = (typeof KEYS)[number];

type Op = { kind: 'schedule'; key: Key } | { kind: 'forget'; key: Key } | { kind: 'advance'; ms: number } | { kind: 'shutdown' };

const keyArb = fc.constantFrom(...KEYS);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: keyArb.map((key) => ({ kind: 'schedule' as const, key })) },
  { weight: 2, arbitrary: keyArb.map((key) => ({ kind: 'forget' as const, key })) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 200 }).map((ms) => ({ kind: 'advance' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'shutdown' as const }) },
);

/** The obvious model: a map of pending deadlines, fired in (deadline, scheduling order). */
class Model {
  now: number;
  seq = 0;
  shut = false;
  readonly keys = new Map<Key, { failures: number; deadline?: number; seq?: number }>();
  readonly fired: Array<[Key, number]> = [];
  constructor(
    now: number,
    readonly refail: ReadonlySet<Key>,
  ) {
    this.now = now;
  }
  schedule(key: Key): number {
    if (this.shut) return -1;
    const s = this.keys.get(key) ?? { failures: 0 };
    s.failures += 1;
    const delay = Math.min(MAX, BASE * 2 ** (s.failures - 1));
    s.deadline = this.now + delay;
    s.seq = ++this.seq;
    this.keys.set(key, s);
    return delay;
  }
  forget(key: Key): void {
    this.keys.delete(key);
  }
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next: [Key, { deadline?: number; seq?: number }] | undefined;
      for (const [k, s] of this.keys) {
        if (s.deadline === undefined || s.deadline > target) continue;
        const n = next?.[1];
        if (n === undefined || s.deadline < n.deadline! || (s.deadline === n.deadline && s.seq! < n.seq!)) next = [k, s];
      }
      if (next === undefined || this.shut) break;
      const [k, s] = next;
      this.now = Math.max(this.now, s.deadline!);
      delete s.deadline;
      delete s.seq;
      this.fired.push([k, this.now]);
      if (this.refail.has(k)) this.schedule(k);
    }
    this.now = target;
  }
  shutdown(): void {
    this.shut = true;
    this.keys.clear();
  }
  get pending(): number {
    let n = 0;
    for (const s of this.keys.values()) if (s.deadline !== undefined) n += 1;
    return n;
  }
}

describe('RetryScheduler properties', () => {
  it('[retry_scheduler: latest-wins deadlines] fired keys always equal a simple model; each fires once per schedule, only at its latest deadline, never after forget or shutdown', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), fc.subarray([...KEYS]), (ops, refailKeys) => {
        const clock = new ManualClock(5_000);
        const refail = new Set<Key>(refailKeys);
        const model = new Model(clock.now(), refail);
        const fired: Array<[Key, number]> = [];
        // Latest deadline each key may fire at, as seen from outside; cleared by forget, shutdown, fire.
        const live = new Map<Key, number>();
        let shut = false;
        const scheduler: RetryScheduler<Key> = new RetryScheduler<Key>({
          clock,
          backoff: { initialMs: BASE, maxMs: MAX },
          onRetry: (key) => {
            expect(shut).toBe(false);
            expect(live.get(key)).toBe(clock.now());
            live.delete(key);
            fired.push([key, clock.now()]);
            if (refail.has(key)) {
              const delay = schedule(scheduler, key);
              live.set(key, clock.now() + delay);
            }
          },
        });
        for (const op of ops) {
          switch (op.kind) {
            case 'schedule': {
              const delay = schedule(scheduler, op.key);
              expect(delay).toBe(model.schedule(op.key));
              if (!shut) live.set(op.key, clock.now() + delay);
              break;
            }
            case 'forget':
              scheduler.forget(op.key);
              model.forget(op.key);
              live.delete(op.key);
              break;
            case 'advance':
              clock.advance(op.ms);
              model.advance(op.ms);
              break;
            case 'shutdown':
              scheduler.shutdown();
              model.shutdown();
              live.clear();
              shut = true;
              break;
          }
          expect(fired).toEqual(model.fired);
          expect(scheduler.pending).toBe(model.pending);
          for (const key of KEYS) {
            expect(scheduler.failures(key)).toBe(model.keys.get(key)?.failures ?? 0);
            expect(scheduler.deadline(key)).toBe(model.keys.get(key)?.deadline);
          }
          // Exactly one timer while anything is pending, none otherwise.
          expect(clock.pending).toBe(model.pending > 0 ? 1 : 0);
        }
        expect(clock.maxPending).toBeLessThanOrEqual(1);
        // Whatever is still pending fires at its deadline, and then the scheduler goes idle.
        clock.advance(2 * MAX);
        model.advance(2 * MAX);
        expect(fired).toEqual(model.fired);
        expect(scheduler.pending).toBe(refail.size === 0 ? 0 : model.pending);
        scheduler.shutdown();
        expect(clock.pending).toBe(0);
      }),
      { numRuns: 400 },
    );
  });
});
