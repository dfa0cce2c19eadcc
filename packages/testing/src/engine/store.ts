import type { ResourceType } from '../kinds/resource.js';
import type { ApiServerObject } from '../types.js';

/** One committed write: what watchers replay and what an Exact list undoes to rewind. */
export interface StoredEvent {
  readonly rev: number;
  readonly resource: ResourceType;
  /** `namespace/name`: the storage key under the resource. */
  readonly key: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The state after the write; for DELETED the last state, stamped with the deletion revision. */
  readonly object: ApiServerObject;
  /** The state before the write, absent for ADDED. */
  readonly prev: ApiServerObject | undefined;
}

/** Sorted snapshots a store keeps for paginated reads (a LIST in progress per resource, and a spare). */
const SNAPSHOTS = 4;

/**
 * An etcd-shaped store: one global revision bumped by every write, objects keyed by
 * (resource, namespace/name), and an ordered history of writes for watch replay and
 * reads at an exact revision. Compaction drops history up to a revision; reads and watches
 * that need a dropped revision are answered 410 by the HTTP layer.
 *
 * Stored objects are never mutated after commit, so events and snapshots share them safely.
 */
export class MvccStore {
  #rev = 1;
  #compacted = 1;
  /** The watch cache's window starts after this revision; it moves with compaction unless told not to. */
  #windowStart = 1;
  readonly #objects = new Map<string, Map<string, ApiServerObject>>();
  readonly #log: StoredEvent[] = [];
  readonly #listeners = new Set<(e: StoredEvent) => void>();
  readonly #revisionWaiters = new Set<() => void>();
  /**
   * Sorted snapshots by (revision, resource, namespace), newest last, at most {@link SNAPSHOTS}.
   * The state at a revision never changes, so a paginated LIST pinned to one revision rewinds and
   * sorts it once rather than once per page (per page, it was O(N log N + history)).
   */
  readonly #snapshots = new Map<
    string,
    { readonly at: number; readonly entries: ReadonlyArray<readonly [string, ApiServerObject]> }
  >();

  readonly #maxHistory: number;

  constructor(maxHistory: number) {
    this.#maxHistory = maxHistory;
  }

  /** The newest revision (a fresh store is at 1, as a fresh etcd is). */
  get revision(): number {
    return this.#rev;
  }

  /** The oldest revision a cached watch can resume from (the watch cache window's start). */
  get watchWindowStart(): number {
    return this.#windowStart;
  }

  /** Revisions at or below this one are gone from history; reading at exactly it still works. */
  get compactedRevision(): number {
    return this.#compacted;
  }

  #bucket(r: ResourceType): Map<string, ApiServerObject> {
    let b = this.#objects.get(r.id);
    if (b === undefined) {
      b = new Map();
      this.#objects.set(r.id, b);
    }
    return b;
  }

  /** The current object under `key`, if any. */
  get(r: ResourceType, key: string): ApiServerObject | undefined {
    return this.#objects.get(r.id)?.get(key);
  }

  /** Current objects of a resource, optionally one namespace, sorted by storage key. */
  listCurrent(r: ResourceType, namespace: string | undefined): Array<[string, ApiServerObject]> {
    return sortEntries(this.#bucket(r), namespace);
  }

  /**
   * Objects as they stood at revision `at` (at most the current one and at least the compacted
   * one; the caller checks), sorted by storage key, rewound by undoing newer writes newest first.
   * The array is shared by every read at that revision (frozen: do not mutate it).
   */
  listAt(r: ResourceType, namespace: string | undefined, at: number): ReadonlyArray<readonly [string, ApiServerObject]> {
    at = Math.min(at, this.#rev);
    const id = `${at} ${r.id} ${namespace === undefined ? '' : `/${namespace}`}`;
    const kept = this.#snapshots.get(id);
    if (kept !== undefined) return kept.entries;
    let snapshot = this.#bucket(r);
    if (at < this.#rev) {
      snapshot = new Map(snapshot);
      for (let i = this.#log.length - 1; i >= 0; i--) {
        const e = this.#log[i]!;
        if (e.rev <= at) break;
        if (e.resource.id !== r.id) continue;
        if (e.prev === undefined) snapshot.delete(e.key);
        else snapshot.set(e.key, e.prev);
      }
    }
    const sorted = Object.freeze(sortEntries(snapshot, namespace));
    // A compacted revision cannot be read again: its snapshot would only hold old objects alive.
    for (const [k, v] of this.#snapshots) if (v.at < this.#compacted) this.#snapshots.delete(k);
    for (const k of this.#snapshots.keys()) {
      if (this.#snapshots.size < SNAPSHOTS) break;
      this.#snapshots.delete(k);
    }
    this.#snapshots.set(id, { at, entries: sorted });
    return sorted;
  }

  /** History entries with revision above `after`, oldest first. The caller checks `after >= compactedRevision`. */
  eventsAfter(after: number): StoredEvent[] {
    let lo = 0;
    let hi = this.#log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#log[mid]!.rev <= after) lo = mid + 1;
      else hi = mid;
    }
    return this.#log.slice(lo);
  }

  /**
   * Commits one write at the next revision, stamps `resourceVersion` on the stored object, records
   * it in history and tells every listener synchronously (so a watcher never misses an event
   * between reading history and subscribing).
   */
  commit(r: ResourceType, key: string, type: StoredEvent['type'], next: ApiServerObject): StoredEvent {
    const rev = this.#rev + 1;
    const prev = this.#bucket(r).get(key);
    const object: ApiServerObject = { ...next, metadata: { ...next.metadata, resourceVersion: String(rev) } };
    deepFreeze(object);
    if (type === 'DELETED') this.#bucket(r).delete(key);
    else this.#bucket(r).set(key, object);
    this.#rev = rev;
    const event: StoredEvent = { rev, resource: r, key, type, object, prev };
    this.#log.push(event);
    if (this.#log.length > this.#maxHistory) {
      const dropped = this.#log.splice(0, this.#log.length - this.#maxHistory);
      this.#compacted = Math.max(this.#compacted, dropped[dropped.length - 1]!.rev);
      this.#windowStart = Math.max(this.#windowStart, this.#compacted);
    }
    for (const l of [...this.#listeners]) l(event);
    for (const w of [...this.#revisionWaiters]) w();
    return event;
  }

  /**
   * Compacts etcd up to `revision` (default: the current one). The watch cache window moves too
   * unless `keepWatchWindow`: then history stays for cached watches while Exact reads and uncached
   * watches below it get 410. Returns the new compacted revision.
   */
  compact(revision: number = this.#rev, keepWatchWindow = false): number {
    const target = Math.min(Math.max(revision, this.#compacted), this.#rev);
    this.#compacted = target;
    if (!keepWatchWindow) this.#windowStart = Math.max(this.#windowStart, target);
    const keepAfter = Math.min(this.#compacted, this.#windowStart);
    let n = 0;
    while (n < this.#log.length && this.#log[n]!.rev <= keepAfter) n++;
    this.#log.splice(0, n);
    return target;
  }

  /** Subscribes to commits; returns the unsubscribe function. */
  subscribe(listener: (e: StoredEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Resolves true once the revision reaches `revision`, false after `timeoutMs` or when
   * `signal` aborts. The watch cache blocks the same way before answering "too large".
   */
  waitForRevision(revision: number, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#rev >= revision) return Promise.resolve(true);
    if (timeoutMs <= 0 || signal?.aborted === true) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.#revisionWaiters.delete(check);
        signal?.removeEventListener('abort', onAbort);
        resolve(ok);
      };
      const check = (): void => {
        if (this.#rev >= revision) done(true);
      };
      const onAbort = (): void => done(false);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#revisionWaiters.add(check);
      signal?.addEventListener('abort', onAbort);
    });
  }
}

function sortEntries(m: Map<string, ApiServerObject>, namespace: string | undefined): Array<[string, ApiServerObject]> {
  const prefix = namespace === undefined ? undefined : `${namespace}/`;
  const out: Array<[string, ApiServerObject]> = [];
  for (const e of m) if (prefix === undefined || e[0].startsWith(prefix)) out.push(e);
  out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return out;
}

function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}
