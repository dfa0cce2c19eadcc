import type { ObjectKey, SourceEvent, UpsertEvent, DeleteEvent, ReplaceEvent, ReleaseEvent } from './events.js';
import { StoreIndexes, type Indexers } from './indexes.js';
import { readerOf, type StoreReader } from './reader.js';
import { OptionsError, ReconcileLoopError, silentLogger, type Logger, type Key } from '@reconcile-loop/primitives';

/**
 * Maps a cached object to the parent key whose reconcile owns it (controller-runtime's
 * `EnqueueRequestForOwner`, but from whatever the object carries, e.g. labels).
 *
 * Returns `undefined` when the object cannot be attributed. A key map that throws, or returns
 * anything but a parent key (string, number, bigint, boolean), also counts as "cannot map".
 * It is called exactly once per object per event, so it may be costly but should be pure.
 */
export type KeyMap<T, P extends Key> = (object: T, key: ObjectKey) => P | undefined;

/**
 * Logged (never thrown into the stream) when the key map cannot attribute an object. The object is
 * not stored; if it was cached it is evicted and the parent it left is re-driven.
 */
export class UnmappableObjectError extends ReconcileLoopError {
  readonly code = 'RL_STORE_UNMAPPABLE_OBJECT' as const;
  /** The object key the key map could not attribute. */
  readonly key: ObjectKey;
  /**
   * @param key the object key.
   * @param options `cause` is what the key map threw (or a `TypeError` for a value that is not a
   *   parent key); absent when it returned `undefined`.
   */
  constructor(key: ObjectKey, options?: { cause?: unknown }) {
    super(
      `object ${JSON.stringify(key)} cannot be mapped to a parent key: ${
        options && 'cause' in options ? `key map failed: ${describeCause(options.cause)}` : 'key map returned undefined'
      }; it is not cached`,
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
  /** Attributes each object to its parent key; see {@link KeyMap}. */
  keyMap: KeyMap<T, P>;
  /** Receives one {@link UnmappableObjectError} per unmappable object. Defaults to {@link silentLogger}. */
  logger?: Logger | undefined;
  /**
   * User-defined indexes (client-go's `Indexers`): index functions by name, maintained on every
   * write and queried with `byIndex(name, value)`. Default: none.
   */
  indexers?: Indexers<T> | undefined;
}

/**
 * A cache of objects by object key with a parent index built by a key map: client-go's `Store`
 * plus the `Replace()` half of `DeltaFIFO`. Source events are applied as values; each returns
 * the parent keys it affects, for the caller to enqueue after `apply` returns (cache before notify).
 *
 * Single-threaded by construction: `apply` is synchronous, so no reader sees a half-applied event.
 * The store never mutates, copies or freezes the objects it is given; it replaces them on upsert.
 */
export class ObjectStore<T, P extends Key> implements StoreReader<T, P> {
  // Invariant, kept by #put and #remove (the only writers):
  //   k is cached ⇔ #parentOf.has(k), and then its object is #members.get(#parentOf.get(k)).get(k);
  //   #members.get(p).has(k) ⇒ #parentOf.get(k) === p;
  //   no member map is empty, so #members.keys() is exactly the parents with members.
  // One map per key plus the member maps, and no third map of objects by key: an object is found
  // through its parent (two lookups instead of one), which saves a map entry per cached object
  // (BENCHMARKS.md, heap per pod). #parentOf's insertion order is the store's key order.
  // The parent index is the key map's result at upsert time, never recomputed: deleting or moving
  // an object uses the parent it was cached under, whatever the key map would say now.
  readonly #parentOf = new Map<ObjectKey, P>();
  readonly #members = new Map<P, Map<ObjectKey, T>>();
  readonly #keyMap: KeyMap<T, P>;
  readonly #logger: Logger;
  /** Kept by #put and #remove with the object each replaced; skipped when none is declared (no cost per write). */
  readonly #indexes: StoreIndexes<T>;
  /**
   * This store's read-only view ({@link readerOf}): what a reconcile and a key map get, so they
   * cannot reach `apply`. One per store, built with it; it reads the current state.
   */
  readonly reader: StoreReader<T, P> = readerOf<T, P>(this);

  /** @throws {OptionsError} when `keyMap` is not a function or `indexers` is not an object of functions. */
  constructor(options: ObjectStoreOptions<T, P>) {
    if (typeof options?.keyMap !== 'function') throw new OptionsError('ObjectStore', 'keyMap must be a function');
    this.#keyMap = options.keyMap;
    this.#logger = options.logger ?? silentLogger;
    this.#indexes = new StoreIndexes<T>({
      owner: 'ObjectStore',
      indexers: options.indexers ?? {},
      objectOf: (key) => this.get(key),
      logger: this.#logger,
    });
  }

  /**
   * Applies one source event and returns every parent key whose member set it may have changed:
   * - upsert: the object's parent (also when nothing changed: level-triggered, resync relies on
   *   it), plus the parent it left when the key map now gives another one;
   * - delete: the parent it was cached under; nothing for an unknown key;
   * - replace: every parent of the world's objects (old and new for moved ones), then the parents
   *   of cached objects missing from the world, which get a synthesised delete;
   * - release: the parents of the cached objects `retain` rejected, now removed: released, not
   *   changed (the caller forgets them instead of reconciling them).
   * An object the key map cannot map is not stored (evicted if cached, its old parent returned)
   * and an {@link UnmappableObjectError} is logged.
   *
   * @throws {InvalidSourceEventError} for a value that is not a source event (store unchanged).
   */
  apply(event: SourceEvent<T>): ReadonlySet<P> {
    const affected = new Set<P>();
    const failures: UnmappableObjectError[] = [];
    switch ((event as { type?: unknown } | null)?.type) {
      case 'upsert': {
        const { key, object } = event as UpsertEvent<T>;
        assertObjectKey(event, key);
        this.#upsert(key, object, affected, failures);
        break;
      }
      case 'delete': {
        const { key } = event as DeleteEvent;
        assertObjectKey(event, key);
        this.#remove(key, affected);
        break;
      }
      case 'replace':
        this.#replace(event as ReplaceEvent<T>, affected, failures);
        break;
      case 'release':
        this.#release(event as ReleaseEvent<T>, affected);
        break;
      default:
        throw new InvalidSourceEventError(event, `type must be 'upsert', 'delete', 'replace' or 'release'`);
    }
    // Logged after the store is consistent, so a throwing logger cannot leave it half-applied.
    for (const error of failures) this.#logUnmappable(error);
    return affected;
  }

  /** The cached object under `key`, or `undefined`. */
  get(key: ObjectKey): T | undefined {
    const parent = this.#parentOf.get(key);
    // A parent key is never undefined (isParentKey), so undefined means "not cached".
    return parent === undefined ? undefined : this.#members.get(parent)?.get(key);
  }

  /** Whether an object is cached under `key`. */
  has(key: ObjectKey): boolean {
    return this.#parentOf.has(key);
  }

  /** Number of cached objects. */
  get size(): number {
    return this.#parentOf.size;
  }

  /** The parent key recorded when `key` was last upserted, or `undefined` when not cached. */
  parentOf(key: ObjectKey): P | undefined {
    return this.#parentOf.get(key);
  }

  /** `[parentOf(key)]`, or empty when not cached: the {@link StoreReader} form (one parent per object here). */
  parentsOf(key: ObjectKey): readonly P[] {
    return this.#parentOf.has(key) ? [this.#parentOf.get(key) as P] : NONE;
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
    return [...this.#parentOf.keys()];
  }

  /** A copy of the whole store. O(size). */
  snapshot(): ReadonlyMap<ObjectKey, T> {
    const snapshot = new Map<ObjectKey, T>();
    for (const [key, parent] of this.#parentOf) snapshot.set(key, this.#members.get(parent)!.get(key)!);
    return snapshot;
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
    for (const [key, parent] of this.#parentOf) {
      const object = this.#members.get(parent)!.get(key)!;
      if (filter(object, key)) out.set(key, object);
    }
    return out;
  }

  #replace(event: ReplaceEvent<T>, affected: Set<P>, failures: UnmappableObjectError[]): void {
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
    for (const [key, object] of typedWorld) this.#upsert(key, object, affected, failures);
    // Deletion synthesis: a cached object missing from the world was deleted while we were not
    // watching — unless the source keeps it (it exists, only its new version is unusable).
    // Deleting the current entry while iterating a Map is well-defined.
    const keep = event.keep;
    for (const key of this.#parentOf.keys()) {
      if (!typedWorld.has(key) && keep?.has(key) !== true) this.#remove(key, affected);
    }
  }

  #release(event: ReleaseEvent<T>, affected: Set<P>): void {
    const retain = event.retain;
    if (typeof retain !== 'function')
      throw new InvalidSourceEventError(event, 'a release event needs retain: (object, key) => boolean');
    // Decided for every key before the first removal, so a throwing `retain` leaves the store untouched.
    const released: ObjectKey[] = [];
    for (const [key, parent] of this.#parentOf) if (!retain(this.#members.get(parent)!.get(key)!, key)) released.push(key);
    for (const key of released) this.#remove(key, affected);
  }

  #upsert(key: ObjectKey, object: T, affected: Set<P>, failures: UnmappableObjectError[]): void {
    const parent = this.#attribute(object, key, failures);
    if (parent === UNMAPPABLE) {
      this.#remove(key, affected);
      return;
    }
    const previous = this.#put(key, object, parent);
    if (previous !== undefined) affected.add(previous);
    affected.add(parent);
  }

  /** Runs the key map once; any failure becomes a pending {@link UnmappableObjectError}. */
  #attribute(object: T, key: ObjectKey, failures: UnmappableObjectError[]): P | typeof UNMAPPABLE {
    let parent: unknown;
    try {
      parent = this.#keyMap(object, key);
    } catch (cause) {
      failures.push(new UnmappableObjectError(key, { cause }));
      return UNMAPPABLE;
    }
    if (parent === undefined) {
      failures.push(new UnmappableObjectError(key));
      return UNMAPPABLE;
    }
    if (!isParentKey(parent)) {
      const cause = new TypeError(
        `key map returned ${parent === null ? 'null' : typeof parent}; expected a string, number, bigint, boolean or undefined`,
      );
      failures.push(new UnmappableObjectError(key, { cause }));
      return UNMAPPABLE;
    }
    return parent as P;
  }

  /** Caches `object` under `parent`; returns the parent it moved away from, if it moved. */
  #put(key: ObjectKey, object: T, parent: P): P | undefined {
    const previous = this.#parentOf.get(key);
    if (this.#indexes.size > 0) this.#indexes.update(key, this.get(key), object);
    this.#parentOf.set(key, parent);
    let members = this.#members.get(parent);
    if (!members) {
      members = new Map();
      this.#members.set(parent, members);
    }
    members.set(key, object);
    // SameValueZero, the comparison the index Maps use, so NaN is one parent and not two.
    if (previous === undefined || sameValueZero(previous, parent)) return undefined;
    this.#leave(previous, key);
    return previous;
  }

  /** Removes `key` if cached and adds the parent it was cached under to `affected`. */
  #remove(key: ObjectKey, affected: Set<P>): void {
    if (!this.#parentOf.has(key)) return;
    const parent = this.#parentOf.get(key) as P;
    if (this.#indexes.size > 0) this.#indexes.update(key, this.get(key), undefined);
    this.#parentOf.delete(key);
    this.#leave(parent, key);
    affected.add(parent);
  }

  #leave(parent: P, key: ObjectKey): void {
    const members = this.#members.get(parent);
    if (!members) return;
    members.delete(key);
    if (members.size === 0) this.#members.delete(parent);
  }

  #logUnmappable(error: UnmappableObjectError): void {
    // A key map that threw is a bug in the caller's code; `undefined` is an object that does not
    // (or no longer does) carry what identifies its parent.
    const fields = { err: error, key: error.key, cause: error.cause };
    if ('cause' in error) this.#logger.error(fields, error.message);
    else this.#logger.warn(fields, error.message);
  }
}

const NONE: readonly never[] = Object.freeze([]);
const UNMAPPABLE: unique symbol = Symbol('unmappable');

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

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  try {
    return String(cause);
  } catch {
    return typeof cause;
  }
}
