/**
 * What a reconcile call sees and what it may return. The stores it reads are their own `reader`
 * views (object-store's `StoreReader`), so a reconcile cannot reach `apply`.
 */
import type { ObjectKey, QuarantinedObject, StoreReader } from '@reconcile-loop/object-store';
import type { ExpectationRecorder } from './expectations.js';
import type { Key } from '@reconcile-loop/primitives';

/** Read access to every secondary source's cache, by the name it was given in `secondary`. */
export type SecondaryReaders<S, P extends Key> = { readonly [K in keyof S]: StoreReader<S[K], P> };

/**
 * What a secondary `keyMap` reads besides its object: every source's cache, read-only and current
 * at the event being mapped (the event's own store already holds it). Views, not copies.
 */
export interface MapCaches<T, P extends Key, S> {
  /** The primary source's store (the parents, for a controller). */
  readonly store: StoreReader<T, P>;
  /** The secondary sources' stores, by name. */
  readonly stores: SecondaryReaders<S, P>;
}

/**
 * An object of this reconcile (the parent, a member or an owned object) whose newest version failed
 * its source's view: the caches hold its last good version (what `parent`, `members` and `owned`
 * show), not the version the apiserver has now.
 */
export interface QuarantinedVersion extends QuarantinedObject {
  /** The secondary source's name (its key in `secondary`) for an owned object; the primary source's `name` otherwise. */
  readonly source: string;
}

/** What one reconcile call gets besides its parent key. */
export interface ReconcileContext<T, P extends Key, S = Record<never, never>> {
  /** The parent key being reconciled. */
  readonly parentKey: P;
  /**
   * Snapshot of the parent's members in the primary store, taken just before the call; it does not
   * change while the reconcile runs. Empty when the parent lost its last member.
   */
  readonly members: ReadonlyMap<ObjectKey, T>;
  /**
   * The parent object itself, when the primary source caches it under the parent key (the
   * controller form, `keyMap: (_, key) => key`): the primary store's object at `String(parentKey)`
   * if it is attributed to this parent. `undefined` when the parent was deleted (or in the
   * pod-tracker form, where a parent is a label value with no object of its own).
   */
  readonly parent: T | undefined;
  /**
   * Snapshot of the objects of secondary source `name` mapped to this parent (its owned objects),
   * taken just before the call; still filled after the parent was deleted.
   */
  owned<K extends keyof S & string>(name: K): ReadonlyMap<ObjectKey, S[K]>;
  /**
   * The parent, members and owned objects of this call whose newest version is quarantined (failed
   * the source's view), with why (`issues`) and since when; empty when none is. Such an object is
   * not deleted: the snapshots above hold its last good version, and a later good version lifts it.
   * A reconcile that counts or acts on them can tell that what it sees is not current.
   */
  readonly quarantined: readonly QuarantinedVersion[];
  /**
   * Read-only view of the whole primary store (current state, not a snapshot), with its indexes
   * (`byIndex`, `indexKeys`, `indexValues`) and `list(filter)`.
   */
  readonly store: StoreReader<T, P>;
  /** Read-only views of the secondary stores (current state), by name, with their indexes and `list(filter)`. */
  readonly stores: SecondaryReaders<S, P>;
  /**
   * Records this reconcile's writes to secondary source `name` (kube-controller-manager's
   * `ExpectCreations` / `ExpectDeletions`, by object key): until that source's store has observed
   * every recorded create (key present) and delete (key absent), the loop does not reconcile this
   * parent again, so it never acts on a cache that has not seen its own writes. Record after the
   * write succeeded (or hit AlreadyExists / NotFound). Expires after `expectationsTtlMs`.
   *
   * @throws {OptionsError} for an unknown source name or a non-string key.
   */
  expect<K extends keyof S & string>(name: K): ExpectationRecorder;
  /**
   * Aborts when the loop stops (reason `LoopStoppedError`) or the reconcile exceeds
   * `controller.reconcileTimeoutMs` (reason `ReconcileTimeoutError`). Pass it to every I/O call.
   */
  readonly signal: AbortSignal;
}

/**
 * What a reconcile may return: nothing (done), or `{ requeueAfterMs }` to be run again after that
 * delay although it succeeded (controller-runtime's `Result{RequeueAfter}`: no failure is counted, the
 * backoff resets, the earliest of several pending requeues wins, a later failure replaces it).
 */
export interface ReconcileResult {
  /**
   * Re-run this key after this many ms (finite, at most 2³¹−1). `0` is controller-runtime's
   * `Requeue: true`: rate-limited per key, 5 ms doubling per consecutive `0` up to 1000 s. Negative
   * (a "time until" already past) or omitted: a plain success, no requeue (as upstream's
   * `RequeueAfter <= 0`).
   */
  readonly requeueAfterMs?: number | undefined;
}

/**
 * Brings the world in line with one parent. Must be idempotent: it can be abandoned by `stop()` and
 * re-run by a retry, a requeue or a resync. Throwing (or rejecting) schedules a retry with backoff
 * (a {@link TerminalError} does not); returning forgets the parent's backoff, and returning
 * `{ requeueAfterMs }` also schedules a timed re-run.
 */
export type Reconcile<T, P extends Key, S = Record<never, never>> = (
  parentKey: P,
  context: ReconcileContext<T, P, S>,
) => void | ReconcileResult | Promise<void | ReconcileResult>;
