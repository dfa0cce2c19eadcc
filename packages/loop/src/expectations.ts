/**
 * Read your writes: kube-controller-manager's `ControllerExpectations`, keyed by parent key. A
 * reconcile that created or deleted owned objects records them; until the caches have observed
 * every one (a created key present in its source's store, a deleted key absent), the loop does not
 * call reconcile for that parent, so a run against a cache that has not seen its own writes cannot
 * create the same child twice. Unsatisfied expectations expire after a TTL (5 min, as upstream);
 * the parent then runs anyway, with a warning.
 *
 * Presence, not resourceVersion order: resourceVersions are opaque and not comparable across
 * objects, so "the cache reached RV x" is not something a client can observe; an object's presence
 * or absence in its source's store is.
 *
 * Recorded after the write returned, so the watch can beat the response: a create's ADDED (and even
 * a later DELETED by someone else) may be applied before the reconcile records it, and then presence
 * alone waits out the TTL for an object that already came and went. A key cannot tell that apart
 * from an older object of the same name deleted before the create, so the recorder also takes the
 * object the write returned: with its `metadata.uid`, a recent-events log decides. Every secondary
 * event is logged with a sequence number and the uid it carried; each reconcile takes the number
 * current when its context is built, and a write whose uid has an event since then is observed (a
 * create: any event of that uid; a delete: its delete). A bare key keeps presence alone.
 *
 * Only a context's recorders consult the log, and only for events after the context was built, so
 * it records only while a context is open (built, its call not yet settled): an idle loop pays one
 * counter per secondary event, not a map write and a uid read. A recorder used after its call
 * settled finds the gap uncovered and keeps presence alone.
 */
import { objectKey, OptionsError } from '@reconcile-loop/primitives';
import type { ObjectKey, SourceEvent } from '@reconcile-loop/object-store';
import type { Clock, Logger, Key } from '@reconcile-loop/primitives';

/** kube-controller-manager's `ExpectationsTimeout`. */
export const DEFAULT_EXPECTATIONS_TTL_MS = 5 * 60_000;

/**
 * Keys the recent-events log holds (oldest dropped first): about 1 MB at ~100 B an entry. A reconcile
 * whose context is older than the oldest kept event falls back to presence alone, which is what the
 * log refines: 10,000 events of the secondary sources during one reconcile call.
 */
const RECENT_EVENTS = 10_000;

/**
 * What a write names: the object key, or the object the write returned (its `metadata.name`,
 * `namespace` and `uid`), which is also observed when the watch delivered it before it was recorded.
 * Typed as loosely as a client's response; a missing name is an `OptionsError` at the call.
 */
type Written =
  | ObjectKey
  | {
      readonly metadata?:
        | { readonly name?: string | undefined; readonly namespace?: string | undefined; readonly uid?: string | undefined }
        | undefined;
    };

/** Records the writes of one reconcile call on one secondary source. */
export interface ExpectationRecorder {
  /**
   * Objects this reconcile created (after the create returned, or AlreadyExists): wait until the
   * cache holds each. Pass the object the create returned where you have it: its uid lets a create
   * whose ADDED (and a later delete) the cache applied before this call count as observed.
   */
  creations(...written: Written[]): void;
  /**
   * Objects this reconcile deleted (after the delete returned, NotFound, or a failed uid
   * precondition): wait until the cache drops each or holds it with `metadata.deletionTimestamp`
   * set (graceful deletion seen, as the ReplicaSet controller's `DeletionObserved` counts it). Pass
   * the object the reconcile read, uid and all: it is then also observed once the cache holds
   * another uid under its name (a newer object re-created meanwhile), or by a delete event of that
   * uid since the reconcile began. A bare key waits for the name to be gone, whoever holds it.
   */
  deletions(...written: Written[]): void;
}

/**
 * One unobserved write: a creation waits for the key's presence; a deletion for its absence, or,
 * with the uid of the object deleted, for the cache to stop holding that uid under the key.
 */
type Write = { readonly created: true } | { readonly created: false; readonly uid: string | undefined };

/** Parents whose recorded writes the cache has not observed yet, and the oldest one's wait. */
export interface ExpectationsReading {
  readonly pending: number;
  /** How long the oldest has waited (ms); undefined when none waits. */
  readonly oldestMs: number | undefined;
}

interface Pending {
  /** `source\0key` → the write waited for. */
  readonly keys: Map<string, Write>;
  /** TTL timer handle; the parent runs anyway when it fires. */
  timer: unknown;
  readonly since: number;
}

export interface ExpectationsOptions<P extends Key> {
  /** The secondary sources' stores by name: what observes the writes. */
  stores: ReadonlyMap<string, { get(key: ObjectKey): unknown }>;
  clock: Clock;
  logger: Logger;
  ttlMs: number;
  /** Called when a parent's expectations expire: the loop re-offers it (a satisfied one comes back from `observe`). */
  onReady(parent: P): void;
}

const SEP = '\u0000';

/**
 * Invariants: a parent is in `#pending` only with at least one unobserved key and exactly one armed
 * TTL timer; every path that removes it (satisfied, expired, forgotten) clears the timer, and the
 * first two call `onReady` so the parent is never left unreconciled.
 */
export class Expectations<P extends Key> {
  readonly #o: ExpectationsOptions<P>;
  readonly #pending = new Map<P, Pending>();
  /** Sequence number of the newest logged event. */
  #seq = 0;
  /** `source\0key` → its newest event: sequence number, the uid it carried, whether a delete. Oldest first (re-set on each event). */
  readonly #recent = new Map<string, { seq: number; uid: string | undefined; deleted: boolean }>();
  /**
   * Invariant: for every key, `#recent` holds its newest logged event among all events numbered
   * after this (older ones were dropped, or came while no context was open).
   */
  #coveredAfter = 0;
  /** Contexts built whose calls have not settled: the log records only while there is one. */
  #open = 0;

  constructor(options: ExpectationsOptions<P>) {
    this.#o = options;
  }

  /** Parents with unsatisfied expectations (for health and tests). */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * For health and the observer's snapshot: the parents waiting for the cache to observe their
   * writes, and how long the oldest has waited (`now` on the loop's clock). A wait that nears the TTL
   * is an event the cache never got, or a write recorded by a key another object now holds.
   */
  reading(now: number): ExpectationsReading {
    let since: number | undefined;
    for (const pending of this.#pending.values()) if (since === undefined || pending.since < since) since = pending.since;
    return { pending: this.#pending.size, oldestMs: since === undefined ? undefined : now - since };
  }

  /**
   * A reconcile context is being built: the log records until its {@link close}. Returns the log
   * position its recorders count events after as observed.
   */
  open(): number {
    this.#open += 1;
    return this.#seq;
  }

  /** A context's call settled (or it was never handed over): the last one closing empties the log. */
  close(): void {
    if (this.#open === 0) return;
    this.#open -= 1;
    if (this.#open > 0) return;
    this.#recent.clear();
    this.#coveredAfter = this.#seq;
  }

  /** Whether events are being logged now: {@link observe} then wants the object a delete removed. */
  get recording(): boolean {
    return this.#open > 0;
  }

  /** Contexts opened and not closed yet: one per reconcile call in flight (for tests: a leak shows here). */
  get openContexts(): number {
    return this.#open;
  }

  /** The recorder `ctx.expect(source)` hands a reconcile of `parent` whose context was built at `since` ({@link mark}). */
  recorder(parent: P, source: string, since: number): ExpectationRecorder {
    if (!this.#o.stores.has(source))
      throw new OptionsError('ReconcileLoop', `ctx.expect("${source}"): no secondary source of that name`);
    const add = (created: boolean, written: Written[]): void => {
      for (const item of written) {
        const [key, uid] = this.#named(source, item);
        const write: Write = created ? { created } : { created, uid };
        // Already observed (the watch beat the write's response): nothing to wait for.
        if (this.#observed(source, key, write) || this.#seenSince(source, key, uid, created, since)) continue;
        this.#entry(parent).keys.set(source + SEP + key, write);
      }
    };
    return Object.freeze({
      creations: (...written: Written[]) => add(true, written),
      deletions: (...written: Written[]) => add(false, written),
    });
  }

  /**
   * The dispatcher's gate: `true` when `parent` may be reconciled now. Re-checks the stores, so a
   * satisfied parent is released even if the store event that satisfied it has not been seen here.
   */
  satisfied(parent: P): boolean {
    const pending = this.#pending.get(parent);
    if (pending === undefined) return true;
    this.#sweep(parent, pending);
    return !this.#pending.has(parent);
  }

  /**
   * After the store of `source` applied `event` (`deleted`: the object a delete removed): logs it, sweeps the parents waiting on that source
   * and returns those now satisfied, for the caller to offer with the event's own affected parents.
   */
  observe(source: string, event: SourceEvent<unknown>, deleted?: unknown): P[] {
    this.#log(source, event, deleted);
    const ready: P[] = [];
    if (this.#pending.size === 0) return ready;
    const prefix = source + SEP;
    for (const [parent, pending] of [...this.#pending]) {
      let touches = false;
      for (const id of pending.keys.keys()) if (id.startsWith(prefix)) touches = true;
      if (!touches) continue;
      this.#sweep(parent, pending);
      if (!this.#pending.has(parent)) ready.push(parent);
    }
    return ready;
  }

  /** Drops a parent's expectations (kube-controller-manager's `DeleteExpectations`: the parent is gone). */
  forget(parent: P): void {
    const pending = this.#pending.get(parent);
    if (pending === undefined) return;
    this.#o.clock.clearTimeout(pending.timer);
    this.#pending.delete(parent);
  }

  /** Clears every timer (the loop stopped). */
  clear(): void {
    for (const parent of [...this.#pending.keys()]) this.forget(parent);
  }

  #log(source: string, event: SourceEvent<unknown>, deleted: unknown): void {
    const seq = ++this.#seq;
    // No context open: nothing can consult this event; the log no longer covers it.
    if (this.#open === 0) {
      this.#coveredAfter = seq;
      return;
    }
    // A listing is no evidence: it may have been taken before the write. Presence decides.
    if (event.type === 'replace') return;
    // A release observes nothing: the loop forgets the released parents' expectations itself.
    if (event.type === 'release') return;
    const id = source + SEP + event.key;
    const uid = uidOf(event.type === 'upsert' ? event.object : (deleted ?? undefined)) ?? this.#recent.get(id)?.uid;
    this.#recent.delete(id); // re-inserted last: the map stays ordered by sequence number
    this.#recent.set(id, { seq, uid, deleted: event.type === 'delete' });
    if (this.#recent.size > RECENT_EVENTS) {
      const [oldest, entry] = this.#recent.entries().next().value!;
      this.#recent.delete(oldest);
      this.#coveredAfter = entry.seq;
    }
  }

  /**
   * Whether the log shows the written object (by uid) observed after `since`: for a create any event
   * of it, for a delete its delete. Without a uid, or when the log no longer reaches back to `since`,
   * false: presence alone decides, since an event of the key could be an older object's.
   */
  #seenSince(source: string, key: ObjectKey, uid: string | undefined, created: boolean, since: number): boolean {
    if (uid === undefined || since < this.#coveredAfter) return false;
    const entry = this.#recent.get(source + SEP + key);
    if (entry === undefined || entry.seq <= since || entry.uid !== uid) return false;
    return created || entry.deleted;
  }

  /** The key and uid of a written item; a typed error for anything but a string key or an object with a name. */
  #named(source: string, item: Written): [ObjectKey, string | undefined] {
    if (typeof item === 'string') return [item, undefined];
    const metadata = (item as { metadata?: { name?: unknown; namespace?: unknown; uid?: unknown } } | null)?.metadata;
    if (typeof metadata?.name !== 'string' || metadata.name === '')
      throw new OptionsError(
        'ReconcileLoop',
        `ctx.expect("${source}"): a write is an object key or an object with metadata.name, got ${item === null ? 'null' : typeof item}`,
      );
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
    return [objectKey({ name: metadata.name, namespace }), typeof metadata.uid === 'string' ? metadata.uid : undefined];
  }

  #entry(parent: P): Pending {
    let pending = this.#pending.get(parent);
    if (pending === undefined) {
      const { clock, ttlMs } = this.#o;
      pending = { keys: new Map(), timer: undefined, since: clock.now() };
      pending.timer = clock.setTimeout(() => this.#expire(parent), ttlMs);
      this.#pending.set(parent, pending);
    }
    return pending;
  }

  #sweep(parent: P, pending: Pending): void {
    for (const [id, write] of pending.keys) {
      const at = id.indexOf(SEP);
      if (this.#observed(id.slice(0, at), id.slice(at + 1), write)) pending.keys.delete(id);
    }
    if (pending.keys.size === 0) this.forget(parent);
  }

  /**
   * A create is observed once the key is cached; a delete once it is gone, terminating, or (its uid
   * known) cached as another object. Without that last rule a delete whose object the cache saw
   * replaced before the record (DELETED and a newer ADDED of the same name, e.g. another replica's
   * re-create during a leader handover) would hold its parent for the whole TTL, while the newer
   * object waits on exactly that parent's reconcile to be deleted in turn.
   */
  #observed(source: string, key: ObjectKey, write: Write): boolean {
    const object = this.#o.stores.get(source)!.get(key);
    if (write.created) return object !== undefined;
    if (object === undefined) return true;
    if ((object as { metadata?: { deletionTimestamp?: unknown } }).metadata?.deletionTimestamp != null) return true;
    const cached = uidOf(object);
    return write.uid !== undefined && cached !== undefined && cached !== write.uid;
  }

  #expire(parent: P): void {
    const pending = this.#pending.get(parent);
    if (pending === undefined) return;
    this.#pending.delete(parent);
    this.#o.logger.warn(
      {
        parentKey: String(parent),
        ttlMs: this.#o.ttlMs,
        unobserved: [...pending.keys].map(([id, write]) => `${write.created ? 'create' : 'delete'} ${id.replace(SEP, ':')}`),
      },
      'expectations expired before the cache observed every write; reconciling anyway',
    );
    this.#ready(parent);
  }

  #ready(parent: P): void {
    try {
      this.#o.onReady(parent);
    } catch (error) {
      this.#o.logger.error({ err: error, parentKey: String(parent) }, 're-enqueueing a parent after its expectations failed');
    }
  }
}

/** `metadata.uid` of a cached object, read structurally (the stores hold any type). */
function uidOf(object: unknown): string | undefined {
  const uid = (object as { metadata?: { uid?: unknown } } | null | undefined)?.metadata?.uid;
  return typeof uid === 'string' ? uid : undefined;
}
