import type { EventInput, ObjectReference } from './event.js';

/** client-go `tools/record` `defaultAggregateMaxEvents`: distinct similar events before they are combined. */
export const DEFAULT_AGGREGATE_MAX_EVENTS = 10;
/** client-go `defaultAggregateIntervalInSeconds` (600 s): a quiet spell this long starts the count afresh. */
export const DEFAULT_AGGREGATE_INTERVAL_MS = 600_000;
/** client-go's `maxLruCacheEntries`: every per-key record the correlator keeps is bounded by it. */
export const MAX_CORRELATOR_ENTRIES = 4096;
/** The note prefix of a combined event (client-go `EventAggregatorByReasonMessageFunc`). */
export const COMBINED_PREFIX = '(combined from similar events): ';

/**
 * The similarity key: client-go's `EventAggregatorByReasonFunc` — the source (controller and
 * instance), the regarding object, type and reason. Events that share it and differ in anything
 * else (note, action, related) are "similar".
 */
export function similarKey(regarding: ObjectReference, input: EventInput, source: string): string {
  return JSON.stringify([
    source,
    regarding.apiVersion,
    regarding.kind,
    regarding.namespace,
    regarding.name,
    regarding.uid,
    input.type,
    input.reason,
  ]);
}

interface Similar {
  /** The distinct events seen in this window (their full keys), never more than `maxEvents - 1` kept. */
  readonly distinct: Set<string>;
  last: number;
}

/**
 * client-go's `EventAggregator`: counts the distinct events of each similarity group within a
 * rolling window (restarted after `intervalMs` without one); from the `maxEvents`-th distinct one
 * on, each new distinct event is to be replaced by the group's one combined event.
 *
 * Invariants: a group's set holds at most `maxEvents - 1` keys after each call (upstream's
 * `PopAny`), so an exact repeat of a remembered event is never combined, and at most
 * {@link MAX_CORRELATOR_ENTRIES} groups are remembered (least recently used forgotten first).
 */
export class SimilarEventAggregator {
  readonly #groups = new Map<string, Similar>();

  constructor(
    readonly maxEvents: number,
    readonly intervalMs: number,
  ) {}

  /** Records one event (`similar` its group, `distinct` its full key) at `now`; true when it is to be combined. */
  observe(similar: string, distinct: string, now: number): boolean {
    let group = this.#groups.get(similar);
    if (group === undefined || now - group.last > this.intervalMs) group = { distinct: new Set(), last: now };
    // Re-inserted so the Map's order is least recently used first.
    this.#groups.delete(similar);
    if (this.#groups.size >= MAX_CORRELATOR_ENTRIES) this.#groups.delete(this.#groups.keys().next().value!);
    this.#groups.set(similar, group);
    group.distinct.add(distinct);
    group.last = now;
    if (group.distinct.size < this.maxEvents) return false;
    group.distinct.delete(group.distinct.values().next().value!);
    return true;
  }

  /** Groups remembered (for tests). */
  get size(): number {
    return this.#groups.size;
  }
}
