/**
 * Parents a sharded source released (its ranges changed: another replica owns them now). A
 * release is not a deletion: a released parent must not be reconciled here, where its cache entry
 * is gone and a reconcile would read `parent === undefined` as "deleted" and act on it (drop
 * finalizers, delete children the new owner still needs).
 */
import type { Key, Logger } from '@reconcile-loop/primitives';
import type { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import type { ObjectStore } from '@reconcile-loop/object-store';
import type { Expectations } from './expectations.js';

/** What a release touches, and where a copy of a released parent can still be waiting. */
export interface ReleasesOptions<T, P extends Key> {
  readonly primary: ObjectStore<T, P>;
  /** The offer gate's `dropQueued` (dispatch.ts's `Gate`; structural, so the two files do not import each other). */
  readonly gate: { dropQueued(drop: (key: P) => boolean): number };
  /** The work queue: a key queued or held by a worker (a held one may be re-added: dirty). */
  readonly queue: { has(key: P): boolean; isProcessing(key: P): boolean; isDirty(key: P): boolean };
  readonly scheduler: RetryScheduler<P>;
  readonly expectations: Expectations<P>;
  /** The sources' debouncers: a key waiting in a burst is offered when the burst ends. */
  readonly debouncers: Iterable<{ holds(key: P): boolean }>;
  readonly logger: Logger;
}

/**
 * A released parent keeps no retry state here: the release drops its failures, its pending retry
 * and its park (the park was this replica's verdict on a parent another replica owns now: left, it
 * stayed in `parked()` and the dead-letter gauge of a replica that cannot act on it, and a parent
 * coming back unchanged stayed parked without a try), and the end of a reconcile of it that was
 * running drops whatever that call booked. The new owner starts the parent with a whole budget.
 *
 * Invariant: a key is in the set while it was released, is absent from the primary store, has not
 * come back (a source event offered it again), and a copy of it may still reach a worker: queued or
 * held (dirty), a retry scheduled or a park (only while a timed-out call that booked one still
 * runs), expectations pending, or a debouncer's burst. A key handed to a reconcile is held by the queue
 * until its call has settled and its outcome is booked (the runner books a call that settles in time
 * before it lets the key go, and a timed-out one at its timeout), so "held" covers every reconcile
 * that has not ended, and its outcome is a copy the checks above see. A release drops the queued
 * copies, the retry state and the expectations of the parents the primary store no longer holds;
 * the set catches the copies that outlived it. A released key with no copy left is not kept, and a
 * kept one leaves once a worker turns away its last copy or its reconcile ends leaving none, so the
 * set holds at most the released keys with a copy in flight, not every parent that ever left this
 * replica (it did before: across many reshards that approached the kind's parent count). Bounds that
 * follow: a reconcile that never settles keeps its key here for as long as the queue holds it (one
 * entry per hung call, which `health().inFlight` names); a parked key stays for as long as the
 * scheduler keeps it parked (`health().parked` counts it), because a release by hand would
 * otherwise run it as deleted.
 */
export class Releases<T, P extends Key> {
  readonly #released = new Set<P>();
  readonly #o: ReleasesOptions<T, P>;
  #total = 0;

  constructor(options: ReleasesOptions<T, P>) {
    this.#o = options;
  }

  /** Parents released so far (cumulative). */
  get total(): number {
    return this.#total;
  }

  /** Released parents kept because a copy of them may still reach a worker. */
  get held(): number {
    return this.#released.size;
  }

  /**
   * `parents` lost objects to a release of `source`. None is offered. Those the primary store no
   * longer holds are forgotten: dropped from the queue, their retries and expectations forgotten,
   * and kept in the set only while a copy of them may still come.
   * Those it still holds (a secondary source released their children) are left as they are.
   */
  release(parents: ReadonlySet<P>, source: string): void {
    const { primary, gate, scheduler, expectations, logger } = this.#o;
    const gone = new Set<P>();
    for (const parent of parents) {
      if (primary.hasMembers(parent)) continue;
      gone.add(parent);
      expectations.forget(parent);
      scheduler.drop(parent);
    }
    this.#total += gone.size;
    const dropped = gone.size === 0 ? 0 : gate.dropQueued((key) => gone.has(key));
    for (const parent of gone) if (this.#mayComeBack(parent)) this.#released.add(parent);
    logger.info({ source, released: gone.size, droppedFromQueue: dropped }, 'reshard released parents; not reconciled here');
  }

  /** A source event offers `parent` again: it is this replica's again (or never left). */
  returned(parent: P): void {
    this.#released.delete(parent);
  }

  /**
   * A reconcile of `parent` ended: its call settled, its outcome was booked and the queue let go of
   * the key (a dirty re-add queued again). For a released parent still absent, what that call booked
   * (a retry, a park) is dropped, and the parent is let go when no copy is left. One read of the
   * set's size per reconcile in a loop that has released nothing.
   */
  settled(parent: P): void {
    if (this.#released.size === 0 || !this.#released.has(parent)) return;
    if (this.#o.primary.hasMembers(parent)) {
      this.#released.delete(parent);
      return;
    }
    this.#o.scheduler.drop(parent);
    if (!this.#mayComeBack(parent)) this.#released.delete(parent);
  }

  /**
   * For a worker holding `parent`: true when it was released and the primary store still lacks it.
   * Its retry state is dropped; it stays in the set while another copy may still come (a re-add
   * while held: dirty, queued again at the worker's `done`; a timed-out call still running); the
   * hold itself is not one.
   */
  turnAway(parent: P): boolean {
    if (!this.#released.has(parent)) return false;
    if (this.#o.primary.hasMembers(parent)) {
      this.#released.delete(parent);
      return false;
    }
    this.#o.scheduler.drop(parent);
    if (!this.#mayComeBack(parent, false)) this.#released.delete(parent);
    return true;
  }

  /**
   * Whether a copy of `parent` may still reach a worker (see the class invariant). `held` false: for
   * the worker holding it, whose hold is no copy but whose `done` re-queues a dirty key.
   */
  #mayComeBack(parent: P, held = true): boolean {
    const { queue, scheduler, expectations, debouncers } = this.#o;
    if (queue.has(parent)) return true;
    if (held ? queue.isProcessing(parent) : queue.isDirty(parent)) return true;
    if (scheduler.deadline(parent) !== undefined || scheduler.isParked(parent) || !expectations.satisfied(parent)) return true;
    for (const debouncer of debouncers) if (debouncer.holds(parent)) return true;
    return false;
  }
}
