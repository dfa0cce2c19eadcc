import { OptionsError, backoffDelay, isKey, systemClock, type Clock, type Key } from '@reconcile-loop/primitives';
import { DeadlineTimer } from './deadlines.js';
import { RetrySchedulerDelayError, RetrySchedulerFingerprintError, RetrySchedulerKeyError } from './errors.js';
import {
  resolveTiming,
  type Fingerprint,
  type ParkedKey,
  type ReleasedKey,
  type RetrySchedulerObserver,
  type RetrySchedulerOptions,
  type Timing,
} from './options.js';

/** What {@link RetryScheduler.fail} did with a failure. */
export type FailureOutcome =
  /** A retry is pending `delayMs` from now; `failures` counts this one. */
  | { readonly action: 'retry'; readonly delayMs: number; readonly failures: number }
  /** The budget is exhausted: the key is parked (dead-lettered), nothing is pending. */
  | { readonly action: 'parked'; readonly failures: number }
  /** The scheduler was shut down; nothing was recorded. */
  | { readonly action: 'stopped' };

/** The failure {@link RetryScheduler.fail} records. */
export interface Failure {
  /** What the reconcile threw; kept as `lastError` for `parked()`. */
  readonly error?: unknown | undefined;
  /** The parent's fingerprint at this failure (its `metadata.generation` by default); used only with a budget. */
  readonly fingerprint?: Fingerprint | undefined;
}

interface KeyState {
  /** Consecutive failures since the last success (under a budget: counted at `fingerprint`). */
  failures: number;
  /** What the pending deadline is for; `undefined` exactly when none is pending. */
  kind: 'retry' | 'requeue' | undefined;
  fingerprint: Fingerprint;
  lastError: unknown;
  /** Clock time it was parked at; `undefined` while not parked. */
  parkedAt: number | undefined;
}

const STOPPED: FailureOutcome = Object.freeze({ action: 'stopped' });

/** A fingerprint is a primitive (NaN included: it equals itself under SameValueZero). */
function isPrimitiveFingerprint(value: unknown): boolean {
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean';
}

function checkFingerprint(value: unknown): asserts value is Fingerprint {
  if (value !== null && value !== undefined && !isPrimitiveFingerprint(value)) throw new RetrySchedulerFingerprintError(value);
}

/** SameValueZero, the `Map` rule: a `NaN` fingerprint equals itself. */
function same(a: Fingerprint, b: Fingerprint): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

/**
 * Per-key retry and requeue deadlines on one timer. A failure (`fail`) counts and
 * sets a *retry* deadline by backoff, replacing whatever was pending (latest wins; an error wins
 * over a requeue). A success with a timed re-check (`requeueAfter`) resets the count and sets a
 * *requeue* deadline; against a pending requeue the earliest wins, and it replaces a pending retry.
 * A plain success (`forget`) resets the count and drops a pending retry, but keeps a pending
 * requeue. With a `budget`, the failure after the schedule's last step parks the key (dead-letter):
 * nothing is pending and `offer` turns it away until its fingerprint changes or `release` is called.
 * When a deadline passes, `onRetry(key)` is called. Exactly one timer is armed while anything is
 * pending and none otherwise. Single-threaded: every method runs to completion between timer callbacks.
 *
 * @typeParam K - the parent key type; a primitive, so lookups are by value.
 */
export class RetryScheduler<K extends Key> {
  readonly #onRetry: (key: K) => void;
  readonly #onError: ((error: unknown, key: K) => void) | undefined;
  readonly #observer: RetrySchedulerObserver<K> | undefined;
  readonly #timing: Timing;
  readonly #clock: Clock;
  /** Keys with failures, a pending deadline, or parked; a key with none of these is dropped. */
  readonly #keys = new Map<K, KeyState>();
  /** Parked keys, in the order they were parked. */
  readonly #parked = new Set<K>();
  readonly #timer: DeadlineTimer<K>;
  #shutdown = false;

  /**
   * Creates an idle scheduler. Touches no timer: the first one is armed by the first deadline.
   *
   * @throws {@link OptionsError} when `onRetry` is not a function, `backoff` is not a usable
   * `BackoffPolicy`, `budget.delaysMs` is not an array of finite numbers ≥ 0, or `budget` is
   * combined with `backoff`.
   */
  constructor(options: RetrySchedulerOptions<K>) {
    const { onRetry, onError, observer } = options;
    if (typeof onRetry !== 'function') throw new OptionsError('RetryScheduler', 'onRetry must be a function');
    if (onError !== undefined && typeof onError !== 'function') {
      throw new OptionsError('RetryScheduler', 'onError must be a function when given');
    }
    if (observer !== undefined && (observer === null || typeof observer !== 'object')) {
      throw new OptionsError('RetryScheduler', 'observer must be an object when given');
    }
    this.#timing = resolveTiming(options as RetrySchedulerOptions<unknown>);
    this.#onRetry = onRetry;
    this.#onError = onError;
    this.#observer = observer;
    this.#clock = options.clock ?? systemClock;
    this.#timer = new DeadlineTimer<K>(this.#clock, (key) => this.#due(key));
  }

  /** Keys with a pending deadline (retry or requeue). */
  get pending(): number {
    return this.#timer.size;
  }

  /** Keys parked now. */
  get parkedCount(): number {
    return this.#parked.size;
  }

  /**
   * Records a failure — the reconcile threw — and schedules its retry, replacing any pending
   * deadline, requeue-after included (latest wins; an error wins over a requeue).
   * Without a budget the delay is the `backoff` policy's for `failures` (primitives' `backoffDelay`:
   * `initialMs · factor^(failures−1)`, capped at `maxMs`), and the key never parks. With a budget the delay is `delaysMs[failures−1]`; a failure at a fingerprint
   * other than the one earlier failures were counted at restarts the count at 1, and the failure
   * after the last step parks the key. A failure of a parked key at its parked fingerprint only
   * updates `failures`/`lastError`; at another fingerprint it releases the key and counts as its first.
   *
   * @throws {@link RetrySchedulerKeyError} / {@link RetrySchedulerFingerprintError} for a non-primitive key / fingerprint.
   */
  fail(key: K, failure: Failure = {}): FailureOutcome {
    if (this.#shutdown) return STOPPED;
    if (!isKey(key)) throw new RetrySchedulerKeyError(key);
    const { error, fingerprint } = failure;
    checkFingerprint(fingerprint);
    const budget = this.#timing.budget;
    const now = this.#clock.now();
    const state = this.#state(key);
    let released: ReleasedKey<K> | undefined;
    if (budget !== undefined) {
      if (state.parkedAt !== undefined) {
        if (same(state.fingerprint, fingerprint)) {
          state.failures += 1;
          state.lastError = error;
          return { action: 'parked', failures: state.failures };
        }
        released = this.#unpark(key, state, 'fingerprint', fingerprint, now);
      } else if (state.failures > 0 && !same(state.fingerprint, fingerprint)) {
        state.failures = 0; // a new spec gets a fresh budget: a count left from the old one must not park it early
      }
      state.fingerprint = fingerprint;
    }
    state.failures += 1;
    state.lastError = error;
    const failures = state.failures;
    if (released !== undefined) this.#notify(key, (o) => o.onRelease?.(released));
    if (budget !== undefined && failures > budget.length) {
      if (state.kind !== undefined) this.#timer.clear(key);
      state.kind = undefined;
      state.parkedAt = now;
      this.#parked.add(key);
      const parked = this.#describe(key, state);
      this.#notify(key, (o) => o.onPark?.(parked));
      return { action: 'parked', failures };
    }
    const delayMs = budget !== undefined ? (budget[failures - 1] as number) : backoffDelay(this.#timing.backoff, failures);
    state.kind = 'retry';
    this.#timer.set(key, now + delayMs);
    this.#notify(key, (o) => o.onFailure?.({ key, failures, delayMs, at: now, error }));
    return { action: 'retry', delayMs, failures };
  }

  /**
   * A success that asks for a timed re-check (controller-runtime's `Result{RequeueAfter}`): resets
   * the failure count (no failure is counted), replaces a pending retry, and against a pending
   * requeue keeps the earlier deadline. Ignored for a parked key and after shutdown.
   *
   * @returns ms until the key's (possibly earlier) pending deadline, or `-1` when nothing was scheduled.
   * @throws {@link RetrySchedulerKeyError} for a non-primitive key; {@link RetrySchedulerDelayError}
   * when `delayMs` is not a finite number ≥ 0.
   */
  requeueAfter(key: K, delayMs: number): number {
    if (this.#shutdown) return -1;
    if (!isKey(key)) throw new RetrySchedulerKeyError(key);
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) throw new RetrySchedulerDelayError(delayMs);
    if (this.#keys.get(key)?.parkedAt !== undefined) return -1;
    const now = this.#clock.now();
    const state = this.#state(key);
    state.failures = 0;
    state.lastError = undefined;
    let deadline = now + delayMs;
    const pending = state.kind === 'requeue' ? this.#timer.get(key) : undefined;
    if (pending !== undefined && pending <= deadline) {
      deadline = pending;
    } else {
      state.kind = 'requeue';
      this.#timer.set(key, deadline);
    }
    this.#notify(key, (o) => o.onRequeue?.({ key, delayMs, deadline, at: now }));
    return Math.max(0, deadline - now);
  }

  /**
   * A success (or a terminal error: no retry): resets `key`'s failure count and drops a pending
   * retry, so it will not fire. A pending requeue-after stays: a re-check a reconcile asked for is
   * still owed. A parked key is left parked — only {@link RetryScheduler.offer} with a new
   * fingerprint or {@link RetryScheduler.release} lift it.
   */
  forget(key: K): void {
    const state = this.#keys.get(key);
    if (state === undefined || state.parkedAt !== undefined) return;
    state.failures = 0;
    state.lastError = undefined;
    if (state.kind === 'retry') {
      state.kind = undefined;
      this.#timer.clear(key);
    }
    this.#gc(key, state);
  }

  /**
   * The gate in front of the work queue: call it with the parent's current fingerprint whenever
   * something (an event, resync, a requeue) would enqueue `key`. Returns `false` for a key parked at
   * that same fingerprint — a change of members alone does not lift it — and `true` otherwise. A
   * parked key offered a different fingerprint is released (and `true`); with a budget, a key whose
   * failures were counted at another fingerprint gets a fresh budget. Without a budget nothing parks.
   * `false` after shutdown.
   *
   * @throws {@link RetrySchedulerKeyError} / {@link RetrySchedulerFingerprintError} for a non-primitive key / fingerprint.
   */
  offer(key: K, fingerprint: Fingerprint): boolean {
    if (this.#shutdown) return false;
    if (!isKey(key)) throw new RetrySchedulerKeyError(key);
    checkFingerprint(fingerprint);
    const state = this.#keys.get(key);
    if (state === undefined || this.#timing.budget === undefined) return true;
    if (state.parkedAt !== undefined) {
      if (same(state.fingerprint, fingerprint)) return false;
      const released = this.#unpark(key, state, 'fingerprint', fingerprint, this.#clock.now());
      this.#gc(key, state);
      this.#notify(key, (o) => o.onRelease?.(released));
      return true;
    }
    if (state.failures > 0 && !same(state.fingerprint, fingerprint)) {
      state.failures = 0;
      state.lastError = undefined;
      this.#gc(key, state);
    }
    return true;
  }

  /** Manually releases a parked key with a fresh budget; returns whether it was parked. The caller enqueues it. */
  release(key: K): boolean {
    const state = this.#keys.get(key);
    if (state?.parkedAt === undefined) return false;
    const released = this.#unpark(key, state, 'manual', undefined, this.#clock.now());
    this.#gc(key, state);
    this.#notify(key, (o) => o.onRelease?.(released));
    return true;
  }

  /**
   * Drops everything kept for `key`, a park included: its failures, its pending retry or requeue,
   * its parked entry. For a key that is no longer this scheduler's to retry (its parent moved to
   * another replica): not a release of a park, so no observer hook runs and nothing is counted.
   * Returns whether anything was kept.
   */
  drop(key: K): boolean {
    const state = this.#keys.get(key);
    if (state === undefined) return false;
    this.#timer.clear(key);
    this.#parked.delete(key);
    this.#keys.delete(key);
    return true;
  }

  /** Whether `key` is parked (dead-lettered): not retried, and turned away by `offer` at its fingerprint. */
  isParked(key: K): boolean {
    return this.#keys.get(key)?.parkedAt !== undefined;
  }

  /** Every parked key, oldest first, for inspection. */
  parked(): ParkedKey<K>[] {
    return [...this.#parked].map((key) => this.#describe(key, this.#keys.get(key) as KeyState));
  }

  /** Failures counted for `key` since its last success (with a budget: at its current fingerprint); 0 for an unknown key. */
  failures(key: K): number {
    return this.#keys.get(key)?.failures ?? 0;
  }

  /** `key`'s pending deadline (retry or requeue) on the clock's scale, or `undefined` when none is pending. */
  deadline(key: K): number | undefined {
    return this.#timer.get(key);
  }

  /** Cancels the timer and drops every key, parked ones included; nothing fires afterwards and every call is a no-op. Idempotent. */
  shutdown(): void {
    if (this.#shutdown) return;
    this.#shutdown = true;
    this.#timer.shutdown();
    this.#keys.clear();
    this.#parked.clear();
  }

  #state(key: K): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { failures: 0, kind: undefined, fingerprint: undefined, lastError: undefined, parkedAt: undefined };
      this.#keys.set(key, state);
    }
    return state;
  }

  /** Keeps `#keys` to keys that still carry something, so healthy keys cost no memory. */
  #gc(key: K, state: KeyState): void {
    if (state.failures === 0 && state.kind === undefined && state.parkedAt === undefined) this.#keys.delete(key);
  }

  #unpark(key: K, state: KeyState, reason: 'fingerprint' | 'manual', fingerprint: Fingerprint, at: number): ReleasedKey<K> {
    const event: ReleasedKey<K> =
      reason === 'fingerprint'
        ? { key, reason, parkedFingerprint: state.fingerprint, fingerprint, at }
        : { key, reason, parkedFingerprint: state.fingerprint, at };
    state.parkedAt = undefined;
    state.failures = 0;
    state.lastError = undefined;
    this.#parked.delete(key);
    return event;
  }

  #describe(key: K, state: KeyState): ParkedKey<K> {
    return {
      key,
      fingerprint: state.fingerprint,
      failures: state.failures,
      lastError: state.lastError,
      parkedAt: state.parkedAt as number,
    };
  }

  /** A deadline passed: the key leaves the pending set before `onRetry`, so `onRetry` may reschedule it. */
  #due(key: K): void {
    const state = this.#keys.get(key);
    if (state !== undefined) {
      state.kind = undefined;
      this.#gc(key, state);
    }
    this.#guard(key, () => this.#onRetry(key));
  }

  #notify(key: K, call: (observer: RetrySchedulerObserver<K>) => void): void {
    const observer = this.#observer;
    if (observer !== undefined) this.#guard(key, () => call(observer));
  }

  #guard(key: K, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      try {
        this.#onError?.(error, key);
      } catch {
        // A failing error sink must not cost the other keys their retries.
      }
    }
  }
}
