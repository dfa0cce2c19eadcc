import { describeIssue, type InvalidObjectError } from '@reconcile-loop/k8s-types';
import type { ObjectKey, QuarantinedObject } from '@reconcile-loop/object-store';

/**
 * Objects held out of the store because they failed the schema (poison objects), by object key.
 * Invariant kept with the stream: a key in here is never in what the reflector emitted since it
 * entered, so the consumer's store equals the apiserver's state minus these keys. A later valid
 * ADDED/MODIFIED lifts a key; a DELETED removes it; every listing rebuilds the whole set.
 */
export class Quarantine {
  readonly #entries = new Map<ObjectKey, QuarantinedObject>();

  /** Number of quarantined keys. */
  get size(): number {
    return this.#entries.size;
  }

  has(key: ObjectKey): boolean {
    return this.#entries.has(key);
  }

  /** Holds `key` (replacing its previous entry, keeping its `since`); returns the entry. */
  hold(key: ObjectKey, error: InvalidObjectError, now: number): QuarantinedObject {
    const entry: QuarantinedObject = {
      key,
      resourceVersion: error.resourceVersion,
      issues: error.issues.map(describeIssue),
      since: this.#entries.get(key)?.since ?? now,
    };
    this.#entries.set(key, entry);
    return entry;
  }

  /** Releases `key`; true when it was held. */
  lift(key: ObjectKey): boolean {
    return this.#entries.delete(key);
  }

  /**
   * Replaces the whole set with a listing's poison objects; entries already held keep their `since`.
   * Returns the entries that are new or changed (another resourceVersion), the ones worth a log line.
   */
  rebuild(held: ReadonlyMap<ObjectKey, InvalidObjectError>, now: number): QuarantinedObject[] {
    const previous = new Map(this.#entries);
    this.#entries.clear();
    const fresh: QuarantinedObject[] = [];
    for (const [key, error] of held) {
      const before = previous.get(key);
      const entry: QuarantinedObject = {
        key,
        resourceVersion: error.resourceVersion,
        issues: error.issues.map(describeIssue),
        since: before?.since ?? now,
      };
      this.#entries.set(key, entry);
      if (before?.resourceVersion !== entry.resourceVersion) fresh.push(entry);
    }
    return fresh;
  }

  /** A snapshot, in key order. */
  list(): QuarantinedObject[] {
    return [...this.#entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
