/**
 * The cache of one secondary source (an owned or watched kind): objects by object key, indexed by
 * every parent key the source's key map gives them — several for an object with several owners.
 */
import type { ObjectKey, SourceEvent } from '@reconcile-loop/object-store';
import type { Logger, Key } from '@reconcile-loop/primitives';
import {
  InvalidSourceEventError,
  StoreIndexes,
  listMatching,
  readerOf,
  type Indexers,
  type StoreReader,
} from '@reconcile-loop/object-store';
import type { StoreWriter } from '@reconcile-loop/stream-driver';
import { admits, type EventFilters } from './filters.js';

export interface SecondaryStoreOptions<U, P> {
  name: string;
  /** Bound to the caches already (the loop passes `(o, k) => keyMap(o, k, caches)`). */
  keyMap: (object: U, key: ObjectKey) => P | readonly P[] | undefined;
  /**
   * `true` for a `keyMap` source (controller-runtime's `EnqueueRequestsFromMapFunc`): the map is
   * run again at each event on the cached (old) object, because its answer may depend on other
   * caches that changed since the object's last event. `false` for an `owner:` source, whose map
   * reads the object alone, so the stored parents are already its answer on the old object.
   */
  remap: boolean;
  /** The source's `createFilter`, `updateFilter` and `deleteFilter`. */
  filters: EventFilters<U>;
  /** The source's `indexers` option, and its path for an options error. */
  indexers?: Indexers<U> | undefined;
  indexersPath?: string | undefined;
  logger: Logger;
}

const NONE: readonly never[] = Object.freeze([]);

const isParentKey = (value: unknown): value is Key =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean';

/**
 * Invariants, kept by #upsert and #remove (the only writers): `#objects.has(k)` ⇔ `#parentsOf.has(k)`;
 * `p ∈ #parentsOf.get(k)` ⇔ `#members.get(p).has(k)`; no member map is empty. The index is the key
 * map's result at the object's last upsert, so a delete reaches the parents the object was mapped to
 * even when the parent object itself is gone (a deleted parent's owned objects still map to it).
 *
 * With `remap` (a `keyMap` source) the parents an event affects are, as in controller-runtime's
 * `EnqueueRequestsFromMapFunc`, the map's answer at event time on the old object and on the new one
 * (update), or on the last known object (delete, a relist's synthesised delete too) — plus the stored
 * parents, so a parent whose `members()` (its `ctx.owned()`) changes is always reconciled. The stored index alone is
 * not enough: a map that reads another cache (pods → the Services selecting them) can answer
 * differently for the same cached object once that cache changed.
 */
export class SecondaryStore<U, P extends Key> implements StoreWriter<U, P>, StoreReader<U, P> {
  readonly #objects = new Map<ObjectKey, U>();
  readonly #parentsOf = new Map<ObjectKey, readonly P[]>();
  readonly #members = new Map<P, Map<ObjectKey, U>>();
  readonly #o: SecondaryStoreOptions<U, P>;
  /** Kept by #upsert and #remove with the object each replaced; skipped when none is declared. */
  readonly #indexes: StoreIndexes<U>;
  /** This cache's read-only view (object-store's `readerOf`): what a reconcile and a key map get. */
  readonly reader: StoreReader<U, P> = readerOf<U, P>(this);

  /** @throws {OptionsError} for `indexers` that are not an object of functions. */
  constructor(options: SecondaryStoreOptions<U, P>) {
    this.#o = options;
    this.#indexes = new StoreIndexes<U>({
      owner: 'ReconcileLoop',
      indexers: options.indexers ?? {},
      objectOf: (key) => this.#objects.get(key),
      logger: options.logger,
      path: options.indexersPath,
    });
  }

  /**
   * Applies one source event; returns the parents to reconcile: on an upsert the object's old and new
   * parents (none when the update filter skips it and the parents did not change), on a delete the
   * parents it was mapped to; a replace is judged object by object, with a synthesised delete for each
   * cached object missing from the world; a release, the parents of the objects it removed (released).
   *
   * @throws {InvalidSourceEventError} for a value that is not a source event (cache unchanged).
   */
  apply(event: SourceEvent<U>): ReadonlySet<P> {
    const affected = new Set<P>();
    const type = (event as { type?: unknown } | null)?.type;
    if (type === 'upsert' && event.type === 'upsert') {
      assertKey(event, event.key);
      this.#upsert(event.key, event.object, affected);
    } else if (type === 'delete' && event.type === 'delete') {
      assertKey(event, event.key);
      this.#delete(event.key, affected);
    } else if (type === 'replace' && event.type === 'replace') {
      const world = event.objects as ReadonlyMap<ObjectKey, U> | undefined;
      if (
        world === null ||
        typeof world !== 'object' ||
        typeof world.has !== 'function' ||
        typeof world[Symbol.iterator] !== 'function'
      ) {
        throw new InvalidSourceEventError(event, 'a replace event needs objects: ReadonlyMap<ObjectKey, U>');
      }
      for (const key of world.keys()) assertKey(event, key);
      for (const [key, object] of world) this.#upsert(key, object, affected);
      const keep = event.keep;
      for (const key of this.#objects.keys()) if (!world.has(key) && keep?.has(key) !== true) this.#delete(key, affected);
    } else if (type === 'release' && event.type === 'release') {
      const retain = event.retain;
      if (typeof retain !== 'function')
        throw new InvalidSourceEventError(event, 'a release event needs retain: (object, key) => boolean');
      // Decided for every key first, so a throwing `retain` leaves the cache untouched. No filter
      // judges a release: the parents returned are released, not changed.
      const released = [...this.#objects].filter(([key, object]) => !retain(object, key)).map(([key]) => key);
      for (const key of released) this.#remove(key, affected, true);
    } else {
      throw new InvalidSourceEventError(event, `type must be 'upsert', 'delete', 'replace' or 'release'`);
    }
    return affected;
  }

  get(key: ObjectKey): U | undefined {
    return this.#objects.get(key);
  }

  has(key: ObjectKey): boolean {
    return this.#objects.has(key);
  }

  get size(): number {
    return this.#objects.size;
  }

  parentsOf(key: ObjectKey): readonly P[] {
    return this.#parentsOf.get(key) ?? NONE;
  }

  /** Snapshot of the objects mapped to `parent` (what `ctx.owned(name)` gives its reconcile). */
  members(parent: P): ReadonlyMap<ObjectKey, U> {
    const members = this.#members.get(parent);
    return members ? new Map(members) : new Map();
  }

  hasMembers(parent: P): boolean {
    return this.#members.has(parent);
  }

  parents(): P[] {
    return [...this.#members.keys()];
  }

  keys(): ObjectKey[] {
    return [...this.#objects.keys()];
  }

  snapshot(): ReadonlyMap<ObjectKey, U> {
    return new Map(this.#objects);
  }

  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, U> {
    return this.#indexes.byIndex(name, value);
  }

  indexKeys(name: string, value: string): ObjectKey[] {
    return this.#indexes.indexKeys(name, value);
  }

  indexValues(name: string): string[] {
    return this.#indexes.indexValues(name);
  }

  list(filter: (object: U, key: ObjectKey) => boolean): ReadonlyMap<ObjectKey, U> {
    return listMatching(this.#objects, filter);
  }

  #upsert(key: ObjectKey, object: U, affected: Set<P>): void {
    const previous = this.#objects.get(key);
    const before = this.#parentsOf.get(key) ?? NONE;
    this.#remove(key, undefined, false);
    if (this.#indexes.size > 0) this.#indexes.update(key, previous, object);
    // The map runs once the store holds the event (as upstream's handlers run after the indexer
    // update), on the new object and, with `remap`, on the old one: both against the caches now.
    this.#objects.set(key, object);
    const after = this.#map(object, key);
    const oldNow = this.#o.remap && previous !== undefined ? this.#map(previous, key) : before;
    this.#parentsOf.set(key, after);
    for (const parent of after) {
      let members = this.#members.get(parent);
      if (members === undefined) this.#members.set(parent, (members = new Map()));
      members.set(key, object);
    }
    const { filters, name, logger } = this.#o;
    // A create is judged by the create filter; an update only while its parents stay the same (a
    // filter skips a no-op, never a change of membership).
    const judged = previous === undefined || (sameSet(before, after) && sameSet(oldNow, after));
    if (judged && !admits(filters, previous, object, key, name, logger)) return;
    for (const parent of before) affected.add(parent);
    for (const parent of oldNow) affected.add(parent);
    for (const parent of after) affected.add(parent);
  }

  /**
   * A delete (or a relist's synthesised one): the stored parents, plus with `remap` the map's answer
   * on the last known object now; none when the delete filter refuses the last known object.
   */
  #delete(key: ObjectKey, affected: Set<P>): void {
    const last = this.#objects.get(key);
    if (last === undefined && !this.#objects.has(key)) return;
    const { filters, name, logger } = this.#o;
    if (filters.delete !== undefined && !admits(filters, last, undefined, key, name, logger)) {
      this.#remove(key, undefined, true);
      return;
    }
    this.#remove(key, affected, true);
    if (this.#o.remap) for (const parent of this.#map(last as U, key)) affected.add(parent);
  }

  /** Drops `key` from the maps; `unindex` also from the indexes (an upsert re-indexes in one step instead). */
  #remove(key: ObjectKey, affected: Set<P> | undefined, unindex: boolean): void {
    const parents = this.#parentsOf.get(key);
    if (parents === undefined) return;
    if (unindex && this.#indexes.size > 0) this.#indexes.update(key, this.#objects.get(key), undefined);
    for (const parent of parents) {
      const members = this.#members.get(parent);
      members?.delete(key);
      if (members?.size === 0) this.#members.delete(parent);
      affected?.add(parent);
    }
    this.#parentsOf.delete(key);
    this.#objects.delete(key);
  }

  /** The key map's parents for one object; a throw or a bad key is logged and maps it to no parent (still cached). */
  #map(object: U, key: ObjectKey): readonly P[] {
    const { keyMap, name, logger } = this.#o;
    let result: unknown;
    try {
      result = keyMap(object, key);
    } catch (error) {
      logger.error({ source: name, objectKey: key, err: error }, 'secondary key map threw; object cached without a parent');
      return NONE;
    }
    if (result === undefined) return NONE;
    const list: unknown[] = Array.isArray(result) ? result : [result];
    const parents: P[] = [];
    for (const parent of list) {
      if (!isParentKey(parent)) {
        logger.error(
          { source: name, objectKey: key, got: parent === null ? 'null' : typeof parent },
          'secondary key map returned a parent key that is not a primitive; skipped',
        );
      } else if (!parents.includes(parent as P)) parents.push(parent as P);
    }
    return parents.length === 0 ? NONE : parents;
  }
}

function sameSet<P>(a: readonly P[], b: readonly P[]): boolean {
  return a.length === b.length && a.every((p) => b.includes(p));
}

function assertKey(event: unknown, key: unknown): asserts key is ObjectKey {
  if (typeof key !== 'string') throw new InvalidSourceEventError(event, `object key must be a string, got ${typeof key}`);
}
