import type { ObjectKey, SourceEvent, UpsertEvent, DeleteEvent, ReplaceEvent, ReleaseEvent } from './events.js';
import { StoreIndexes, type Indexers } from './indexes.js';
import { readerOf, type StoreReader } from './reader.js';
import { OptionsError, ReconcileLoopError, silentLogger, type Logger, type Key } from '@reconcile-loop/primitives';

/**
 * Maps a cached object to the parent keys whose reconciles it concerns: controller-runtime's
 * `EnqueueRequestForOwner` and `EnqueueRequestsFromMapFunc`, from whatever the object carries (a
 * label, its owner references, its own key).
 *
 * Returns one parent key (the common case), an array of them (an object shared by several owners;
 * repeats count once), or `undefined` / `[]` for none: what the store then does with the object is
 * its `unmapped` policy. A key map that throws, or returns anything but a parent key (string,
 * number, bigint, boolean) or an array of them, "cannot map" the object: treated as no parent and
 * logged. It should be pure; see `remap` for a map that reads other state.
 */
export type KeyMap<T, P extends Key> = (object: T, key: ObjectKey) => P | readonly P[] | undefined;

/**
 * Logged (never thrown into the stream) when the key map fails on an object, or (with `unmapped:
 * 'evict'`) gives it no parent. The log line adds what the store did with the object.
 */
export class UnmappableObjectError extends ReconcileLoopError {
  readonly code = 'RL_STORE_UNMAPPABLE_OBJECT' as const;
  /** The object key the key map could not attribute. */
  readonly key: ObjectKey;
  /**
   * @param key the object key.
   * @param options `cause` is what the key map threw (or a `TypeError` for a value that is not a
   *   parent key); absent when it gave no parent.
   */
  constructor(key: ObjectKey, options?: { cause?: unknown }) {
    super(
      `object ${JSON.stringify(key)} cannot be mapped to a parent key: ${
        options && 'cause' in options ? `key map failed: ${describeCause(options.cause)}` : 'key map returned no parent'
      }`,
      options,
    );
    this.key = key;
  }
}

/** Thrown by {@link ObjectStore.apply} for a value that is not a source event; the store is left unchanged. */
export class InvalidSourceEventError extends ReconcileLoopError {
  readonly code = 'RL_STORE_INVALID_SOURCE_EVENT' as const;
  /** The rejected value. */
  readonly event: unknown;
  constructor(event: unknown, problem: string) {
    super(`not a source event: ${problem}`);
    this.event = event;
  }
}

/** Options for {@link ObjectStore}. */
export interface ObjectStoreOptions<T, P extends Key> {
  /** Attributes each object to its parent keys; see {@link KeyMap}. */
  keyMap: KeyMap<T, P>;
  /**
   * What the store does with an object its key map attributes to no parent (`undefined`, `[]`, or a
   * failure):
   * - `'evict'` (the default): it is not cached; if it was, it is evicted and the parents it left are
   *   re-driven. For a store read by parent alone (a pod tracker's pods by pool label), where an
   *   object without a parent would otherwise be served under the parent it left, forever.
   * - `'keep'`: it is cached without a parent: `get`, `keys`, `list` and the indexes find it, no
   *   member set holds it. For an owned kind's object without an owner reference, or a watched object
   *   no parent selects yet.
   */
  unmapped?: 'evict' | 'keep' | undefined;
  /**
   * `true` when the key map's answer can change for an unchanged object because it reads state
   * beyond the object (other stores: pods → the Services selecting them). The store then runs it
   * once the store holds the event, and again on the object an update or a delete replaces, and
   * re-drives those parents too, as controller-runtime's `EnqueueRequestsFromMapFunc` maps the old
   * and the new object at event time: the parents recorded at the last upsert may no longer be the
   * ones the old object concerns. Default `false`: the key map reads the object alone, runs once per
   * object per event, and the recorded parents are its answer on the old object.
   */
  remap?: boolean | undefined;
  /**
   * Whether an event is worth re-driving its parents (controller-runtime's predicates), asked with
   * the object it replaces (`undefined` for a create) and the new one (`undefined` for a delete,
   * a relist's synthesised ones too) once the store holds the event. Asked for every create and
   * delete, and for an update whose parents stay the same; `false` leaves the store written and
   * returns none of that object's parents. Never asked for a change of parents (a filter may skip a
   * no-op, never hide a change of membership) nor for a release. A throw admits, logged at error.
   * Default: every event is admitted.
   */
  admit?: ((previous: T | undefined, next: T | undefined, key: ObjectKey) => boolean) | undefined;
  /** Names the store's source in its log entries (`source`). Default: none. */
  name?: string | undefined;
  /** Receives one {@link UnmappableObjectError} per key map failure. Defaults to {@link silentLogger}. */
  logger?: Logger | undefined;
  /**
   * User-defined indexes (client-go's `Indexers`): index functions by name, maintained on every
   * write and queried with `byIndex(name, value)`. Default: none.
   */
  indexers?: Indexers<T> | undefined;
}

/**
 * Where an object is attributed: one parent as the key itself (no array on the common path: a
 * pod tracker's or a custom resource's store pays one map entry per object, nothing more), several
 * as a frozen array of two or more distinct keys, none as the shared empty array {@link NONE}.
 */
type Attribution<P> = P | readonly P[];

/**
 * A cache of objects by object key with a parent index built by a key map: client-go's `Store`
 * plus the `Replace()` half of `DeltaFIFO`, for every source of a controller (the primary kind, one
 * parent per object, and owned or watched kinds, one or several). Source events are applied as
 * values; each returns the parent keys it affects, for the caller to enqueue after `apply` returns
 * (cache before notify).
 *
 * Single-threaded by construction: `apply` is synchronous, so no reader sees a half-applied event.
 * The store never mutates, copies or freezes the objects it is given; it replaces them on upsert.
 */
export class ObjectStore<T, P extends Key> implements StoreReader<T, P> {
  // Invariant, kept by #place and #remove (the general writers) and by the short paths of the
  // one-parent case (#upsertOne, #delete's first branch), which do the same writes for one parent:
  //   k is cached ⇔ #parentsOf.has(k);
  //   p ∈ parents(#parentsOf.get(k)) ⇔ #members.get(p).has(k), and then it holds k's object;
  //   #parentsOf.get(k) is NONE ⇔ #unparented.has(k), which then holds k's object;
  //   no member map is empty, so #members.keys() is exactly the parents with members.
  // No third map of objects by key: an object is found through its first parent (or #unparented),
  // two lookups instead of one, which saves a map entry per cached object (BENCHMARKS.md, heap per
  // pod). #parentsOf's insertion order is the store's key order; an upsert keeps a key's place.
  // The attribution is the key map's result at upsert time, never recomputed for removal: a delete
  // reaches the parents the object was cached under, whatever the key map would say now (a deleted
  // parent's owned objects still map to it).
  readonly #parentsOf = new Map<ObjectKey, Attribution<P>>();
  readonly #members = new Map<P, Map<ObjectKey, T>>();
  readonly #unparented = new Map<ObjectKey, T>();
  /**
   * The key map failures of the event being applied, logged once it is applied; created on the first
   * failure, so an event that maps cleanly allocates no list.
   */
  #failures: Failure[] | undefined;
  readonly #keyMap: KeyMap<T, P>;
  readonly #keep: boolean;
  readonly #remap: boolean;
  readonly #admit: ObjectStoreOptions<T, P>['admit'];
  /** `{ source: name }` for the log entries, or nothing without a name. */
  readonly #source: { readonly source?: string };
  readonly #logger: Logger;
  /** Kept by #place and #remove with the object each replaced; skipped when none is declared (no cost per write). */
  readonly #indexes: StoreIndexes<T>;
  /**
   * Whether a write needs the object it replaces: only `remap`, `admit` and declared indexes read it,
   * all fixed at construction. Without them (a primary's store) a write skips the lookup through the
   * object's first parent: two map reads on a write that is otherwise about five (BENCHMARKS.md (24s)).
   */
  readonly #readsPrevious: boolean;
  /**
   * This store's read-only view ({@link readerOf}): what a reconcile and a key map get, so they
   * cannot reach `apply`. One per store, built with it; it reads the current state.
   */
  readonly reader: StoreReader<T, P> = readerOf<T, P>(this);

  /**
   * @throws {OptionsError} when `keyMap` or `admit` is not a function, `unmapped` is not `'evict'`
   *   or `'keep'`, or `indexers` is not an object of functions.
   */
  constructor(options: ObjectStoreOptions<T, P>) {
    if (typeof options?.keyMap !== 'function') throw new OptionsError('ObjectStore', 'keyMap must be a function');
    const { unmapped = 'evict', admit } = options;
    if (unmapped !== 'evict' && unmapped !== 'keep')
      throw new OptionsError('ObjectStore', `unmapped must be 'evict' or 'keep', got ${String(unmapped)}`);
    if (admit !== undefined && typeof admit !== 'function') throw new OptionsError('ObjectStore', 'admit must be a function');
    this.#keyMap = options.keyMap;
    this.#keep = unmapped === 'keep';
    this.#remap = options.remap === true;
    this.#admit = admit;
    this.#source = options.name === undefined ? {} : { source: options.name };
    this.#logger = options.logger ?? silentLogger;
    this.#indexes = new StoreIndexes<T>({
      owner: 'ObjectStore',
      indexers: options.indexers ?? {},
      objectOf: (key) => this.get(key),
      logger: this.#logger,
    });
    this.#readsPrevious = this.#remap || admit !== undefined || this.#indexes.size > 0;
  }

  /**
   * Applies one source event and returns every parent key it re-drives:
   * - upsert: the object's parents (also when nothing changed: level-triggered, resync relies on
   *   it), plus the parents it left when the key map now gives others (and, with `remap`, the key
   *   map's answer now on the object it replaced);
   * - delete: the parents it was cached under (with `remap`, plus the key map's answer now on the
   *   last known object); nothing for an unknown key;
   * - replace: every parent of the world's objects (old and new for moved ones), then the parents
   *   of cached objects missing from the world, which get a synthesised delete;
   * - release: the parents of the cached objects `retain` rejected, now removed: released, not
   *   changed (the caller forgets them instead of reconciling them).
   * A create, a delete or an unmoved update `admit` refuses re-drives none of them. An object the key
   * map gives no parent follows `unmapped`; a key map failure is logged as an {@link UnmappableObjectError}.
   *
   * @throws {InvalidSourceEventError} for a value that is not a source event (store unchanged).
   */
  apply(event: SourceEvent<T>): ReadonlySet<P> {
    const affected = new Set<P>();
    // Left by an earlier apply that threw (a throwing logger): they belonged to that event.
    this.#failures = undefined;
    switch ((event as { type?: unknown } | null)?.type) {
      case 'upsert': {
        const { key, object } = event as UpsertEvent<T>;
        assertObjectKey(event, key);
        this.#upsert(key, object, affected);
        break;
      }
      case 'delete': {
        const { key } = event as DeleteEvent;
        assertObjectKey(event, key);
        this.#delete(key, affected);
        break;
      }
      case 'replace':
        this.#replace(event as ReplaceEvent<T>, affected);
        break;
      case 'release':
        this.#release(event as ReleaseEvent<T>, affected);
        break;
      default:
        throw new InvalidSourceEventError(event, `type must be 'upsert', 'delete', 'replace' or 'release'`);
    }
    // Logged after the store is consistent, so a throwing logger cannot leave it half-applied.
    const failures = this.#failures as Failure[] | undefined; // written by #map, which TypeScript cannot see
    if (failures !== undefined) {
      this.#failures = undefined;
      for (const failure of failures) this.#log(failure);
    }
    return affected;
  }

  /** The cached object under `key`, or `undefined`. */
  get(key: ObjectKey): T | undefined {
    const at = this.#parentsOf.get(key);
    // A parent key is never undefined (isParentKey), so undefined means "not cached".
    return at === undefined ? undefined : this.#objectAt(key, at);
  }

  /** Whether an object is cached under `key`. */
  has(key: ObjectKey): boolean {
    return this.#parentsOf.has(key);
  }

  /**
   * Whether an upsert of `object` under `key` would be cached now: the store keeps unmapped objects,
   * or its key map gives the object at least one parent. Runs the key map (a throw or a value that
   * is not parent keys reads as no parent) and logs nothing; the store is unchanged. What a memory
   * budget asks before it refuses an object (object-store's `CacheMeter`): one the store would evict
   * anyway is not missing from the cache.
   */
  wouldCache(object: T, key: ObjectKey): boolean {
    if (this.#keep) return true;
    // The one reading of a key map's answer (#map); what it would log is dropped: a question, not an event.
    const failures = this.#failures;
    const parents = this.#map(object, key, 'new');
    this.#failures = failures;
    return parents !== NONE;
  }

  /** Number of cached objects (attributed to a parent or not). */
  get size(): number {
    return this.#parentsOf.size;
  }

  /** The parent keys recorded when `key` was last upserted: none, one or several; empty when not cached. */
  parentsOf(key: ObjectKey): readonly P[] {
    const at = this.#parentsOf.get(key);
    return at === undefined ? NONE : many(at) ? at : [at];
  }

  /** A copy of `parent`'s members, so a reconcile can hold it across `await`s; empty for an unknown parent. O(members). */
  members(parent: P): ReadonlyMap<ObjectKey, T> {
    const members = this.#members.get(parent);
    return members ? new Map(members) : new Map();
  }

  /** Parent keys with at least one member, in first-attribution order (what resync re-drives). */
  parents(): P[] {
    return [...this.#members.keys()];
  }

  /** Whether `parent` has at least one member. O(1). */
  hasMembers(parent: P): boolean {
    return this.#members.has(parent);
  }

  /** Object keys of every cached object (a fresh array). */
  keys(): ObjectKey[] {
    return [...this.#parentsOf.keys()];
  }

  /** A copy of the whole store. O(size). */
  snapshot(): ReadonlyMap<ObjectKey, T> {
    return this.list(ALL);
  }

  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, T> {
    return this.#indexes.byIndex(name, value);
  }

  indexKeys(name: string, value: string): ObjectKey[] {
    return this.#indexes.indexKeys(name, value);
  }

  indexValues(name: string): string[] {
    return this.#indexes.indexValues(name);
  }

  /** The cached objects `filter` accepts, in key order: one pass, no copy of the rest. O(size). */
  list(filter: (object: T, key: ObjectKey) => boolean): ReadonlyMap<ObjectKey, T> {
    const out = new Map<ObjectKey, T>();
    for (const [key, at] of this.#parentsOf) {
      const object = this.#objectAt(key, at);
      if (filter(object, key)) out.set(key, object);
    }
    return out;
  }

  #objectAt(key: ObjectKey, at: Attribution<P>): T {
    if (!many(at)) return this.#members.get(at)!.get(key)!;
    return (at.length === 0 ? this.#unparented : this.#members.get(at[0]!)!).get(key)!;
  }

  #replace(event: ReplaceEvent<T>, affected: Set<P>): void {
    const world = event.objects as ReadonlyMap<unknown, T> | undefined;
    if (
      world === null ||
      typeof world !== 'object' ||
      typeof world.has !== 'function' ||
      typeof world.keys !== 'function' ||
      typeof world[Symbol.iterator] !== 'function'
    ) {
      throw new InvalidSourceEventError(event, 'a replace event needs objects: ReadonlyMap<ObjectKey, T>');
    }
    // Validated before the first write, so a bad key leaves the store untouched.
    for (const key of world.keys()) assertObjectKey(event, key);
    const typedWorld = world as ReadonlyMap<ObjectKey, T>;
    for (const [key, object] of typedWorld) this.#upsert(key, object, affected);
    // Deletion synthesis: a cached object missing from the world was deleted while we were not
    // watching — unless the source keeps it (it exists, only its new version is unusable).
    // Deleting the current entry while iterating a Map is well-defined.
    const keep = event.keep;
    for (const key of this.#parentsOf.keys()) {
      if (!typedWorld.has(key) && keep?.has(key) !== true) this.#delete(key, affected);
    }
  }

  #release(event: ReleaseEvent<T>, affected: Set<P>): void {
    const retain = event.retain;
    if (typeof retain !== 'function')
      throw new InvalidSourceEventError(event, 'a release event needs retain: (object, key) => boolean');
    // Decided for every key before the first removal, so a throwing `retain` leaves the store
    // untouched. No `admit` judges a release: the parents returned are released, not changed.
    const released: ObjectKey[] = [];
    for (const [key, at] of this.#parentsOf) if (!retain(this.#objectAt(key, at), key)) released.push(key);
    for (const key of released) this.#remove(key, affected);
  }

  #upsert(key: ObjectKey, object: T, affected: Set<P>): void {
    const before = this.#parentsOf.get(key);
    // Without `remap` the key map reads the object alone, so it may run before the write.
    let after = this.#remap ? undefined : this.#map(object, key, 'new');
    if (after !== undefined && !many(after) && !many(before)) {
      this.#upsertOne(key, object, before as P | undefined, after, affected);
      return;
    }
    const previous = before === undefined || !this.#readsPrevious ? undefined : this.#objectAt(key, before);
    // Where the store holds `key` when the key map runs, and the object its indexes hold.
    let held = before;
    let indexed = previous;
    if (after === undefined) {
      // `remap`: the key map may read this store: it runs once the store holds the event (as
      // upstream's handlers run after the indexer update), the object still under the parents it had.
      held = before ?? NONE;
      indexed = object;
      this.#place(key, previous, object, before, held);
      after = this.#map(object, key, 'new');
    }
    // The old object's parents: with `remap` as the key map answers now, else those recorded.
    const oldNow = this.#remap && before !== undefined ? this.#map(previous as T, key, 'old') : before;
    if (after === NONE && !this.#keep) {
      // Evicted (or never cached): the parents it left are re-driven, unjudged (a change of membership).
      if (held !== undefined) this.#remove(key, affected);
      if (oldNow !== undefined) addAll(affected, oldNow);
      return;
    }
    this.#place(key, indexed, object, held, after);
    // A create is judged; an update only while its parents stay the same.
    const judged = before === undefined || (sameParents(before, after) && sameParents(oldNow!, after));
    if (judged && !this.#admits(previous, object, key)) return;
    if (before !== undefined) addAll(affected, before);
    if (oldNow !== undefined && oldNow !== before) addAll(affected, oldNow);
    addAll(affected, after);
  }

  /**
   * The short path of #upsert, the same writes and the same answer as the general one (the
   * one-store property test holds both to one model): no `remap`, one parent or none cached before
   * (`undefined`: not cached), one after. No array, no attribution to compare: a primary's store and
   * an owned object with one owner pay the map reads and writes of the old one-parent store
   * (BENCHMARKS.md (24s)).
   */
  #upsertOne(key: ObjectKey, object: T, before: P | undefined, after: P, affected: Set<P>): void {
    const previous = before === undefined || !this.#readsPrevious ? undefined : this.#members.get(before)!.get(key);
    if (this.#indexes.size > 0 && previous !== object) this.#indexes.update(key, previous, object);
    this.#parentsOf.set(key, after);
    let members = this.#members.get(after);
    if (members === undefined) this.#members.set(after, (members = new Map()));
    members.set(key, object);
    if (before !== undefined && !sameValueZero(before, after)) {
      // Moved: a change of membership, never judged by `admit`.
      this.#leave(before, key);
      affected.add(before);
    } else if (!this.#admits(previous, object, key)) {
      return;
    }
    // Unmoved, `before` is `after` (a Set compares as SameValueZero): one add re-drives it.
    affected.add(after);
  }

  /**
   * A delete (or a relist's synthesised one): the parents it was cached under, plus with `remap` the
   * key map's answer on the last known object now; none when `admit` refuses the last known object.
   */
  #delete(key: ObjectKey, affected: Set<P>): void {
    const at = this.#parentsOf.get(key);
    if (at === undefined) return;
    if (!this.#readsPrevious && !many(at)) {
      // The short path: no `admit`, `remap` or index to consult; one parent to leave.
      this.#parentsOf.delete(key);
      this.#leave(at, key);
      affected.add(at);
      return;
    }
    const last = this.#readsPrevious ? this.#objectAt(key, at) : undefined;
    if (!this.#admits(last, undefined, key)) {
      this.#remove(key, undefined, at);
      return;
    }
    this.#remove(key, affected, at);
    if (this.#remap) addAll(affected, this.#map(last as T, key, 'old'));
  }

  /**
   * Caches `object` under `after`, moving it from `before` (its attribution, `undefined` when it was
   * not cached); re-indexes when `object` is not `previous`. The one writer besides #remove.
   */
  #place(key: ObjectKey, previous: T | undefined, object: T, before: Attribution<P> | undefined, after: Attribution<P>): void {
    if (this.#indexes.size > 0 && previous !== object) this.#indexes.update(key, previous, object);
    this.#parentsOf.set(key, after);
    if (!many(after)) {
      this.#join(after, key, object);
    } else if (after.length === 0) {
      this.#unparented.set(key, object);
    } else {
      for (const parent of after) this.#join(parent, key, object);
    }
    if (before === undefined || before === after) return;
    // SameValueZero, the comparison the index Maps use, so NaN is one parent and not two.
    if (!many(before)) {
      if (!holds(after, before)) this.#leave(before, key);
    } else if (before.length === 0) {
      if (after !== NONE) this.#unparented.delete(key);
    } else {
      for (const parent of before) if (!holds(after, parent)) this.#leave(parent, key);
    }
  }

  /**
   * Removes `key` if cached and adds the parents it was cached under to `affected`; `at` is its
   * attribution when the caller has already read it (a delete: one map read, not two).
   */
  #remove(key: ObjectKey, affected: Set<P> | undefined, at = this.#parentsOf.get(key)): void {
    if (at === undefined) return;
    if (this.#indexes.size > 0) this.#indexes.update(key, this.#objectAt(key, at), undefined);
    this.#parentsOf.delete(key);
    if (!many(at)) this.#leave(at, key);
    else if (at.length === 0) this.#unparented.delete(key);
    else for (const parent of at) this.#leave(parent, key);
    if (affected !== undefined) addAll(affected, at);
  }

  #join(parent: P, key: ObjectKey, object: T): void {
    let members = this.#members.get(parent);
    if (members === undefined) this.#members.set(parent, (members = new Map()));
    members.set(key, object);
  }

  #leave(parent: P, key: ObjectKey): void {
    const members = this.#members.get(parent);
    if (!members) return;
    members.delete(key);
    if (members.size === 0) this.#members.delete(parent);
  }

  /**
   * Runs the key map once and normalises its answer: one parent as itself, several (repeats dropped)
   * as a frozen array, none as {@link NONE}. A failure, or no parent under `'evict'`, becomes a
   * pending {@link UnmappableObjectError}.
   */
  #map(object: T, key: ObjectKey, which: 'new' | 'old'): Attribution<P> {
    let result: unknown;
    try {
      result = this.#keyMap(object, key);
    } catch (cause) {
      this.#failed(new UnmappableObjectError(key, { cause }), which);
      return NONE;
    }
    if (isParentKey(result)) return result as P;
    if (result === undefined || (Array.isArray(result) && result.length === 0)) {
      if (!this.#keep && which === 'new') this.#failed(new UnmappableObjectError(key), which);
      return NONE;
    }
    const bad = Array.isArray(result) ? result.findIndex((parent) => !isParentKey(parent)) : -1;
    if (!Array.isArray(result) || bad !== -1) {
      const got = Array.isArray(result) ? `an array holding ${typeName(result[bad])} at ${bad}` : typeName(result);
      const cause = new TypeError(
        `key map returned ${got}; expected a parent key (string, number, bigint, boolean), an array of them, or undefined`,
      );
      this.#failed(new UnmappableObjectError(key, { cause }), which);
      return NONE;
    }
    const parents = result as readonly P[];
    if (parents.length === 1) return parents[0]!;
    const distinct: P[] = [];
    for (const parent of parents) if (!distinct.includes(parent)) distinct.push(parent);
    return distinct.length === 1 ? distinct[0]! : Object.freeze(distinct);
  }

  /** `admit`, or `true` without one; a throw admits (never lose a change), logged. */
  /** Keeps a key map failure of the event being applied, for `apply` to log once the store is consistent. */
  #failed(error: UnmappableObjectError, which: 'new' | 'old'): void {
    (this.#failures ??= []).push({ error, which });
  }

  #admits(previous: T | undefined, next: T | undefined, key: ObjectKey): boolean {
    if (this.#admit === undefined) return true;
    try {
      return this.#admit(previous, next, key) !== false;
    } catch (error) {
      this.#logger.error({ key, err: error, ...this.#source }, 'admit threw; the event is admitted');
      return true;
    }
  }

  #log({ error, which }: Failure): void {
    // A key map that failed is a bug in the caller's code; no parent is an object that does not (or
    // no longer does) carry what identifies its parent.
    const fields = { err: error, key: error.key, cause: error.cause, ...this.#source };
    const outcome =
      which === 'old'
        ? 'only the parents it was cached under are re-driven for the object it replaced'
        : this.#keep
          ? 'it is cached without a parent'
          : 'it is not cached';
    const message = `${error.message}; ${outcome}`;
    if ('cause' in error) this.#logger.error(fields, message);
    else this.#logger.warn(fields, message);
  }
}

/** A key map failure waiting to be logged; `old`: on the object an update or a delete replaced (`remap`). */
interface Failure {
  readonly error: UnmappableObjectError;
  readonly which: 'new' | 'old';
}

const NONE: readonly never[] = Object.freeze([]);
const ALL = (): boolean => true;

function many<P>(at: Attribution<P> | undefined): at is readonly P[] {
  return Array.isArray(at);
}

/** Whether `at` includes `parent` (SameValueZero, as `Map` keys and `Array.includes` compare). */
function holds<P>(at: Attribution<P>, parent: P): boolean {
  return many(at) ? at.includes(parent) : sameValueZero(at, parent);
}

function sameParents<P>(a: Attribution<P>, b: Attribution<P>): boolean {
  if (!many(a) || !many(b)) return many(a) === many(b) && sameValueZero(a, b);
  return a.length === b.length && a.every((parent) => b.includes(parent));
}

function addAll<P>(affected: Set<P>, at: Attribution<P>): void {
  if (!many(at)) affected.add(at);
  else for (const parent of at) affected.add(parent);
}

/** A {@link Key}, or NaN: the store indexes parents like `Map` keys (SameValueZero), where NaN is one parent. */
function isParentKey(value: unknown): value is Key {
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean';
}

function sameValueZero(a: unknown, b: unknown): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

function assertObjectKey(event: unknown, key: unknown): asserts key is ObjectKey {
  if (typeof key !== 'string') {
    throw new InvalidSourceEventError(event, `object keys must be strings; got ${key === null ? 'null' : typeof key}`);
  }
}

function typeName(value: unknown): string {
  return value === null ? 'null' : typeof value;
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  try {
    return String(cause);
  } catch {
    return typeof cause;
  }
}
