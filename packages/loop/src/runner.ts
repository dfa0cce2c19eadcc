/**
 * Runs reconcile calls for the workers, with their timeout and the bookkeeping of what each outcome
 * means (success, requeue-after, failure, terminal error, dead-letter), and keeps a record of every
 * call still running — including a timed-out call JS could not kill — so health can show their age,
 * `stop()` can wait for them or name them abandoned, and the key stays held until the call settles.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import { MAX_TIMER_MS, backoffDelay, type BackoffPolicy, type Clock, type Logger, type Key } from '@reconcile-loop/primitives';
import type { Fingerprint, RetryScheduler } from '@reconcile-loop/retry-scheduler';
import type { Reconcile, ReconcileContext, ReconcileResult } from './context.js';
import {
  InvalidReconcileResultError,
  LeadershipEndedError,
  LoopStoppedError,
  ReconcileTimeoutError,
  ShardMovedError,
  isTerminalError,
} from './errors.js';
import type { ReconcileOutcome, RunnerHooks } from './observer.js';

/** Marks the async context of one reconcile call, so `stop()` can tell it is being called from one. */
export interface ReconcileScope {
  /** The runner whose reconcile this is: a loop refuses only its own stop from inside its own reconcile. */
  readonly owner: object;
  /** True while the worker is still waiting for this call. */
  active: boolean;
}

/**
 * The scope of the reconcile call the current async context runs in, for every loop of the process.
 * One store, not one per loop: on Node 22 an AsyncLocalStorage that has run once stays enabled, and
 * every later promise of the process pays for every enabled store (async_hooks propagation), so a
 * store per loop made each promise cost O(loops ever created) — 20x slower after 1,000 loops in one
 * test process. Node 24's AsyncContextFrame has no such cost; one store is right on both.
 */
export const reconcileScopes = new AsyncLocalStorage<ReconcileScope>();

/** A reconcile call that has not settled yet. */
export interface InFlightReconcile<P extends Key> {
  readonly parentKey: P;
  /** Clock ms when the call began. */
  readonly startedAt: number;
  /** How long it has been running. */
  readonly ageMs: number;
  /** It outlived `controller.reconcileTimeoutMs`: the worker moved on, the call still runs in the background (its key stays held). */
  readonly timedOut: boolean;
}

/** Cumulative counts of reconcile outcomes since construction (the counters a metrics exporter reads). */
export interface ReconcileCounters {
  /** Returned without a requeue. */
  readonly succeeded: number;
  /** Returned `{ requeueAfterMs }`. */
  readonly requeued: number;
  /** Threw, rejected, timed out or returned an invalid result (and was not terminal). */
  readonly failed: number;
  /** Threw a `TerminalError`: not retried. */
  readonly terminal: number;
  /** Times a key exhausted its retry budget and was parked (dead-lettered). */
  readonly parked: number;
  /** Times a parked key was released (fingerprint change or `release()`). */
  readonly released: number;
}

interface Call<P extends Key> {
  readonly parentKey: P;
  readonly startedAt: number;
  timedOut: boolean;
  /** The call settled, its outcome not booked yet (a call that settles in time: for a microtask). */
  settled: boolean;
  /** Its outcome booked, the call not settled yet (a timed-out call). */
  booked: boolean;
}

/**
 * The outcome counters, as a plain record built before the runner and the retry scheduler: the
 * runner counts each call's outcome, the scheduler's release hook counts releases, and neither has
 * to reach the other to do it.
 */
export type OutcomeCounts = { -readonly [K in keyof ReconcileCounters]: ReconcileCounters[K] };

/** Every counter at zero. */
export function outcomeCounts(): OutcomeCounts {
  return { succeeded: 0, requeued: 0, failed: 0, terminal: 0, parked: 0, released: 0 };
}

export interface RunnerOptions<T, P extends Key, S> {
  reconcile: Reconcile<T, P, S>;
  /** Where outcomes are counted (`released` is counted by the scheduler's release hook). */
  counts: OutcomeCounts;
  scheduler: RetryScheduler<P>;
  reconcileTimeoutMs: number | undefined;
  clock: Clock;
  logger: Logger;
  /** The observer's start/end hooks; undefined without an observer that has them. */
  observer?: RunnerHooks<P> | undefined;
}

const noop = (): void => {};

/**
 * The delay of an immediate requeue (`{ requeueAfterMs: 0 }`, controller-runtime's `Requeue: true`):
 * client-go's per-item exponential limiter of its default controller rate limiter, 5 ms doubling per
 * consecutive requeue of the key up to 1000 s (8 runs in the first second, not a hot loop). Its
 * overall 10 qps / burst 100 bucket is not taken: our failure retries are per key with no shared
 * bucket either, and a bucket shared by every key would let one requeueing key delay the others.
 */
export const REQUEUE_BACKOFF: BackoffPolicy = Object.freeze({ initialMs: 5, maxMs: 1_000_000 });

export class ReconcileRunner<T, P extends Key, S> {
  readonly #o: RunnerOptions<T, P, S>;
  /** Every call not yet settled, by its promise (settled calls are removed as they settle). */
  readonly #calls = new Map<Promise<unknown>, Call<P>>();
  readonly #counts: OutcomeCounts;
  /** Consecutive immediate requeues per key; any other outcome of the key's reconcile drops its entry. */
  readonly #requeues = new Map<P, number>();

  constructor(options: RunnerOptions<T, P, S>) {
    this.#o = options;
    this.#counts = options.counts;
  }

  /** Calls still running, oldest first. */
  inFlight(): InFlightReconcile<P>[] {
    const now = this.#o.clock.now();
    return [...this.#calls.values()].map((c) => ({
      parentKey: c.parentKey,
      startedAt: c.startedAt,
      ageMs: now - c.startedAt,
      timedOut: c.timedOut,
    }));
  }

  /** A snapshot of the outcome counters. */
  counters(): ReconcileCounters {
    return { ...this.#counts };
  }

  /** Resolves once every call running now has settled. */
  settled(): Promise<unknown> {
    return Promise.allSettled([...this.#calls.keys()]);
  }

  /**
   * Reconciles `key` once and books the outcome (see the README's backoff table). Resolves once the
   * outcome is booked: when the call settles, or at its timeout. `onSettled` runs once the call has
   * settled AND its outcome is booked — after the booking for a call that settles in time, when the
   * call itself settles (later, or never) for a timed-out one — so the caller keeps the key held
   * until then: a retry can never overlap the call, and a key handed over is always held or booked,
   * never neither (the next call of the key sees this one's retry state and park).
   * `fingerprint` is the parent's fingerprint when the call began: the one a failure is counted at.
   * Never rejects except for a throwing logger (the key is released all the same).
   */
  async run(
    key: P,
    context: ReconcileContext<T, P, S>,
    controller: AbortController,
    fingerprint: Fingerprint,
    onSettled: () => void,
  ): Promise<void> {
    const { clock, logger } = this.#o;
    const parentKey = String(key);
    const scope: ReconcileScope = { owner: this, active: true };
    const call = reconcileScopes.run(scope, () => invoke(this.#o.reconcile, key, context));
    const record: Call<P> = { parentKey: key, startedAt: clock.now(), timedOut: false, settled: false, booked: false };
    this.#calls.set(call, record);
    this.#o.observer?.start(key, record.startedAt);
    // `onSettled` at the later of the call's settle and its booking. Flags on the record, not a
    // counter two closures share: that context and closure cost ≈ 0.2 µs a reconcile (BENCHMARKS (31)).
    const settle = (): void => {
      this.#calls.delete(call);
      if (record.booked) onSettled();
      else record.settled = true;
    };
    call.then(settle, settle);
    let timer: unknown;
    let outcome: Outcome | undefined;
    try {
      let result: unknown;
      const timeoutMs = this.#o.reconcileTimeoutMs;
      if (timeoutMs === undefined) {
        result = await call;
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
        // the background while the worker moves on; its key stays held until it settles, and its
        // late outcome is only logged (the timeout already counted as its failure).
        call.then(() => {
          if (record.timedOut) logger.debug({ parentKey }, 'a timed-out reconcile finished late');
        }, noop);
        result = await Promise.race([call, timedOut]);
      }
      outcome = this.#book(key, verdictOf(key, { result }, controller.signal), fingerprint);
    } catch (error) {
      // The call threw, timed out, or booking its result threw (a throwing logger): a failure.
      outcome = this.#book(key, verdictOf(key, { error }, controller.signal), fingerprint);
    } finally {
      scope.active = false;
      if (timer !== undefined) clock.clearTimeout(timer);
      if (record.settled) onSettled();
      else record.booked = true;
    }
    const observer = this.#o.observer;
    if (observer !== undefined && outcome !== undefined) {
      const at = clock.now();
      observer.end({ parentKey: key, at, durationMs: at - record.startedAt, timedOut: record.timedOut, ...outcome });
    }
  }

  /**
   * Books one call's verdict — the one switch over how a call ended (controller-runtime's
   * `reconcileHandler`): success forgets the key's retry state, a requeue schedules it (an
   * immediate one with the key's own backoff), a stop or a term's end books nothing, a terminal
   * error forgets, a failure counts towards the key's backoff or budget (and may park it).
   */
  #book(key: P, verdict: Verdict, fingerprint: Fingerprint): Outcome {
    const { logger, scheduler } = this.#o;
    const parentKey = String(key);
    switch (verdict.kind) {
      case 'success':
        this.#requeues.delete(key);
        scheduler.forget(key);
        this.#counts.succeeded += 1;
        logger.debug({ parentKey, requeueAfterMs: verdict.requeueAfterMs }, 'reconciled');
        return settled('success');
      case 'requeue': {
        const { requeueAfterMs } = verdict;
        let delayMs = requeueAfterMs;
        if (requeueAfterMs === 0) {
          const requeues = (this.#requeues.get(key) ?? 0) + 1;
          this.#requeues.set(key, requeues);
          delayMs = backoffDelay(REQUEUE_BACKOFF, requeues);
        } else {
          this.#requeues.delete(key);
        }
        const inMs = scheduler.requeueAfter(key, delayMs);
        this.#counts.requeued += 1;
        logger.debug({ parentKey, requeueAfterMs, requeueInMs: inMs }, 'reconciled; requeue after delay');
        return settled(requeueAfterMs === 0 ? 'requeue' : 'requeue_after');
      }
      case 'stopped':
        this.#requeues.delete(key);
        logger.debug({ parentKey, err: verdict.error }, 'reconcile ended by stop or the end of the leadership term; not retried');
        return settled('stopped', verdict.error);
      case 'terminal':
        this.#requeues.delete(key);
        scheduler.forget(key);
        this.#counts.terminal += 1;
        logger.error({ parentKey, err: verdict.error }, 'reconcile failed with a terminal error; not retried');
        return { ...settled('error', verdict.error), terminal: true };
      case 'failed':
        this.#requeues.delete(key);
        return this.#failed(key, verdict.error, fingerprint);
    }
  }

  /** A failure that may be retried: counted towards the key's backoff or budget. */
  #failed(key: P, error: unknown, fingerprint: Fingerprint): Outcome {
    const { logger, scheduler } = this.#o;
    const parentKey = String(key);
    this.#counts.failed += 1;
    const wasParked = scheduler.isParked(key);
    const outcome = scheduler.fail(key, { error, fingerprint });
    if (outcome.action === 'retry') {
      logger.warn(
        { parentKey, err: error, failures: outcome.failures, retryInMs: outcome.delayMs },
        'reconcile failed; retrying after backoff',
      );
    } else if (outcome.action === 'parked') {
      if (!wasParked) this.#counts.parked += 1;
      logger.error(
        { parentKey, err: error, failures: outcome.failures, fingerprint: describeFingerprint(fingerprint) },
        'reconcile failed; retry budget exhausted, parent key parked (dead-letter) until its fingerprint changes or release()',
      );
    } else {
      logger.debug({ parentKey, err: error }, 'reconcile failed while stopping; not retried');
    }
    return { ...settled('error', error), parked: outcome.action === 'parked' && !wasParked };
  }
}

/** How the call itself ended: the value it resolved with, or what it threw (a timeout included). */
type Ending = { readonly result: unknown; readonly error?: never } | { readonly error: unknown };

/** What a call's ending means for the key. */
type Verdict =
  | { readonly kind: 'success'; readonly requeueAfterMs: number | undefined }
  | { readonly kind: 'requeue'; readonly requeueAfterMs: number }
  | { readonly kind: 'stopped' | 'terminal' | 'failed'; readonly error: unknown };

/**
 * Classifies an ending. A result that is not `undefined` or `{ requeueAfterMs? }` (a finite number
 * up to the timer cap) fails as an invalid result. A negative `requeueAfterMs` (a computed "time
 * until" already past) is a plain success, as controller-runtime's RequeueAfter <= 0 without Requeue
 * is: never a failure that could spend a budget. An error while the call's signal was aborted by the
 * loop's stop, the term's end or a shard move is `stopped`, whatever was thrown.
 */
function verdictOf<P extends Key>(key: P, ending: Ending, signal: AbortSignal): Verdict {
  let error: unknown;
  if ('result' in ending) {
    const { result } = ending;
    const requeueAfterMs = (result as ReconcileResult | undefined)?.requeueAfterMs;
    const valid =
      result === undefined ||
      (typeof result === 'object' &&
        result !== null &&
        (requeueAfterMs === undefined ||
          (typeof requeueAfterMs === 'number' && Number.isFinite(requeueAfterMs) && requeueAfterMs <= MAX_TIMER_MS)));
    if (valid) {
      if (requeueAfterMs === undefined || requeueAfterMs < 0) return { kind: 'success', requeueAfterMs };
      return { kind: 'requeue', requeueAfterMs };
    }
    error = new InvalidReconcileResultError(String(key), result);
  } else {
    error = ending.error;
  }
  const reason = signal.aborted ? signal.reason : undefined;
  if (reason instanceof LoopStoppedError || reason instanceof LeadershipEndedError || reason instanceof ShardMovedError)
    return { kind: 'stopped', error };
  if (isTerminalError(error)) return { kind: 'terminal', error };
  return { kind: 'failed', error };
}

/** How a call ended, as the observer's end event reports it. */
interface Outcome {
  readonly result: ReconcileOutcome;
  readonly terminal: boolean;
  readonly parked: boolean;
  readonly error: unknown;
}

function settled(result: ReconcileOutcome, error?: unknown): Outcome {
  return { result, terminal: false, parked: false, error };
}

function describeFingerprint(fingerprint: Fingerprint): string {
  return typeof fingerprint === 'bigint' ? `${fingerprint}n` : String(fingerprint);
}

/** Runs reconcile so a synchronous throw becomes a rejection like an async one. */
async function invoke<T, P extends Key, S>(
  reconcile: Reconcile<T, P, S>,
  key: P,
  context: ReconcileContext<T, P, S>,
): Promise<unknown> {
  return await reconcile(key, context);
}
