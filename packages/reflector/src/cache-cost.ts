/**
 * What a reflector's objects cost the consumer's store, counted as the reflector hands them on, and
 * the optional memory budget that refuses to grow past a limit instead of letting the process be
 * OOM-killed (JOSDK bounds its cache; client-go, controller-runtime and kube-rs do not).
 *
 * The estimate is a walk over each object's view when it is handed on (an upsert or a listing's
 * objects), kept as a running sum per key: applied on upsert, subtracted on delete, rebuilt by a
 * listing. Each object is counted as V8 lays it out on a 64-bit heap: a plain object 24 bytes plus
 * 8 per property, an array 32 + 16 + 8 per element, a string 16 + its length rounded up to 8
 * (two bytes per character when it is not Latin-1), a number that is not a small integer (epoch-ms
 * timestamps) a 16-byte heap number, plus the store's entry (its key string and a map slot, 40
 * bytes). A frozen object or array is shared between objects (k8s-types shares equal label maps,
 * owner-reference lists and the empty map and list), so it costs the pointer only. Strings are
 * counted in full even when interned. Measured against the heap (BENCHMARKS.md, *Owned pods,
 * metadata only*): the walk costs O(view size) per event, nothing when nothing arrives.
 */
import type { ObjectKey, ReplaceEvent } from '@reconcile-loop/object-store';
import { replaceEvent } from '@reconcile-loop/object-store';
import type { Logger } from '@reconcile-loop/primitives';

/** What a source's cache holds, as `health().cache` reports it. */
export interface CacheCost {
  /** Objects handed on and not deleted since (what the consumer's store holds from this source). */
  readonly objects: number;
  /** Estimated bytes those objects hold on the heap (see the module's comment for how it is counted). */
  readonly bytesEstimate: number;
  /** The `memoryBudgetBytes` option, undefined without one. */
  readonly budgetBytes: number | undefined;
  /**
   * Objects that exist on the server but were not handed on because the budget was full; 0 when
   * the cache is complete. Above 0 the cache is not a true view, and `reason` says why.
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
/** The store's entry for one object: a map slot (key, value, chain) and the key string's header. */
const ENTRY_BYTES = 40;

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

/** The bytes one cached object costs: its view and its store entry. */
function entryBytes(key: ObjectKey, object: unknown): number {
  return ENTRY_BYTES + stringBytes(key) + estimateBytes(object);
}

/**
 * The running count: bytes per key handed on, their sum, and the budget's state. Written only by
 * the reflector's phases at the points they hand an event on.
 */
export class CacheLedger {
  readonly #budget: number | undefined;
  readonly #logger: Logger;
  readonly #fields: (extra: Record<string, unknown>) => Record<string, unknown>;
  #sizes = new Map<ObjectKey, number>();
  #bytes = 0;
  /** Keys that exist on the server but are not cached: the budget refused them. */
  #refused = new Set<ObjectKey>();
  #warned = false;
  #refusalLogged = false;

  constructor(
    budgetBytes: number | undefined,
    logger: Logger,
    fields: (extra: Record<string, unknown>) => Record<string, unknown>,
  ) {
    this.#budget = budgetBytes;
    this.#logger = logger;
    this.#fields = fields;
  }

  /** The snapshot `health().cache` reports. */
  cost(): CacheCost {
    const refused = this.#refused.size;
    return {
      objects: this.#sizes.size,
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
   * A listing: the ledger is rebuilt from `objects` (plus the sizes of `keep`'s keys, whose last
   * good version the store keeps). With a budget, objects past it are left out of the replace.
   */
  replace<T>(objects: Map<ObjectKey, T>, keep: Iterable<ObjectKey>): ReplaceEvent<T> {
    const sizes = new Map<ObjectKey, number>();
    let bytes = 0;
    for (const key of keep) {
      const size = this.#sizes.get(key);
      if (size === undefined) continue;
      sizes.set(key, size);
      bytes += size;
    }
    this.#refused = new Set();
    for (const [key, object] of objects) {
      const size = entryBytes(key, object);
      if (this.#budget !== undefined && bytes + size > this.#budget) {
        objects.delete(key);
        this.#refused.add(key);
        continue;
      }
      sizes.set(key, size);
      bytes += size;
    }
    this.#sizes = sizes;
    this.#bytes = bytes;
    this.#checked();
    return replaceEvent(objects, keep);
  }

  /**
   * An object from a watch: true when it is handed on. A key already cached always is (its
   * newest version replaces the old, whatever the size: a stale object is worse than a full
   * budget); a new key is refused when it would take the sum past the budget.
   */
  admit(key: ObjectKey, object: unknown): boolean {
    const size = entryBytes(key, object);
    const before = this.#sizes.get(key);
    if (before === undefined && this.#budget !== undefined && this.#bytes + size > this.#budget) {
      this.#refused.add(key);
      this.#checked();
      return false;
    }
    this.#refused.delete(key);
    this.#sizes.set(key, size);
    this.#bytes += size - (before ?? 0);
    this.#checked();
    return true;
  }

  /** A delete handed on (or a refused key deleted on the server). */
  delete(key: ObjectKey): void {
    const wasRefused = this.#refused.delete(key);
    const before = this.#sizes.get(key);
    if (before !== undefined) {
      this.#sizes.delete(key);
      this.#bytes -= before;
    }
    if (wasRefused || before !== undefined) this.#checked();
  }

  /** Logs the budget's crossings: a warning at {@link MEMORY_BUDGET_WARN_FRACTION}, an error once refusals start. */
  #checked(): void {
    const budget = this.#budget;
    if (budget === undefined) return;
    const warnAt = budget * MEMORY_BUDGET_WARN_FRACTION;
    if (this.#bytes >= warnAt && !this.#warned) {
      this.#warned = true;
      this.#logger.warn(
        this.#fields({ bytesEstimate: this.#bytes, budgetBytes: budget, objects: this.#sizes.size }),
        `cache at ${Math.round((this.#bytes / budget) * 100)}% of its memory budget`,
      );
    } else if (this.#bytes < warnAt) this.#warned = false;
    if (this.#refused.size > 0 && !this.#refusalLogged) {
      this.#refusalLogged = true;
      this.#logger.error(
        this.#fields({ bytesEstimate: this.#bytes, budgetBytes: budget, refused: this.#refused.size }),
        'memory budget full: new objects are not cached (health is red until the cache fits again)',
      );
    } else if (this.#refused.size === 0 && this.#refusalLogged) {
      this.#refusalLogged = false;
      this.#logger.info(this.#fields({ bytesEstimate: this.#bytes, budgetBytes: budget }), 'cache fits its memory budget again');
    }
  }
}
