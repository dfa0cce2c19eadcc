/**
 * The one read interface of a store, and the view that hands it out. `ObjectStore`, the one store
 * type, answers it for every source (a loop's primary and secondary caches alike), so a reconcile,
 * a key map or a test reads any cache with the same methods (kube-rs: `Writer::as_reader()` gives a
 * `Store`).
 */
import type { Key } from '@reconcile-loop/primitives';
import type { ObjectKey } from './events.js';
import type { IndexReader } from './indexes.js';

/**
 * Read access to a store. Methods returning collections return snapshots: they never change after
 * they are returned, so a reconcile can hold one across `await`s. Objects are shared, not copied:
 * neither the store nor its readers may mutate them.
 */
export interface StoreReader<T, P extends Key> extends IndexReader<T> {
  /** The cached object under `key`, or `undefined`. */
  get(key: ObjectKey): T | undefined;
  /** Whether an object is cached under `key`. */
  has(key: ObjectKey): boolean;
  /** Number of cached objects (attributed to a parent or not). */
  readonly size: number;
  /**
   * The parent keys `key` was attributed to when it was last upserted: none, one or several, as its
   * store's key map gave them. Empty when not cached.
   */
  parentsOf(key: ObjectKey): readonly P[];
  /** Snapshot of the objects attributed to `parent` (an empty map for an unknown parent). */
  members(parent: P): ReadonlyMap<ObjectKey, T>;
  /** Parent keys with at least one member, in first-attribution order. */
  parents(): P[];
  /** Whether `parent` has at least one member. */
  hasMembers(parent: P): boolean;
  /** Object keys of every cached object. */
  keys(): ObjectKey[];
  /** Snapshot of the whole store. */
  snapshot(): ReadonlyMap<ObjectKey, T>;
}

/**
 * A frozen view of `store` that has only the {@link StoreReader} methods, each delegating to the
 * store (current state, not a copy). Handed to code that must not write: a reconcile that reached
 * `apply` would break cache-before-notify, since the store is written by its source's driver alone.
 * Every store builds its view once (its `reader`); this is the one place the view is written.
 */
export function readerOf<T, P extends Key>(store: StoreReader<T, P>): StoreReader<T, P> {
  return Object.freeze({
    get: (key: ObjectKey) => store.get(key),
    has: (key: ObjectKey) => store.has(key),
    get size() {
      return store.size;
    },
    parentsOf: (key: ObjectKey) => store.parentsOf(key),
    members: (parent: P) => store.members(parent),
    parents: () => store.parents(),
    hasMembers: (parent: P) => store.hasMembers(parent),
    keys: () => store.keys(),
    snapshot: () => store.snapshot(),
    byIndex: (name: string, value: string) => store.byIndex(name, value),
    indexKeys: (name: string, value: string) => store.indexKeys(name, value),
    indexValues: (name: string) => store.indexValues(name),
    list: (filter: (object: T, key: ObjectKey) => boolean) => store.list(filter),
  });
}
