/**
 * What a store's objects cost, counted where they are held, and the optional memory budget that
 * refuses to grow past a limit instead of letting the process be OOM-killed (JOSDK bounds its cache;
 * client-go, controller-runtime and kube-rs do not).
 *
 * A {@link CacheMeter} sits in front of one {@link ObjectStore} as the writer its source's events go
 * through. It reads the object a write replaces from the store before the write and the object the
 * store holds after it, so the count is what the store holds, whatever its key map did (an evicted
 * object is not counted) and whoever else reads the same stream (each subscriber's store counts its
 * own entries). It keeps no state per key: the size an update or a delete subtracts is recomputed from
 * the object it replaces, one walk of that object (≈ 0.2 µs for a metadata view, 0.5 µs for a full
 * pod view, BENCHMARKS.md (28g)), where a size kept per key cost a map entry, ≈ 46 B, per object.
 *
 * Each object is counted as V8 lays it out on a 64-bit heap: a plain object 24 bytes plus 8 per
 * property, an array 32 + 16 + 8 per element, a string 16 + its length rounded up to 8 (two bytes per
 * character when it is not Latin-1), a number that is not a small integer (epoch-ms timestamps) a
 * 16-byte heap number, plus the store's entries for it (see {@link ENTRY_BYTES}) and its key string. A
 * frozen object or array is shared between objects (k8s-types shares equal label maps,
 * owner-reference lists and the empty map and list), so it costs the pointer only. Strings are counted
 * in full even when interned. Measured against the heap in BENCHMARKS.md, *Owned pods, metadata only*.
 */
import { OptionsError, silentLogger, type Key, type Logger } from '@reconcile-loop/primitives';
import { replaceEvent, type ObjectKey, type SourceEvent } from './events.js';
import type { ObjectStore } from './object-store.js';

/** What a store holds and what it costs, as a loop's `health().sources[name].cache` reports it. */
export interface CacheCost {
  /** Objects the store holds. */
  readonly objects: number;
  /** Estimated heap bytes those objects and their store entries hold (see {@link estimateBytes}). */
  readonly bytesEstimate: number;
  /** The memory budget, undefined without one. */
  readonly budgetBytes: number | undefined;
  /**
   * Objects that exist on the server but are not cached because the budget was full; 0 when the
   * cache is complete. Above 0 the cache is not a true view, and `reason` says why.
   */
  readonly refused: number;
  /** Why the cache is incomplete (set while `refused > 0`), one line. */
  readonly reason: string | undefined;
}

/** The share of the budget at which a warning is logged (once per crossing). */
export const MEMORY_BUDGET_WARN_FRACTION = 0.8;

const OBJECT_BYTES = 24;
const SLOT_BYTES = 8;
const ARRAY_BYTES = 48;
const STRING_BYTES = 16;
const HEAP_NUMBER_BYTES = 16;
/**
 * The store's two map entries for one object (key → parents, parent → members: object-store's
 * layout). A V8 ordered hash map entry is three pointers plus half a bucket, 28 B in a full table;
 * tables double when full, so they run between half and completely full: 37 B each at the 3/4 mean.
 */
const ENTRY_BYTES = 74;

const round8 = (n: number): number => (n + 7) & ~7;

function stringBytes(s: string): number {
  // One-byte (Latin-1) strings are the rule for Kubernetes JSON; a wider character doubles the string.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range tests for non-Latin-1 characters
  return STRING_BYTES + round8(/[^\u0000-\u00ff]/.test(s) ? s.length * 2 : s.length);
}

/** Estimated heap bytes of `value` and what it alone holds (shared frozen parts excluded). */
export function estimateBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return stringBytes(value);
    case 'number':
      return Number.isInteger(value) && Math.abs(value) < 2 ** 30 ? 0 : HEAP_NUMBER_BYTES;
    case 'object': {
      if (value === null || Object.isFrozen(value)) return 0;
      if (Array.isArray(value)) {
        let bytes = ARRAY_BYTES + value.length * SLOT_BYTES;
        for (const item of value) bytes += estimateBytes(item);
        return bytes;
      }
      let bytes = OBJECT_BYTES;
      for (const key in value) {
        bytes += SLOT_BYTES + estimateBytes((value as Record<string, unknown>)[key]);
      }
      return bytes;
    }
    default:
      return 0;
  }
}

/** The bytes one cached object costs: its view, its key string and its store entries; 0 for none. */
function entryBytes(key: ObjectKey, object: unknown): number {
  return object === undefined ? 0 : ENTRY_BYTES + stringBytes(key) + estimateBytes(object);
}

/** Options for {@link CacheMeter}. */
export interface CacheMeterOptions {
  /**
   * Estimated bytes the store may hold. At 80 % a warning is logged;
   * past it, an object whose key the store does not hold is not written (an update of a held object
   * always is: a stale object misleads a reconcile more than a full budget hurts), `cost().refused`
   * counts such objects and `cost().reason` says why. A refused object enters once it fits and
   * changes again, or at the next listing. Default: none.
   */
  budgetBytes?: number | undefined;
  /** Receives the budget's warning, error and recovery lines. Default: silent. */
  logger?: Logger | undefined;
  /** Names the store's source in those lines (`source`). Default: none. */
  name?: string | undefined;
}

/**
 * The writer in front of one store that counts what the store holds and enforces its memory
 * budget. Apply every event of the store's source through it (and nothing around it), then read
 * {@link cost}. Invariant after every `apply`: `cost().objects` is the store's size and
 * `cost().bytesEstimate` is the sum of the entries' estimates over what the store holds.
 */
export class CacheMeter<T, P extends Key> {
  readonly #store: ObjectStore<T, P>;
  readonly #budget: number | undefined;
  readonly #logger: Logger;
  readonly #source: { readonly source?: string };
  #bytes = 0;
  /** Keys that exist on the server but are not cached: the budget refused them. */
  #refused = new Set<ObjectKey>();
  #warned = false;
  #refusalLogged = false;

  /** @throws {OptionsError} when `budgetBytes` is given and is not a finite number above 0. */
  constructor(store: ObjectStore<T, P>, options: CacheMeterOptions = {}) {
    const budget = options.budgetBytes as unknown;
    if (budget !== undefined && (typeof budget !== 'number' || !Number.isFinite(budget) || budget <= 0))
      throw new OptionsError('CacheMeter', `budgetBytes must be a finite number > 0, got ${String(budget)}`);
    this.#store = store;
    this.#budget = options.budgetBytes;
    this.#logger = options.logger ?? silentLogger;
    this.#source = options.name === undefined ? {} : { source: options.name };
  }

  /** The snapshot a loop reports as a source's `cache`. */
  cost(): CacheCost {
    const refused = this.#refused.size;
    return {
      objects: this.#store.size,
      bytesEstimate: this.#bytes,
      budgetBytes: this.#budget,
      refused,
      reason:
        refused === 0
          ? undefined
          : `memory budget of ${String(this.#budget)} bytes full (${this.#bytes} held): ${refused} objects not cached`,
    };
  }

  /**
   * Applies `event` to the store (the store's own `apply`, whose parents it returns) and counts the
   * difference. With a budget, a new key that does not fit is not written and returns no parents; a
   * listing is cut at the budget before the store sees it.
   *
   * @throws {InvalidSourceEventError} as the store's `apply` does (nothing counted).
   */
  apply(event: SourceEvent<T>): ReadonlySet<P> {
    const store = this.#store;
    switch ((event as { type?: unknown } | null)?.type) {
      case 'upsert': {
        const { key, object } = event as Extract<SourceEvent<T>, { type: 'upsert' }>;
        const before = store.get(key);
        // A new key under a budget is walked once, here, and the size kept for the count below.
        const size = before === undefined && this.#budget !== undefined ? entryBytes(key, object) : undefined;
        // Refused only if the store would hold it: an object its key map evicts is not missing.
        if (size !== undefined && this.#bytes + size > this.#budget! && store.wouldCache(object, key)) {
          this.#refused.add(key);
          this.#checked();
          return new Set<P>();
        }
        const affected = store.apply(event);
        this.#refused.delete(key);
        // The store holds the object it is given, never a copy, unless its key map evicted it.
        if (!store.has(key)) this.#bytes -= entryBytes(key, before);
        else if (object !== before) this.#bytes += (size ?? entryBytes(key, object)) - entryBytes(key, before);
        this.#checked();
        return affected;
      }
      case 'delete': {
        const { key } = event as Extract<SourceEvent<T>, { type: 'delete' }>;
        const before = store.get(key);
        const affected = store.apply(event);
        const wasRefused = this.#refused.delete(key);
        // A delete always removes the key (a filter that refuses it only skips the re-drive).
        this.#bytes -= entryBytes(key, before);
        if (wasRefused || before !== undefined) this.#checked();
        return affected;
      }
      case 'replace': {
        const listing = event as Extract<SourceEvent<T>, { type: 'replace' }>;
        const affected = store.apply(this.#budget === undefined ? listing : this.#cut(listing));
        this.#recount();
        return affected;
      }
      default: {
        // A release (or a value that is not an event: the store throws before changing anything).
        const affected = store.apply(event);
        this.#recount();
        return affected;
      }
    }
  }

  /**
   * A listing under a budget: the objects `keep` names that the store holds count first (their last
   * good version stays), then the listing's objects the store would hold, in order, until the next
   * would not fit; the rest of those are refused. The event is rebuilt only when something is cut.
   */
  #cut(listing: Extract<SourceEvent<T>, { type: 'replace' }>): SourceEvent<T> {
    const budget = this.#budget!;
    let bytes = 0;
    for (const key of listing.keep ?? []) bytes += entryBytes(key, this.#store.get(key));
    this.#refused = new Set();
    let fitting: Map<ObjectKey, T> | undefined;
    for (const [key, object] of listing.objects) {
      // An object the store would evict costs nothing and is never refused.
      if (!this.#store.wouldCache(object, key)) continue;
      const size = entryBytes(key, object);
      if (bytes + size > budget) {
        fitting ??= new Map(listing.objects);
        fitting.delete(key);
        this.#refused.add(key);
        continue;
      }
      bytes += size;
    }
    return fitting === undefined ? listing : replaceEvent(fitting, listing.keep);
  }

  /**
   * After a listing or a release: the sum over everything the store holds, each object walked once
   * (as a listing's objects were walked when they were counted one by one). Through `keys()`, an
   * array of the keys (8 B each), not `snapshot()`, a map of every entry (≈ 46 B each at the peak).
   */
  #recount(): void {
    let bytes = 0;
    const store = this.#store;
    for (const key of store.keys()) bytes += entryBytes(key, store.get(key));
    this.#bytes = bytes;
    this.#checked();
  }

  /** Logs the budget's crossings: a warning at {@link MEMORY_BUDGET_WARN_FRACTION}, an error once refusals start. */
  #checked(): void {
    const budget = this.#budget;
    if (budget === undefined) return;
    const warnAt = budget * MEMORY_BUDGET_WARN_FRACTION;
    const objects = this.#store.size;
    if (this.#bytes >= warnAt && !this.#warned) {
      this.#warned = true;
      this.#logger.warn(
        { ...this.#source, bytesEstimate: this.#bytes, budgetBytes: budget, objects },
        `cache at ${Math.round((this.#bytes / budget) * 100)}% of its memory budget`,
      );
    } else if (this.#bytes < warnAt) this.#warned = false;
    if (this.#refused.size > 0 && !this.#refusalLogged) {
      this.#refusalLogged = true;
      this.#logger.error(
        { ...this.#source, bytesEstimate: this.#bytes, budgetBytes: budget, refused: this.#refused.size },
        'memory budget full: new objects are not cached (health is red until the cache fits again)',
      );
    } else if (this.#refused.size === 0 && this.#refusalLogged) {
      this.#refusalLogged = false;
      this.#logger.info(
        { ...this.#source, bytesEstimate: this.#bytes, budgetBytes: budget },
        'cache fits its memory budget again',
      );
    }
  }
}
