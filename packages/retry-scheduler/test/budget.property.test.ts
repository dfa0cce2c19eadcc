import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { RetryScheduler } from '../src/index.js';
import type { FailureOutcome } from '../src/scheduler.js';

const KEYS = ['a', 'b', 'c'] as const;
type Key = (typeof KEYS)[number];

type Op =
  | { kind: 'fail'; key: Key; fp: number }
  | { kind: 'offer'; key: Key; fp: number }
  | { kind: 'release'; key: Key }
  | { kind: 'forget'; key: Key }
  | { kind: 'requeue'; key: Key; ms: number }
  | { kind: 'advance'; ms: number };

const key = fc.constantFrom(...KEYS);
const fp = fc.integer({ min: 0, max: 2 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('fail' as const), key, fp }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('offer' as const), key, fp }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forget' as const), key }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('requeue' as const), key, ms: fc.integer({ min: 0, max: 300 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
);

interface ModelKey {
  failures: number;
  fp: number | undefined;
  parked: boolean;
  kind?: 'retry' | 'requeue';
  deadline?: number;
  seq?: number;
}

/** The README's rules, restated as plainly as possible. */
class Model {
  now = 0;
  seq = 0;
  readonly keys = new Map<Key, ModelKey>();
  readonly fired: Array<[Key, number]> = [];
  constructor(readonly budget: readonly number[]) {}
  #get(key: Key): ModelKey {
    const k = this.keys.get(key) ?? { failures: 0, fp: undefined, parked: false };
    this.keys.set(key, k);
    return k;
  }
  #set(k: ModelKey, kind: 'retry' | 'requeue', deadline: number): void {
    k.kind = kind;
    k.deadline = deadline;
    k.seq = ++this.seq;
  }
  #clear(k: ModelKey): void {
    delete k.kind;
    delete k.deadline;
    delete k.seq;
  }
  fail(key: Key, fp: number): FailureOutcome {
    const k = this.#get(key);
    if (k.parked && k.fp === fp) return { action: 'parked', failures: ++k.failures };
    if (k.parked || k.fp !== fp) k.failures = 0;
    k.parked = false;
    k.fp = fp;
    k.failures += 1;
    if (k.failures > this.budget.length) {
      k.parked = true;
      this.#clear(k);
      return { action: 'parked', failures: k.failures };
    }
    const delayMs = this.budget[k.failures - 1]!;
    this.#set(k, 'retry', this.now + delayMs);
    return { action: 'retry', delayMs, failures: k.failures };
  }
  offer(key: Key, fp: number): boolean {
    const k = this.keys.get(key);
    if (k === undefined) return true;
    if (k.parked && k.fp === fp) return false;
    if (k.parked || k.fp !== fp) {
      k.parked = false;
      k.failures = 0;
    }
    return true;
  }
  release(key: Key): boolean {
    const k = this.keys.get(key);
    if (!k?.parked) return false;
    k.parked = false;
    k.failures = 0;
    return true;
  }
  forget(key: Key): void {
    const k = this.keys.get(key);
    if (k === undefined || k.parked) return;
    k.failures = 0;
    if (k.kind === 'retry') this.#clear(k);
  }
  requeue(key: Key, ms: number): number {
    const k = this.#get(key);
    if (k.parked) return -1;
    k.failures = 0;
    if (k.kind === 'requeue' && k.deadline! <= this.now + ms) return k.deadline! - this.now;
    this.#set(k, 'requeue', this.now + ms);
    return ms;
  }
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next: [Key, ModelKey] | undefined;
      for (const [key, k] of this.keys) {
        if (k.deadline === undefined || k.deadline > target) continue;
        const n = next?.[1];
        if (n === undefined || k.deadline < n.deadline! || (k.deadline === n.deadline && k.seq! < n.seq!)) next = [key, k];
      }
      if (next === undefined) break;
      this.now = Math.max(this.now, next[1].deadline!);
      this.#clear(next[1]);
      this.fired.push([next[0], this.now]);
    }
    this.now = target;
  }
}

describe('RetryScheduler budget properties', () => {
  it('[retry_scheduler: retry budget] outcomes, parked set, counts, deadlines and fired retries equal the model; a parked key never fires and is released only by release() or a different fingerprint', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 4 }),
        fc.array(opArb, { maxLength: 80 }),
        (budget, ops) => {
          const clock = new ManualClock(0);
          const model = new Model(budget);
          const fired: Array<[Key, number]> = [];
          const scheduler: RetryScheduler<Key> = new RetryScheduler<Key>({
            clock,
            budget: { delaysMs: budget },
            onRetry: (k) => {
              expect(scheduler.isParked(k)).toBe(false);
              fired.push([k, clock.now()]);
            },
          });
          for (const op of ops) {
            const wasParked = new Map(KEYS.map((k) => [k, scheduler.parked().find((p) => p.key === k)?.fingerprint] as const));
            switch (op.kind) {
              case 'fail':
                expect(scheduler.fail(op.key, { fingerprint: op.fp })).toEqual(model.fail(op.key, op.fp));
                break;
              case 'offer':
                expect(scheduler.offer(op.key, op.fp)).toBe(model.offer(op.key, op.fp));
                break;
              case 'release':
                expect(scheduler.release(op.key)).toBe(model.release(op.key));
                break;
              case 'forget':
                scheduler.forget(op.key);
                model.forget(op.key);
                break;
              case 'requeue':
                expect(scheduler.requeueAfter(op.key, op.ms)).toBe(model.requeue(op.key, op.ms));
                break;
              case 'advance':
                clock.advance(op.ms);
                model.advance(op.ms);
                break;
            }
            expect(fired).toEqual(model.fired);
            for (const k of KEYS) {
              const m = model.keys.get(k);
              expect(scheduler.isParked(k)).toBe(m?.parked ?? false);
              expect(scheduler.failures(k)).toBe(m?.failures ?? 0);
              expect(scheduler.deadline(k)).toBe(m?.deadline);
              // Release only on a fingerprint change or by hand.
              const before = wasParked.get(k);
              if (wasParked.has(k) && before !== undefined && !scheduler.isParked(k)) {
                const byHand = op.kind === 'release' && op.key === k;
                const byFingerprint = (op.kind === 'offer' || op.kind === 'fail') && op.key === k && op.fp !== before;
                expect(byHand || byFingerprint).toBe(true);
              }
            }
            expect(
              scheduler
                .parked()
                .map((p) => p.key)
                .sort(),
            ).toEqual(KEYS.filter((k) => model.keys.get(k)?.parked));
            expect(clock.pending).toBe(scheduler.pending > 0 ? 1 : 0);
          }
          scheduler.shutdown();
          expect(clock.pending).toBe(0);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('[retry_scheduler: retry budget] a key failing at one fingerprint is retried after exactly each step of the schedule, then parked', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 8 }),
        fc.integer({ min: 0, max: 1_000 }),
        (budget, generation) => {
          const clock = new ManualClock(0);
          const retriedAt: number[] = [];
          const scheduler = new RetryScheduler<string>({
            clock,
            budget: { delaysMs: budget },
            onRetry: () => retriedAt.push(clock.now()),
          });
          const delays: number[] = [];
          let failedAt = 0;
          for (;;) {
            const outcome = scheduler.fail('k', { fingerprint: generation });
            if (outcome.action !== 'retry') {
              expect(outcome).toEqual({ action: 'parked', failures: budget.length + 1 });
              break;
            }
            delays.push(outcome.delayMs);
            failedAt = clock.now();
            clock.advance(outcome.delayMs);
            expect(retriedAt.at(-1)).toBe(failedAt + outcome.delayMs);
          }
          expect(delays).toEqual(budget);
          expect(retriedAt).toHaveLength(budget.length);
          expect(scheduler.offer('k', generation)).toBe(false);
          expect(scheduler.offer('k', generation + 1)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
