/**
 * Sources that follow a shard gate's ranges. Each sharded source is wrapped twice:
 *
 * - its **writer** keeps in the store only the objects whose hash is in the ranges (the client-side
 *   filter: for a source the server does not filter, or not yet) and, when the ranges lose
 *   something, applies a release (object-store's `ReleaseEvent`: removed, not deleted; the loop
 *   forgets those parents instead of reconciling them);
 * - its **stream** can be relisted in place when the ranges gain something: the inner stream is
 *   closed and opened again, whose first event is a listing (a replace) that the filter cuts to
 *   the new share. A source with `reshard(ranges)` (a reflector built with the `shard` option,
 *   hashing the same field) is resharded first, so the new listing asks the server for the new
 *   ranges (`shardSelector`) and only those bytes cross the wire.
 *
 * What is hashed, by `shard.field`:
 * - `'uid'`: the primary object's `metadata.uid`; an owned (secondary, `owner`) object's controller
 *   owner reference's `uid`, so children live on the replica of their parent. The server can shard
 *   only the primary this way (a child's own uid is another hash): every replica still receives
 *   every owned object over the wire and stores only its share.
 * - `'namespace'`: every object's `metadata.namespace` (a parent and its children share it), so the
 *   server can filter every source: least bytes and memory, but the spread is as even as the
 *   namespaces' sizes and names are (see the sharding README on names with numbered suffixes).
 *
 * A secondary source mapped by a `keyMap` is not filtered: its objects need not live with one parent.
 */
import { releaseEvent, type ObjectKey, type Source, type SourceEvent } from '@reconcile-loop/object-store';
import { inShardRanges, shardHash, type Key, type Logger, type ShardRange } from '@reconcile-loop/primitives';
import type { StoreWriter } from '@reconcile-loop/stream-driver';
import type { OwnerSelector } from './owners.js';

/** The field a sharded loop hashes: see the module comment. */
export type ShardField = 'uid' | 'namespace';

/** What a source follower needs from the admission: the ranges now and the warm-up bookkeeping. */
export interface RangesFollowed {
  readonly ranges: readonly ShardRange[];
  /** Registers a source that must relist after a gain before gained hashes are admitted. */
  follow(follower: RangesFollower): void;
}

/** One sharded source, as the admission drives it. */
export interface RangesFollower {
  readonly name: string;
  /** New ranges: release what they lost; on a gain, relist (`true` when a relist was started: the source is cold until it lands). */
  rangesChanged(ranges: readonly ShardRange[], gained: boolean): boolean;
  /** Set by the admission: called once the relist started by the last gain was applied. */
  onWarm: (() => void) | undefined;
}

interface Reshardable {
  reshard(ranges: readonly ShardRange[]): void;
}

const hasReshard = (source: object): source is Reshardable => typeof (source as Partial<Reshardable>).reshard === 'function';

type Metadata = {
  readonly uid?: unknown;
  readonly namespace?: unknown;
  readonly ownerReferences?: ReadonlyArray<{
    readonly kind?: unknown;
    readonly uid?: unknown;
    readonly controller?: unknown;
  }> | null;
};

const metadataOf = (object: unknown): Metadata | undefined => (object as { metadata?: Metadata } | null)?.metadata ?? undefined;

/** The value hashed for an object of the primary source: its uid or namespace; `undefined` when it has none. */
export function primaryShardValue(field: ShardField): (object: unknown) => string | undefined {
  return (object) => {
    const value = field === 'uid' ? metadataOf(object)?.uid : (metadataOf(object)?.namespace ?? '');
    return typeof value === 'string' ? value : undefined;
  };
}

/** For an owned object: the uid of its controller owner reference of the owner's kind (uid), or its namespace. */
export function ownedShardValue(field: ShardField, owner: OwnerSelector): (object: unknown) => string | undefined {
  if (field === 'namespace') return primaryShardValue('namespace');
  return (object) => {
    const refs = metadataOf(object)?.ownerReferences;
    if (!Array.isArray(refs)) return undefined;
    const controllerOnly = owner.controllerOnly ?? true;
    for (const ref of refs) {
      if (ref?.kind !== owner.kind || typeof ref.uid !== 'string') continue;
      if (controllerOnly && ref.controller !== true) continue;
      return ref.uid;
    }
    return undefined;
  };
}

export interface ShardedSourceOptions<U, P extends Key> {
  readonly source: Source<U>;
  readonly writer: StoreWriter<U, P>;
  /** Whether the store holds an object under `key`. */
  readonly has: (key: ObjectKey) => boolean;
  /** The value hashed for an object; an object without one is held by no replica. */
  readonly valueOf: (object: U) => string | undefined;
  /**
   * Reshard the source itself (the server filters) when it can: it has `reshard(ranges)` and its
   * `health().shard.field` is this field. Otherwise it is filtered on the client only.
   */
  readonly reshard: ShardField | undefined;
  readonly ranges: RangesFollowed;
  /** A release of the filter was applied: these parents left this replica. */
  readonly onReleased: (parents: ReadonlySet<P>) => void;
  readonly logger: Logger;
}

/**
 * One sharded source: the filtering writer, the relistable stream and the follower of the ranges.
 *
 * Invariant: after any event, the store holds only objects whose hash is in the ranges as of that
 * event; every object the source holds in the ranges is in the store once a listing opened after
 * the ranges' last gain was applied (until then the source is cold, and the admission admits no
 * gained hash).
 */
export class ShardedSource<U, P extends Key> implements RangesFollower {
  readonly #o: ShardedSourceOptions<U, P>;
  readonly source: Source<U>;
  readonly writer: StoreWriter<U, P>;
  /** Aborted to close the inner stream and open it again (a relist in place). */
  #cut: AbortController | undefined;
  /** Inner streams opened so far; each listing is judged by the stream it came from. */
  #opened = 0;
  /** Set by a gain: cold until a listing from an inner stream opened after this count was applied. */
  #coldAfter: number | undefined;
  /** Set while the stream waits for the first ranges (see {@link #stream}): called when they arrive. */
  #rangesArrived: (() => void) | undefined;
  /**
   * Whether the inner source's own filter stands for this one: set by a listing applied while the
   * source reported `filter: 'server'` with exactly the ranges here (the reflector then drops every
   * watch frame outside them itself), cleared by every ranges change until the next such listing.
   * While set, an upsert is stored without hashing it here (one FNV-1a per event saved); during a
   * reshard's overlap (old watch frames, the new listing not applied yet) every upsert is hashed.
   */
  #serverFiltered = false;
  /**
   * Upserts hashed here (the client-side check), read by tests only: whether the server's filter
   * stands in for this one is what `health()` reports, as the source's own `shard.filter`.
   */
  #checked = 0;
  onWarm: (() => void) | undefined;

  constructor(options: ShardedSourceOptions<U, P>) {
    this.#o = options;
    const inner = options.source;
    this.source = {
      name: inner.name,
      retry: inner.retry,
      ...(inner.health !== undefined && { health: () => inner.health!() }),
      open: (signal) => this.#stream(signal),
    };
    this.writer = { apply: (event) => this.#apply(event) };
    options.ranges.follow(this);
    // Start with the current ranges: the first listing asks the server for them.
    this.#reshard(options.ranges.ranges);
  }

  get name(): string {
    return this.#o.source.name;
  }

  /** Upserts this wrapper hashed (the client-side check): none while the server's filter stands for it. */
  get checked(): number {
    return this.#checked;
  }

  rangesChanged(ranges: readonly ShardRange[], gained: boolean): boolean {
    const { writer, onReleased } = this.#o;
    // A reshard is pending from here until a listing of the new ranges was applied: check every upsert.
    this.#serverFiltered = false;
    const released = writer.apply(releaseEvent<U>((object) => this.#owns(object)));
    if (released.size > 0) onReleased(released);
    this.#reshard(ranges);
    if (ranges.length > 0) this.#rangesArrived?.();
    if (!gained) return false;
    this.#coldAfter = this.#opened;
    this.#cut?.abort();
    return true;
  }

  /** Moves the source's own selector (no ranges: it keeps its last one; the filter here holds nothing). */
  #reshard(ranges: readonly ShardRange[]): void {
    const { reshard: field, source, logger } = this.#o;
    if (field === undefined || ranges.length === 0 || !hasReshard(source)) return;
    const shard = (source.health?.() as { shard?: { field?: unknown } } | undefined)?.shard;
    if (shard?.field !== field) return;
    try {
      source.reshard(ranges);
    } catch (error) {
      logger.error({ err: error, source: source.name }, 'reshard() threw; the source is filtered on the client only');
    }
  }

  /**
   * Whether the inner source filters exactly these ranges on the server now: it is resharded here
   * (same field), reports `filter: 'server'` (its last LIST echoed the selector) and its ranges are
   * the ones here. Asked once per listing, not per event.
   */
  #filteredBySource(): boolean {
    const { reshard: field, source, ranges } = this.#o;
    if (field === undefined || !hasReshard(source)) return false;
    let shard: { field?: unknown; filter?: unknown; ranges?: unknown } | undefined;
    try {
      shard = (source.health?.() as { shard?: typeof shard } | undefined)?.shard;
    } catch {
      return false;
    }
    if (shard?.field !== field || shard.filter !== 'server' || !Array.isArray(shard.ranges)) return false;
    const mine = ranges.ranges;
    const theirs = shard.ranges as readonly ShardRange[];
    return (
      mine.length > 0 &&
      theirs.length === mine.length &&
      mine.every((r, i) => r.start === theirs[i]?.start && r.end === theirs[i]?.end)
    );
  }

  #owns(object: U): boolean {
    const value = this.#o.valueOf(object);
    return value !== undefined && inShardRanges(shardHash(value), this.#o.ranges.ranges);
  }

  #apply(event: SourceEvent<U>): ReadonlySet<P> {
    const { writer } = this.#o;
    switch (event.type) {
      case 'upsert':
        if (this.#serverFiltered) return writer.apply(event);
        this.#checked += 1;
        if (this.#owns(event.object)) return writer.apply(event);
        // An object that left the ranges under the same key (a delete and re-create with another uid, a
        // new controller owner): the version held is gone for this replica. One never held: nothing to do.
        return this.#o.has(event.key) ? writer.apply({ type: 'delete', key: event.key }) : new Set<P>();
      case 'replace': {
        const mine = new Map<ObjectKey, U>();
        for (const [key, object] of event.objects) if (this.#owns(object)) mine.set(key, object);
        const applied = writer.apply(event.keep === undefined ? { type: 'replace', objects: mine } : { ...event, objects: mine });
        this.#serverFiltered = this.#filteredBySource();
        return applied;
      }
      default:
        return writer.apply(event);
    }
  }

  /** The inner stream, closed and opened again on a relist; ends when `signal` aborts or the inner stream ends on its own. */
  async *#stream(signal: AbortSignal): AsyncGenerator<SourceEvent<U>, void, undefined> {
    for (;;) {
      if (this.#o.ranges.ranges.length === 0) {
        // No ranges (the gate has not read the ring yet, or holds none): the filter would keep
        // nothing of a listing, and a source built with the whole range would fetch the whole kind
        // for it — N replicas starting at once are N full LISTs. The store is synced empty instead,
        // and the inner stream opens once ranges arrive (a gain: it warms on that listing).
        yield { type: 'replace', objects: new Map<ObjectKey, U>() };
        if (!(await this.#untilRanges(signal))) return;
      }
      const cut = new AbortController();
      this.#cut = cut;
      const stream = ++this.#opened;
      try {
        for await (const event of this.#o.source.open(AbortSignal.any([signal, cut.signal]))) {
          yield event;
          // Resumed by the consumer: the event is applied. A listing of a stream opened after the gain warms the source.
          if (event.type === 'replace' && this.#coldAfter !== undefined && stream > this.#coldAfter) {
            this.#coldAfter = undefined;
            this.#warm();
          }
          if (cut.signal.aborted) break;
        }
      } catch (error) {
        if (!cut.signal.aborted || signal.aborted) throw error;
      } finally {
        if (this.#cut === cut) this.#cut = undefined;
      }
      if (signal.aborted || !cut.signal.aborted) return;
    }
  }

  /** Resolves true once the ranges are not empty, false when `signal` aborts first. */
  #untilRanges(signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (arrived: boolean): void => {
        this.#rangesArrived = undefined;
        signal.removeEventListener('abort', aborted);
        resolve(arrived);
      };
      const aborted = (): void => done(false);
      if (signal.aborted) return done(false);
      if (this.#o.ranges.ranges.length > 0) return done(true);
      this.#rangesArrived = () => done(true);
      signal.addEventListener('abort', aborted, { once: true });
    });
  }

  #warm(): void {
    try {
      this.onWarm?.();
    } catch (error) {
      this.#o.logger.error({ err: error, source: this.name }, 'warming a sharded source failed');
    }
  }
}
