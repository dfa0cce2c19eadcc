import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../src/index.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

const KEYS = 6;

type Op =
  | { kind: 'add'; key: number }
  | { kind: 'get'; consumer: number }
  | { kind: 'done'; consumer: number }
  | { kind: 'abort'; consumer: number }
  | { kind: 'stop' };

const opArb = (consumers: number): fc.Arbitrary<Op> => {
  const consumer = fc.integer({ min: 0, max: consumers - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: KEYS - 1 }).map((key) => ({ kind: 'add' as const, key })) },
    { weight: 4, arbitrary: consumer.map((c) => ({ kind: 'get' as const, consumer: c })) },
    { weight: 4, arbitrary: consumer.map((c) => ({ kind: 'done' as const, consumer: c })) },
    { weight: 1, arbitrary: consumer.map((c) => ({ kind: 'abort' as const, consumer: c })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'stop' as const }) },
  );
};

/**
 * client-go's workqueue written the plain way (arrays, a "dirty" set of pending keys, a
 * "processing" set), with this package's stop: queued keys and dirty marks are dropped.
 */
class Model {
  queue: number[] = [];
  dirty = new Set<number>();
  processing = new Set<number>();
  waiters: number[] = [];
  holding = new Map<number, number>();
  delivered: Array<[number, number]> = [];
  stopped = false;
  add(key: number): void {
    if (this.stopped || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.#ready(key);
  }
  get(consumer: number): void {
    const key = this.queue.shift();
    if (key === undefined) this.waiters.push(consumer);
    else this.#deliver(consumer, key);
  }
  done(consumer: number): void {
    const key = this.holding.get(consumer) as number;
    this.holding.delete(consumer);
    this.processing.delete(key);
    if (this.dirty.has(key)) this.#ready(key);
  }
  abort(consumer: number): void {
    this.waiters = this.waiters.filter((c) => c !== consumer);
  }
  stop(): void {
    this.stopped = true;
    this.queue = [];
    this.dirty.clear();
    this.waiters = [];
  }
  #ready(key: number): void {
    const consumer = this.waiters.shift();
    if (consumer === undefined) this.queue.push(key);
    else this.#deliver(consumer, key);
  }
  #deliver(consumer: number, key: number): void {
    this.dirty.delete(key);
    this.processing.add(key);
    this.holding.set(consumer, key);
    this.delivered.push([consumer, key]);
  }
}

type Consumer = { state: 'idle' } | { state: 'waiting'; abort: AbortController } | { state: 'holding'; key: number };

describe('WorkQueue exclusive properties', () => {
  it('[work_queue: per-key exclusion] never two consumers on one key; deliveries equal the client-go model (FIFO by readiness); no add after a get is lost', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }).chain((n) => fc.tuple(fc.constant(n), fc.array(opArb(n), { maxLength: 90 }))),
        async ([n, ops]) => {
          const q = new WorkQueue<number>();
          const model = new Model();
          const consumers: Consumer[] = Array.from({ length: n }, () => ({ state: 'idle' }));
          const delivered: Array<[number, number]> = [];
          // Per key: the step of its latest add and of its latest delivery (no-lost-wakeup check).
          const lastAdd = new Map<number, number>();
          const lastDelivery = new Map<number, number>();
          let step = 0;
          let stopped = false;

          const get = (c: number): void => {
            const abort = new AbortController();
            consumers[c] = { state: 'waiting', abort };
            model.get(c);
            q.get(abort.signal).then(
              (key) => {
                // Exclusion, checked at the moment of hand-out: nobody else holds this key.
                for (const other of consumers) expect(other.state === 'holding' && other.key === key).toBe(false);
                consumers[c] = { state: 'holding', key };
                delivered.push([c, key]);
                lastDelivery.set(key, step);
              },
              () => {
                consumers[c] = { state: 'idle' };
              },
            );
          };

          for (const op of ops) {
            step += 1;
            switch (op.kind) {
              case 'add':
                q.add(op.key);
                model.add(op.key);
                if (!stopped) lastAdd.set(op.key, step);
                break;
              case 'get':
                if (consumers[op.consumer]?.state === 'idle' && !stopped) get(op.consumer);
                break;
              case 'done': {
                const c = consumers[op.consumer] as Consumer;
                if (c.state !== 'holding') break;
                consumers[op.consumer] = { state: 'idle' };
                q.done(c.key);
                model.done(op.consumer);
                break;
              }
              case 'abort': {
                const c = consumers[op.consumer] as Consumer;
                if (c.state !== 'waiting') break;
                c.abort.abort();
                model.abort(op.consumer);
                break;
              }
              case 'stop':
                q.stop();
                model.stop();
                stopped = true;
                break;
            }
            await flush();
            expect(delivered).toEqual(model.delivered);
            expect(q.size).toBe(model.queue.length);
            expect(q.processingCount).toBe(model.processing.size);
            expect(q.waiting).toBe(model.waiters.length);
            for (let key = 0; key < KEYS; key++) {
              expect(q.has(key)).toBe(model.queue.includes(key));
              expect(q.isProcessing(key)).toBe(model.processing.has(key));
              expect(q.isDirty(key)).toBe(model.processing.has(key) && model.dirty.has(key));
            }
            const held = consumers.flatMap((c) => (c.state === 'holding' ? [c.key] : []));
            expect(new Set(held).size).toBe(held.length);
          }

          // Drive to quiescence: every consumer finishes and keeps pulling until nothing is pending.
          if (!stopped) {
            for (let round = 0; round < 4 * KEYS + 4; round++) {
              step += 1;
              for (let c = 0; c < n; c++) {
                const consumer = consumers[c] as Consumer;
                if (consumer.state === 'holding') {
                  consumers[c] = { state: 'idle' };
                  q.done(consumer.key);
                  model.done(c);
                }
              }
              for (let c = 0; c < n; c++) if (consumers[c]?.state === 'idle') get(c);
              await flush();
            }
            expect(q.size).toBe(0);
            // No lost wakeup: every key added (before any stop) was handed out after its last add.
            for (const [key, addedAt] of lastAdd) expect(lastDelivery.get(key) ?? -1).toBeGreaterThanOrEqual(addedAt);
            expect(delivered).toEqual(model.delivered);
          }
          q.stop();
          await flush();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('[work_queue: fairness] with a hot key re-added during every reconcile, each other queued key is handed out within (keys queued ahead of it + consumers) gets', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 20 }), async (consumers, others) => {
        const q = new WorkQueue<string>();
        q.add('hot');
        for (let i = 0; i < others; i++) q.add(`k${i}`);
        const held: string[] = [];
        const seenAt = new Map<string, number>();
        for (let gets = 1; gets <= 4 * (others + consumers); gets++) {
          // Keep `consumers` keys in flight: take one, and when full finish the oldest one.
          const key = q.tryGet();
          if (key !== undefined) {
            held.push(key);
            if (!seenAt.has(key)) seenAt.set(key, gets);
          }
          q.add('hot');
          if (held.length >= consumers || key === undefined) {
            const finished = held.shift();
            if (finished !== undefined) q.done(finished);
          }
        }
        for (let i = 0; i < others; i++) {
          expect(seenAt.get(`k${i}`)).toBeDefined();
          expect(seenAt.get(`k${i}`)!).toBeLessThanOrEqual(i + 2 + consumers);
        }
      }),
      { numRuns: 200 },
    );
  });
});
