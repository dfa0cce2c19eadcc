/**
 * @reconcile-loop/object-store: the cache a reconcile reads, and the source contract that fills it.
 */
// The store, for every source: objects by object key, indexed by the parent keys a key map attributes them to.
export {
  ObjectStore,
  type ObjectStoreOptions,
  type KeyMap,
  UnmappableObjectError,
  InvalidSourceEventError,
} from './object-store.js';
// The one read interface every store answers, and the read-only view a store hands out (`store.reader`).
export { readerOf, type StoreReader } from './reader.js';
// User-defined indexes (client-go's Indexers): declared per store, queried through its reader.
export { UnknownIndexError, type IndexFunc, type Indexers, type IndexReader } from './indexes.js';
// Source events: the wire format a source streams into a store, and their constructors.
export {
  upsertEvent,
  deleteEvent,
  replaceEvent,
  releaseEvent,
  type ObjectKey,
  type SourceEvent,
  type UpsertEvent,
  type DeleteEvent,
  type ReplaceEvent,
  type ReleaseEvent,
} from './events.js';
// What a store's objects cost, counted by the writer in front of it, and its optional memory budget.
export { CacheMeter, estimateBytes, type CacheCost, type CacheMeterOptions } from './cache-cost.js';
// The source contract: what a stream driver opens, how it is retried, and how it reports its health.
export { DEFAULT_SOURCE_RETRY, type Source } from './source.js';
export {
  reportsHealth,
  isPermanentSourceError,
  type SourceHealth,
  type SourceListLag,
  type SourceShard,
  type QuarantinedObject,
  type PermanentSourceError,
} from './source-health.js';
