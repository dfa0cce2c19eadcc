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
  readonly queue: { has(key: P): boolean; isProcessing(key: P): boolean };
  readonly scheduler: RetryScheduler<P>;
  readonly expectations: Expectations<P>;
  /** The sources' debouncers: a key waiting in a burst is offered when the burst ends. */
  readonly debouncers: Iterable<{ holds(key: P): boolean }>;
  readonly logger: Logger;
}

/**
 * Invariant: a key is in the set while it was released, is absent from the primary store, neither
 * came back (a source event offered it again) nor was turned away by a worker since, and a copy of
 * it may still reach a worker: queued or held (dirty), a retry scheduled, expectations pending, a
 * debouncer's burst, or a reconcile that has not booked its outcome yet (from `started` to
 * `finished`, which the workers call around the runner). A release drops the queued copies, the
 * retry state and the expectations of the parents the primary store no longer holds; the set
 * catches the copies that outlived it. A released key with no copy left is not kept, and a kept
 * one leaves once its last copy is turned away or its reconcile finishes without leaving one, so
 * the set holds at most the released keys with a copy in flight, not every parent that ever left
 * this replica (it did before: across many reshards that approached the kind's parent count).
 */
export class Releases<T, P extends Key> {
  readonly #released = new Set<P>();
  /** Keys whose reconcile is between `started` and `finished` (its outcome not booked yet). */
  readonly #running = new Set<P>();
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

  /** A worker hands `parent` to the runner: until {@link finished}, its outcome may leave a copy. */
  started(parent: P): void {
    this.#running.add(parent);
  }

  /** The runner booked `parent`'s outcome: a released parent with no copy left is let go. */
  finished(parent: P): void {
    this.#running.delete(parent);
    if (this.#released.has(parent) && !this.#mayComeBack(parent)) this.#released.delete(parent);
  }

  /** For a worker holding `parent`: true (and forgotten) when it was released and the primary store still lacks it. */
  turnAway(parent: P): boolean {
    if (!this.#released.has(parent)) return false;
    this.#released.delete(parent);
    if (this.#o.primary.hasMembers(parent)) return false;
    this.#o.scheduler.forget(parent);
    return true;
  }

  /** Whether a copy of `parent` may still reach a worker (see the class invariant). */
  #mayComeBack(parent: P): boolean {
    const { queue, scheduler, expectations, debouncers } = this.#o;
    if (this.#running.has(parent) || queue.has(parent) || queue.isProcessing(parent)) return true;
    if (scheduler.deadline(parent) !== undefined || !expectations.satisfied(parent)) return true;
    for (const debouncer of debouncers) if (debouncer.holds(parent)) return true;
    return false;
  }
}
