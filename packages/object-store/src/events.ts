/**
 * The reflector-to-loop wire format. Go writes to a store by method call; here a source sends the
 * same operations as values, so any producer (a Kubernetes reflector, an in-process registry, a test)
 * can drive a store through one `AsyncIterable`.
 */

/** Identity of one cached object, unique within one store (for Kubernetes objects `namespace/name`). */
export type ObjectKey = string;

/** The object under `key` now has this state (created or updated). */
export interface UpsertEvent<T> {
  readonly type: 'upsert';
  readonly key: ObjectKey;
  readonly object: T;
}

/** The object under `key` is gone. */
export interface DeleteEvent {
  readonly type: 'delete';
  readonly key: ObjectKey;
}

/**
 * The whole world as of one listing: every object the source knows, and nothing else.
 * Applying it deletes every cached object missing from `objects` (deletions missed while
 * disconnected), except those under a key in `keep`.
 */
export interface ReplaceEvent<T> {
  readonly type: 'replace';
  readonly objects: ReadonlyMap<ObjectKey, T>;
  /**
   * Keys of objects that exist but that the source cannot give a usable version of (a reflector's
   * quarantined objects): a cached entry under one of them is left as it is — the last good
   * version — instead of being deleted; an uncached one stays uncached.
   */
  readonly keep?: ReadonlySet<ObjectKey> | undefined;
}

/**
 * The source no longer holds the objects `retain` rejects: they still exist, another holder owns
 * them now (a sharded reflector whose ranges changed). Applying it removes them from the store
 * without a deletion: the parents it returns are *released* (not to be reconciled here), never
 * offered as changed. Sent before the listing that follows the change, which then brings the
 * newly owned objects and the deletions that happened meanwhile, as any listing does.
 */
export interface ReleaseEvent<T> {
  readonly type: 'release';
  /**
   * True for an object the source still holds. Called once per cached object; must be pure. A
   * method, not a function property, so a `Source<T>` stays assignable to `Source<unknown>` (method
   * parameters are bivariant), as it was before this event existed.
   */
  retain(object: T, key: ObjectKey): boolean;
}

/** One operation on a store. */
export type SourceEvent<T> = UpsertEvent<T> | DeleteEvent | ReplaceEvent<T> | ReleaseEvent<T>;

/** Builds an {@link UpsertEvent}. */
export function upsertEvent<T>(key: ObjectKey, object: T): UpsertEvent<T> {
  return { type: 'upsert', key, object };
}

/** Builds a {@link DeleteEvent}. */
export function deleteEvent(key: ObjectKey): DeleteEvent {
  return { type: 'delete', key };
}

/** Builds a {@link ReplaceEvent} from any iterable of `[key, object]` pairs (later pairs win), and the keys to `keep` if any. */
export function replaceEvent<T>(objects: Iterable<readonly [ObjectKey, T]>, keep?: Iterable<ObjectKey>): ReplaceEvent<T> {
  const world = objects instanceof Map ? (objects as ReadonlyMap<ObjectKey, T>) : new Map(objects);
  if (keep === undefined) return { type: 'replace', objects: world };
  const kept = keep instanceof Set ? (keep as ReadonlySet<ObjectKey>) : new Set(keep);
  return kept.size === 0 ? { type: 'replace', objects: world } : { type: 'replace', objects: world, keep: kept };
}

/** Builds a {@link ReleaseEvent}. */
export function releaseEvent<T>(retain: (object: T, key: ObjectKey) => boolean): ReleaseEvent<T> {
  return { type: 'release', retain };
}
