/**
 * The loop's sources: the primary one (the parent kind, or the pod tracker's one kind) and any
 * secondary ones, each a stream driver over its own store. Stores never share a driver, so a relist
 * (a replace) of one source rewrites only its own store.
 */
import {
  CacheMeter,
  ObjectStore,
  type CacheCost,
  type KeyMap,
  type ObjectKey,
  type SourceEvent,
  type StoreReader,
} from '@reconcile-loop/object-store';
import type { Clock, Logger, Key } from '@reconcile-loop/primitives';
import { StreamDriver, type StoreWriter } from '@reconcile-loop/stream-driver';
import type { MapCaches, SecondaryReaders } from './context.js';
import { admission } from './filters.js';
import type { ReconcileLoopOptions, SecondarySource } from './options.js';
import { ownerKeyMap } from './owners.js';
import type { ShardAdmission } from './shard.js';
import { ownedShardValue, primaryShardValue, ShardedSource } from './shard-sources.js';

/** One source as the loop drives it. */
export interface WiredSource<P extends Key> {
  readonly name: string;
  readonly driver: StreamDriver<unknown, P>;
  /** Parent keys with at least one object in this source's store (what resync re-drives). */
  parents(): P[];
  /** What this source's store holds and costs, and its memory budget (the store's `CacheMeter`). */
  cost(): CacheCost;
  /** Settles when the driver's run ends (undefined before `start()`). */
  run: Promise<void> | undefined;
  done: boolean;
}

/** Everything built from the options: the sources in order (primary first) and the stores' read views. */
export interface Wiring<T, P extends Key, S> {
  readonly sources: readonly WiredSource<P>[];
  /** The primary store; reconciles read it through `primary.reader`. */
  readonly primary: ObjectStore<T, P>;
  readonly secondaries: ReadonlyMap<string, StoreReader<unknown, P>>;
  readonly readers: SecondaryReaders<S, P>;
}

/**
 * The stores, built before anything that reads them: the offer gate (the primary store's parents),
 * the expectations (the secondary stores) and then the drivers that write them. Every source's
 * store is an object-store `ObjectStore`, configured for its role (see {@link buildStores}).
 */
export interface Stores<T, P extends Key, S> {
  readonly primary: ObjectStore<T, P>;
  readonly secondaries: ReadonlyMap<string, ObjectStore<unknown, P>>;
  readonly readers: SecondaryReaders<S, P>;
}

export interface WiringContext<P extends Key> {
  /**
   * Called after a store holds an event, with the parents it affected (cache before notify) and
   * whether the event was a listing (`replace`: the first sync or a relist).
   */
  onAffected(parents: ReadonlySet<P>, source: string, listing: boolean): void;
  /** Called after a store applied a `release` (a sharded source's ranges changed), with the parents it released. */
  onReleased(parents: ReadonlySet<P>, source: string): void;
  /**
   * Called after secondary store `name` applied an event; the parents it returns (their
   * expectations just became satisfied) join the event's affected parents, so each is offered once.
   */
  onApplied(name: string, event: SourceEvent<unknown>, deleted: unknown): readonly P[];
  /** Whether `onApplied` wants `deleted`, the object a delete removes (read from the store before it applies). */
  wantsDeleted(): boolean;
  /** With `shard.gate`: the ranges every sharded source follows (see shard-sources.ts). */
  shard: ShardAdmission<P> | undefined;
  clock: Clock;
  logger: Logger;
}

/**
 * Builds one store per source, primary first; options were validated before. The one store type
 * serves every role through its options:
 * - the primary: the user's `keyMap` (one parent per object, or several), an object it cannot map
 *   evicted (`unmapped: 'evict'`: a pod tracker's pod without its label is served under no pool);
 * - a secondary: `unmapped: 'keep'` (an owned object without an owner reference is still cached, for
 *   `loop.stores` and the indexes), and for a `keyMap` source (controller-runtime's
 *   `EnqueueRequestsFromMapFunc`) `remap`, since its map reads the other caches: it is bound to them
 *   here (`caches`), as object-store's key map takes only the object and its key;
 * - every source: its create, update and delete filters as the store's `admit`.
 */
export function buildStores<T, P extends Key, S>(options: ReconcileLoopOptions<T, P, S>, logger: Logger): Stores<T, P, S> {
  const primaryFilters = { create: options.createFilter, update: options.updateFilter, delete: options.deleteFilter };
  const primary = new ObjectStore<T, P>({
    name: options.source.name,
    keyMap: options.keyMap,
    admit: admission<T>(primaryFilters, options.source.name, logger),
    indexers: options.indexers,
    logger,
  });
  const secondaries = new Map<string, ObjectStore<unknown, P>>();
  const readers: Record<string, StoreReader<unknown, P>> = {};
  // One view of every store for the key maps; `readers` is filled below and frozen with it. Maps
  // run only on events, after construction, so they always see every store.
  const caches: MapCaches<T, P, S> = Object.freeze({ store: primary.reader, stores: readers as SecondaryReaders<S, P> });
  type AnySecondary = SecondarySource<unknown, P, MapCaches<T, P, S>>;
  for (const [name, spec] of Object.entries((options.secondary ?? {}) as Record<string, AnySecondary>)) {
    const userMap = spec.keyMap;
    const keyMap: KeyMap<unknown, P> =
      userMap === undefined ? (ownerKeyMap(spec.owner!) as KeyMap<unknown, P>) : (object, key) => userMap(object, key, caches);
    const filters = { create: spec.createFilter, update: spec.updateFilter, delete: spec.deleteFilter };
    const store = new ObjectStore<unknown, P>({
      name: spec.source.name,
      keyMap,
      unmapped: 'keep',
      remap: userMap !== undefined,
      admit: admission(filters, spec.source.name, logger),
      indexers: spec.indexers,
      logger,
    });
    secondaries.set(name, store);
    readers[name] = store.reader;
  }
  return { primary, secondaries, readers: Object.freeze(readers) as SecondaryReaders<S, P> };
}

/**
 * Builds one stream driver per source over the stores built before, each telling `ctx` what its
 * events affected. Nothing runs until the loop starts the drivers.
 */
export function wireSources<T, P extends Key, S>(
  options: ReconcileLoopOptions<T, P, S>,
  stores: Stores<T, P, S>,
  ctx: WiringContext<P>,
): Wiring<T, P, S> {
  const { clock, logger } = ctx;
  const field = options.shard?.field ?? 'uid';
  /** With a shard gate and a hashed value: the source and its writer follow the ranges. */
  const sharded = <U>(
    source: ReconcileLoopOptions<U, P>['source'],
    writer: StoreWriter<U, P>,
    spec: { valueOf: (object: unknown) => string | undefined; reshard: boolean; has: (key: ObjectKey) => boolean } | undefined,
  ): [ReconcileLoopOptions<U, P>['source'], StoreWriter<U, P>] => {
    if (ctx.shard === undefined || spec === undefined) return [source, writer];
    const follower = new ShardedSource<U, P>({
      ...{ source, writer, has: spec.has, valueOf: spec.valueOf, reshard: spec.reshard ? field : undefined },
      ...{ ranges: ctx.shard, onReleased: (parents) => ctx.onReleased(parents, source.name), logger },
    });
    return [follower.source, follower.writer];
  };
  /**
   * `givenStore` is what the driver writes (the primary's meter itself; for a secondary, `observed`
   * around its meter); `meter` is read for the source's `cache`.
   */
  const wire = <U>(
    given: ReconcileLoopOptions<U, P>['source'],
    givenStore: StoreWriter<U, P>,
    meter: CacheMeter<U, P>,
    parents: () => P[],
    shard?: Parameters<typeof sharded<U>>[2],
  ): WiredSource<P> => {
    const [source, store] = sharded(given, givenStore, shard);
    // A source's reopen backoff is its own `retry` (object-store's Source.retry), read by the driver.
    const driver = new StreamDriver<U, P>({
      clock,
      logger,
      source,
      store,
      onAffected: (affected, type) =>
        type === 'release' ? ctx.onReleased(affected, source.name) : ctx.onAffected(affected, source.name, type === 'replace'),
    });
    const cost = () => meter.cost();
    return { name: source.name, driver: driver as StreamDriver<unknown, P>, parents, cost, run: undefined, done: false };
  };
  const { primary } = stores;
  // Every store is written through its meter, so what it holds is counted where it is held.
  const meterOf = <U>(store: ObjectStore<U, P>, name: string, budgetBytes: number | undefined) =>
    new CacheMeter<U, P>(store, { budgetBytes, logger, name });
  const primaryMeter = meterOf(primary, options.source.name, options.memoryBudgetBytes);
  const sources: WiredSource<P>[] = [
    wire(options.source, primaryMeter, primaryMeter, () => primary.parents(), {
      valueOf: primaryShardValue(field),
      reshard: true,
      has: (key) => primary.get(key) !== undefined,
    }),
  ];
  type AnySecondary = SecondarySource<unknown, P, MapCaches<T, P, S>>;
  for (const [name, spec] of Object.entries((options.secondary ?? {}) as Record<string, AnySecondary>)) {
    const store = stores.secondaries.get(name)!;
    const meter = meterOf(store, spec.source.name, spec.memoryBudgetBytes);
    const observed: StoreWriter<unknown, P> = {
      apply: (event) => {
        const deleted = event.type === 'delete' && ctx.wantsDeleted() ? store.get(event.key) : undefined;
        const affected = meter.apply(event);
        const ready = ctx.onApplied(name, event, deleted);
        return ready.length === 0 ? affected : new Set([...affected, ...ready]);
      },
    };
    // Owned objects live with their parent's shard; a keyMap source's objects need not (not filtered).
    const shard =
      spec.owner === undefined
        ? undefined
        : {
            valueOf: ownedShardValue(field, spec.owner),
            reshard: field === 'namespace',
            has: (key: ObjectKey) => store.get(key) !== undefined,
          };
    sources.push(wire(spec.source, observed, meter, () => store.parents(), shard));
  }
  return { sources, primary, secondaries: stores.secondaries, readers: stores.readers };
}
