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

/** What a release touches. */
export interface ReleasesOptions<T, P extends Key> {
  readonly primary: ObjectStore<T, P>;
  /** The offer gate's `dropQueued` (dispatch.ts's `Gate`; structural, so the two files do not import each other). */
  readonly gate: { dropQueued(drop: (key: P) => boolean): number };
  readonly scheduler: RetryScheduler<P>;
  readonly expectations: Expectations<P>;
  readonly logger: Logger;
}

/**
 * Invariant: a key is in the set while it was released and absent from the primary store, and
 * neither came back (a source event offered it again) nor was turned away by a worker since. A
 * release drops the queued copies, the retry state and the expectations of the parents the primary
 * store no longer holds; the set catches the copies that outlived it: a reconcile running at the
 * release that asks for a retry, a parent a debouncer was holding. Memory: one key per released
 * parent until then (a reshard moving 10,000 parents holds 10,000 keys, well under a megabyte).
 * A released parent with no copy left is never turned away, so it stays until it comes back: across
 * many reshards the set can hold every parent that ever left this replica, bounded by the kind's
 * parent count, not by this replica's share (known; the fix is to keep only keys with a copy still
 * queued, in flight or debounced, and drop each when that copy ends).
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

  /**
   * `parents` lost objects to a release of `source`. None is offered. Those the primary store no
   * longer holds are forgotten: dropped from the queue, their retries and expectations forgotten.
   * Those it still holds (a secondary source released their children) are left as they are.
   */
  release(parents: ReadonlySet<P>, source: string): void {
    const { primary, gate, scheduler, expectations, logger } = this.#o;
    const gone = new Set<P>();
    for (const parent of parents) {
      if (primary.hasMembers(parent)) continue;
      gone.add(parent);
      this.#released.add(parent);
      expectations.forget(parent);
      scheduler.forget(parent);
    }
    this.#total += gone.size;
    const dropped = gone.size === 0 ? 0 : gate.dropQueued((key) => gone.has(key));
    logger.info({ source, released: gone.size, droppedFromQueue: dropped }, 'reshard released parents; not reconciled here');
  }

  /** A source event offers `parent` again: it is this replica's again (or never left). */
  returned(parent: P): void {
    this.#released.delete(parent);
  }

  /** For a worker holding `parent`: true (and forgotten) when it was released and the primary store still lacks it. */
  turnAway(parent: P): boolean {
    if (!this.#released.has(parent)) return false;
    this.#released.delete(parent);
    if (this.#o.primary.hasMembers(parent)) return false;
    this.#o.scheduler.forget(parent);
    return true;
  }
}
