import { describeIssue, type InvalidObjectError } from '@reconcile-loop/k8s-types';
import type { ObjectKey, QuarantinedObject } from '@reconcile-loop/object-store';

/**
 * Objects whose current version failed the schema (poison objects), by object key.
 * Invariant kept with the stream: no version of a key in here was emitted since it entered, and no
 * delete either — the consumer's store holds the key's last good version if it had one (a listing's
 * replace names these keys in `keep`), so the store equals the apiserver's state except that these
 * keys are at their last good version or absent. A later valid ADDED/MODIFIED lifts a key; a DELETED
 * removes it (and deletes it from the store); every listing rebuilds the whole set.
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

  /** The quarantined keys now (a copy): what a listing's replace keeps. */
  keys(): Set<ObjectKey> {
    return new Set(this.#entries.keys());
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
