/**
 * User-defined indexes over a store (client-go's `Indexers` / `ByIndex`, controller-runtime's
 * `IndexField` + `MatchingFields`): each index is a function from an object to the string values it
 * is found under, maintained incrementally on every write, so a query costs O(matches), not a scan
 * or a copy of the store. Generic: the store knows no Kubernetes; a label or field index is an
 * index function the caller writes (e.g. `(pod) => [pod.spec.nodeName]`).
 */
import { OptionsError, ReconcileLoopError, silentLogger, type Logger } from '@reconcile-loop/primitives';
import type { ObjectKey } from './events.js';

/**
 * The values one object is indexed under (client-go's `IndexFunc`): none (`undefined` or `[]`),
 * one, or several (a label index may give one value per label). Must be a pure function of the
 * object: the old values of an update or a delete are computed again from the object being
 * replaced, as client-go does, instead of being stored per object. A throw indexes the object under
 * no value of that index (logged); the object is still cached.
 */
export type IndexFunc<T> = (object: T, key: ObjectKey) => string | readonly string[] | undefined;

/** Index functions by index name (client-go's `Indexers`). */
export type Indexers<T> = Readonly<Record<string, IndexFunc<T>>>;

/**
 * Read access to a store's indexes. Collections are snapshots of the matches only (O(matches));
 * objects are shared, never mutate them.
 */
export interface IndexReader<T> {
  /**
   * The objects indexed under `value` in index `name` (client-go's `ByIndex`; controller-runtime's
   * `List` with `MatchingFields`), in first-indexed order; empty when none is.
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, T>;
  /**
   * Object keys indexed under `value` in index `name` (client-go's `IndexKeys`).
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  indexKeys(name: string, value: string): ObjectKey[];
  /**
   * The values index `name` holds at least one object under (client-go's `ListIndexFuncValues`).
   *
   * @throws {UnknownIndexError} for an index that was not declared.
   */
  indexValues(name: string): string[];
  /**
   * The cached objects `filter` accepts, e.g. a label-selector matcher (controller-runtime's `List`
   * with `MatchingLabels` on an unindexed cache): one pass over the store, no copy of the rest.
   * Prefer an index on a hot path with a large store.
   */
  list(filter: (object: T, key: ObjectKey) => boolean): ReadonlyMap<ObjectKey, T>;
}

/** Thrown by an index query naming an index the store was not built with (client-go: "Index with name … does not exist"). */
export class UnknownIndexError extends ReconcileLoopError {
  readonly code = 'RL_STORE_UNKNOWN_INDEX' as const;
  /** The index name asked for. */
  readonly index: string;
  constructor(index: string, known: readonly string[]) {
    super(`no index named ${JSON.stringify(index)} (declared: ${known.length === 0 ? 'none' : known.join(', ')})`);
    this.index = index;
  }
}

const NONE: readonly string[] = Object.freeze([]);
const NO_KEYS: ReadonlySet<never> = new Set();

/** Options of {@link StoreIndexes}. */
export interface StoreIndexesOptions<T> {
  /** The class an {@link OptionsError} names (the store being built). */
  owner: string;
  indexers: Indexers<T>;
  /** The store's current object under a key it indexes: what `byIndex` answers with. */
  objectOf: (key: ObjectKey) => T | undefined;
  /** Receives the failures of index functions. Default: silent. */
  logger?: Logger | undefined;
  /** The option's path in its owner's options, for an {@link OptionsError}. Default `indexers`. */
  path?: string | undefined;
}

/**
 * The indexes of one store. The store calls {@link StoreIndexes.update} once per write with the
 * object it replaced (or `undefined`) and the new one (or `undefined` for a delete).
 *
 * Invariant (per index): `#values.get(name).get(v).has(k)` ⇔ k is cached and `v ∈ func(object(k))`;
 * no key set is empty, so `indexValues` is exactly the values with objects. The sets hold keys, not
 * objects, and `byIndex` reads each match from the store: an update that keeps an object's values
 * (a kubelet status write under the same labels) writes nothing to the index.
 */
export class StoreIndexes<T> {
  readonly #funcs: ReadonlyArray<readonly [string, IndexFunc<T>]>;
  readonly #values = new Map<string, Map<string, Set<ObjectKey>>>();
  readonly #objectOf: (key: ObjectKey) => T | undefined;
  readonly #logger: Logger;

  /** @throws {OptionsError} when `indexers` is not an object of functions. */
  constructor(options: StoreIndexesOptions<T>) {
    const { owner, indexers, path = 'indexers' } = options;
    if (indexers === null || typeof indexers !== 'object' || Array.isArray(indexers))
      throw new OptionsError(owner, `${path} must be an object of index functions by name`);
    const funcs: Array<readonly [string, IndexFunc<T>]> = [];
    for (const [name, func] of Object.entries(indexers)) {
      if (typeof func !== 'function') throw new OptionsError(owner, `${path}.${name} must be a function`);
      funcs.push([name, func]);
      this.#values.set(name, new Map());
    }
    this.#funcs = funcs;
    this.#objectOf = options.objectOf;
    this.#logger = options.logger ?? silentLogger;
  }

  /** How many indexes are declared (the stores skip {@link update} when none is). */
  get size(): number {
    return this.#funcs.length;
  }

  /** Moves `key` from the values of `previous` to those of `next` in every index. O(values) per index. */
  update(key: ObjectKey, previous: T | undefined, next: T | undefined): void {
    for (const [name, func] of this.#funcs) {
      const byValue = this.#values.get(name)!;
      const before = previous === undefined ? NONE : this.#run(name, func, previous, key);
      const after = next === undefined ? NONE : this.#run(name, func, next, key);
      for (const value of before) {
        if (after.includes(value)) continue;
        const keys = byValue.get(value);
        if (keys === undefined) continue;
        keys.delete(key);
        if (keys.size === 0) byValue.delete(value);
      }
      for (const value of after) {
        if (before.includes(value)) continue;
        let keys = byValue.get(value);
        if (keys === undefined) byValue.set(value, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  byIndex(name: string, value: string): ReadonlyMap<ObjectKey, T> {
    const out = new Map<ObjectKey, T>();
    for (const key of this.#index(name).get(value) ?? NO_KEYS) out.set(key, this.#objectOf(key) as T);
    return out;
  }

  indexKeys(name: string, value: string): ObjectKey[] {
    return [...(this.#index(name).get(value) ?? NO_KEYS)];
  }

  indexValues(name: string): string[] {
    return [...this.#index(name).keys()];
  }

  #index(name: string): Map<string, Set<ObjectKey>> {
    const index = this.#values.get(name);
    if (index === undefined)
      throw new UnknownIndexError(
        name,
        this.#funcs.map(([n]) => n),
      );
    return index;
  }

  /** The function's values: its own array when it is clean (strings, no repeats), else a cleaned copy. */
  #run(name: string, func: IndexFunc<T>, object: T, key: ObjectKey): readonly string[] {
    let result: unknown;
    try {
      result = func(object, key);
    } catch (error) {
      this.#logger.error({ index: name, objectKey: key, err: error }, 'index function threw; object not indexed under it');
      return NONE;
    }
    if (result === undefined) return NONE;
    if (typeof result === 'string') return [result];
    if (!Array.isArray(result)) {
      this.#logger.error(
        { index: name, objectKey: key, got: typeof result },
        'index function returned neither strings nor undefined',
      );
      return NONE;
    }
    const list = result as unknown[];
    let clean = true;
    for (let i = 0; i < list.length && clean; i++) clean = typeof list[i] === 'string' && list.indexOf(list[i]) === i;
    if (clean) return list as string[];
    const values: string[] = [];
    for (const value of list) if (typeof value === 'string' && !values.includes(value)) values.push(value);
    return values;
  }
}
