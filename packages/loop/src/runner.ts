/**
 * Runs one reconcile call at a time for the worker, with its timeout, its retry bookkeeping, and a
 * record of every call still running — the one the worker awaits, and any timed-out call JS could
 * not kill — so health can show their age and `stop()` can wait for them or name them abandoned.
 */
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock, Logger, ObjectStore, ObjectStoreReader, ParentKey } from '@reconcile-loop/object-store';
import type { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import type { Reconcile, ReconcileContext } from './context.js';
import { ReconcileTimeoutError } from './errors.js';

/** Marks the async context of one reconcile call, so `stop()` can tell it is being called from one. */
export interface ReconcileFrame {
  /** True while the worker is still waiting for this call. */
  active: boolean;
}

/** A reconcile call that has not settled yet. */
export interface InFlightReconcile<P extends ParentKey> {
  readonly parentKey: P;
  /** Clock ms when the call began. */
  readonly startedAt: number;
  /** How long it has been running. */
  readonly ageMs: number;
  /** It outlived `reconcileTimeoutMs`: the worker moved on, the call still runs in the background. */
  readonly timedOut: boolean;
}

interface Call<P extends ParentKey> {
  readonly parentKey: P;
  readonly startedAt: number;
  timedOut: boolean;
}

export interface RunnerOptions<T, P extends ParentKey> {
  reconcile: Reconcile<T, P>;
  store: ObjectStore<T, P>;
  reader: ObjectStoreReader<T, P>;
  scheduler: RetryScheduler<P>;
  frames: AsyncLocalStorage<ReconcileFrame>;
  reconcileTimeoutMs: number | undefined;
  clock: Clock;
  logger: Logger;
}

const noop = (): void => {};

export class ReconcileRunner<T, P extends ParentKey> {
  readonly #o: RunnerOptions<T, P>;
  /** Every call not yet settled, by its promise (settled calls are removed as they settle). */
  readonly #calls = new Map<Promise<void>, Call<P>>();

  constructor(options: RunnerOptions<T, P>) {
    this.#o = options;
  }

  /** Calls still running, oldest first. */
  inFlight(): InFlightReconcile<P>[] {
    const now = this.#o.clock.now();
    return [...this.#calls.values()].map((c) => ({ parentKey: c.parentKey, startedAt: c.startedAt, ageMs: now - c.startedAt, timedOut: c.timedOut }));
  }

  /** Resolves once every call running now has settled. */
  settled(): Promise<unknown> {
    return Promise.allSettled([...this.#calls.keys()]);
  }

  /**
   * Reconciles `key` once: a success forgets its backoff, a failure (a throw, a rejection, the
   * timeout) schedules a retry unless the loop is stopping. Never rejects except for a throwing logger.
   */
  async run(key: P, loopSignal: AbortSignal): Promise<void> {
    const { clock, logger, scheduler } = this.#o;
    const parentKey = String(key);
    const controller = new AbortController();
    const onStop = (): void => controller.abort(loopSignal.reason);
    loopSignal.addEventListener('abort', onStop, { once: true });
    const context: ReconcileContext<T, P> = Object.freeze({
      parentKey: key,
      members: this.#o.store.members(key),
      store: this.#o.reader,
      signal: controller.signal,
    });
    const frame: ReconcileFrame = { active: true };
    const call = this.#o.frames.run(frame, () => invoke(this.#o.reconcile, key, context));
    const record: Call<P> = { parentKey: key, startedAt: clock.now(), timedOut: false };
    this.#calls.set(call, record);
    const forget = (): void => void this.#calls.delete(call);
    call.then(forget, forget);
    let timer: unknown;
    try {
      const timeoutMs = this.#o.reconcileTimeoutMs;
      if (timeoutMs === undefined) {
        await call;
      } else {
        const timedOut = new Promise<never>((_, reject) => {
          timer = clock.setTimeout(() => {
            const error = new ReconcileTimeoutError(parentKey, timeoutMs);
            record.timedOut = true;
            controller.abort(error);
            reject(error);
          }, timeoutMs);
        });
        // JS cannot cancel the call: a reconcile that ignores its aborted signal keeps running in
        // the background while the worker moves on. Its late outcome is only logged.
        call.then(() => {
          if (record.timedOut) logger.debug({ parentKey }, 'a timed-out reconcile finished late');
        }, noop);
        await Promise.race([call, timedOut]);
      }
      scheduler.forget(key);
      logger.debug({ parentKey }, 'reconciled');
    } catch (error) {
      if (loopSignal.aborted) {
        logger.debug({ parentKey, err: error }, 'reconcile ended by stop; not retried');
      } else {
        const retryInMs = scheduler.schedule(key);
        logger.warn({ parentKey, err: error, failures: scheduler.failures(key), retryInMs }, 'reconcile failed; retrying after backoff');
      }
    } finally {
      frame.active = false;
      if (timer !== undefined) clock.clearTimeout(timer);
      loopSignal.removeEventListener('abort', onStop);
    }
  }
}

/** Runs reconcile so a synchronous throw becomes a rejection like an async one. */
async function invoke<T, P extends ParentKey>(reconcile: Reconcile<T, P>, key: P, context: ReconcileContext<T, P>): Promise<void> {
  await reconcile(key, context);
}
