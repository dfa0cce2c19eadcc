/** What a reconcile call sees, and the read-only view of the store it reads through. */
import type { ObjectKey, ObjectStore, ObjectStoreReader, ParentKey } from '@reconcile-loop/object-store';

/** What one reconcile call gets besides its parent key. */
export interface ReconcileContext<T, P extends ParentKey> {
  /** The parent key being reconciled. */
  readonly parentKey: P;
  /**
   * Snapshot of the parent's members, taken from the synced store just before the call; it does not
   * change while the reconcile runs. Empty when the parent lost its last member.
   */
  readonly members: ReadonlyMap<ObjectKey, T>;
  /** Read-only view of the whole store (current state, not a snapshot). */
  readonly store: ObjectStoreReader<T, P>;
  /**
   * Aborts when the loop stops (reason `LoopStoppedError`) or the reconcile exceeds
   * `reconcileTimeoutMs` (reason `ReconcileTimeoutError`). Pass it to every I/O call.
   */
  readonly signal: AbortSignal;
}

/**
 * Brings the world in line with one parent's members. Must be idempotent: it can be abandoned by
 * `stop()` and re-run by a retry or a resync. Throwing (or rejecting) schedules a retry with backoff;
 * returning forgets the parent's backoff.
 */
export type Reconcile<T, P extends ParentKey> = (parentKey: P, context: ReconcileContext<T, P>) => void | Promise<void>;

/**
 * A frozen facade exposing only the reader methods, so a reconcile cannot reach `apply`: the store
 * is written by the stream driver alone, or cache-before-notify would no longer hold.
 */
export function readOnlyView<T, P extends ParentKey>(store: ObjectStore<T, P>): ObjectStoreReader<T, P> {
  return Object.freeze({
    get: (key: ObjectKey) => store.get(key),
    has: (key: ObjectKey) => store.has(key),
    get size() {
      return store.size;
    },
    parentOf: (key: ObjectKey) => store.parentOf(key),
    members: (parent: P) => store.members(parent),
    parents: () => store.parents(),
    hasMembers: (parent: P) => store.hasMembers(parent),
    keys: () => store.keys(),
    snapshot: () => store.snapshot(),
  });
}
