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
 * Invariant: a key is in the set while it was released, is absent from the primary store, has not
 * come back (a source event offered it again), and a copy of it may still reach a worker: queued or
 * held (dirty), a retry scheduled, parked (`release()` or a new term queues a parked key again),
 * expectations pending, a debouncer's burst, or a reconcile that has not ended (from `started`
 * until the call has both settled and booked its outcome: a timed-out call books first and settles
 * later). A release drops the queued copies, the retry state and the expectations of the parents
 * the primary store no longer holds; the set catches the copies that outlived it. A released key
 * with no copy left is not kept, and a kept one leaves once a worker turns away its last copy or
 * its reconcile ends leaving none, so the set holds at most the released keys with a copy in
 * flight, not every parent that ever left this replica (it did before: across many reshards that
 * approached the kind's parent count). Bounds that follow: a reconcile that never settles keeps its
 * key here for as long as the runner records it in flight and the queue holds it (one entry per
 * hung call, which `health().inFlight` names); a parked key stays for as long as the scheduler
 * keeps it parked (`health().parked` counts it), because a release by hand would otherwise run it
 * as deleted.
 */
export class Releases<T, P extends Key> {
  readonly #released = new Set<P>();
  /**
   * Per key, the reconciles that have not both settled and booked their outcome (see {@link started}).
   * A count, not a set: once a call settles the queue may hand the key to another worker before the
   * first call's outcome is booked, so two calls of one key can be between `started` and their end.
   */
  readonly #running = new Map<P, number>();
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
      scheduler.forget(parent);
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
   * A worker hands `parent` to the runner. Returns `ended`, for the worker to call once when the call
   * settles (the queue's hold released: a dirty re-add is queued again) and once when its outcome is
   * booked (a retry or a park left), in either order: a call settles and then books, a timed-out one
   * books first and settles later, or never. Until both, the call or its outcome may leave a copy;
   * after both, a released parent with no copy left is let go.
   */
  started(parent: P): () => void {
    this.#running.set(parent, (this.#running.get(parent) ?? 0) + 1);
    let ends = 2;
    return () => {
      if (--ends === 0) this.#finished(parent);
    };
  }

  /** Both ends of `parent`'s call reached: a released parent with no copy left is let go. */
  #finished(parent: P): void {
    const running = this.#running.get(parent)! - 1;
    if (running > 0) {
      this.#running.set(parent, running);
      return;
    }
    this.#running.delete(parent);
    if (this.#released.has(parent) && !this.#mayComeBack(parent)) this.#released.delete(parent);
  }

  /**
   * For a worker holding `parent`: true when it was released and the primary store still lacks it.
   * Its retry state is forgotten; it stays in the set while another copy may still come (a park, or
   * a re-add while held: dirty, queued again at the worker's `done`); the hold itself is not one.
   */
  turnAway(parent: P): boolean {
    if (!this.#released.has(parent)) return false;
    if (this.#o.primary.hasMembers(parent)) {
      this.#released.delete(parent);
      return false;
    }
    this.#o.scheduler.forget(parent);
    if (!this.#mayComeBack(parent, false)) this.#released.delete(parent);
    return true;
  }

  /**
   * Whether a copy of `parent` may still reach a worker (see the class invariant). `held` false: for
   * the worker holding it, whose hold is no copy but whose `done` re-queues a dirty key.
   */
  #mayComeBack(parent: P, held = true): boolean {
    const { queue, scheduler, expectations, debouncers } = this.#o;
    if (this.#running.has(parent) || queue.has(parent)) return true;
    if (held ? queue.isProcessing(parent) : queue.isDirty(parent)) return true;
    if (scheduler.deadline(parent) !== undefined || scheduler.isParked(parent) || !expectations.satisfied(parent)) return true;
    for (const debouncer of debouncers) if (debouncer.holds(parent)) return true;
    return false;
  }
}
