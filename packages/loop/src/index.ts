/**
 * @reconcile-loop/loop: a level-triggered reconcile loop over one or more sources. The front door
 * holds what a controller needs; the re-exports at the end are the short list the README names
 * ("Which door holds what"), so an in-process controller needs this one package.
 */
// The loop, its options and what a reconcile sees.
export { ReconcileLoop, type StopReport } from './loop.js';
export type { ReconcileLoopOptions, SecondarySource } from './options.js';
export type { ReconcileContext, Reconcile, ReconcileResult, MapCaches } from './context.js';
export type { ExpectationRecorder } from './expectations.js';
export type { LeaderGate } from './leadership.js';
export type { ShardGate } from './shard.js';
export type { ParkedKey, Fingerprint } from '@reconcile-loop/retry-scheduler';
// Mapping secondary objects to parents, and skipping events no reconcile needs (predicates).
export { ownerKeyMap, type OwnerSelector, type SecondaryKeyMap } from './owners.js';
export {
  resourceVersionChanged,
  generationChanged,
  labelsChanged,
  annotationsChanged,
  type UpdateFilter,
  type ObjectFilter,
} from './filters.js';
// Health, probes and observation.
export { healthHandler, type HealthReporter } from './http.js';
// The parts of a health report and of an observer's events are named by the types that hold them
// (`LoopHealth['sources'][number]`, `Parameters<ReconcileLoopObserver<P>['onReconcileStart']>`).
export type { LoopHealth } from './health.js';
export type { ReconcileLoopObserver, ReconcileEndEvent, LoopBinding, LoopSnapshot } from './observer.js';
// Errors (all extend primitives' ReconcileLoopError) and their guards.
export {
  LoopAlreadyStartedError,
  LoopStoppedError,
  isLoopStopped,
  SyncTimeoutError,
  ReconcileTimeoutError,
  StopInsideReconcileError,
  LeadershipEndedError,
  isLeadershipEnded,
  ShardMovedError,
  TerminalError,
  isTerminalError,
  InvalidReconcileResultError,
  describeError,
} from './errors.js';

// Re-exported from stream-driver: the in-process source.
export { InProcessSource, type InProcessSourceOptions, type StreamDriverHealth } from '@reconcile-loop/stream-driver';
// Re-exported from object-store: the source contract and its events, and the one reader every store answers.
export {
  DEFAULT_SOURCE_RETRY,
  upsertEvent,
  deleteEvent,
  replaceEvent,
  isPermanentSourceError,
  type Source,
  type SourceEvent,
  type UpsertEvent,
  type DeleteEvent,
  type ReplaceEvent,
  type ObjectKey,
  type KeyMap,
  type StoreReader,
  type IndexReader,
  type Indexers,
  type IndexFunc,
  type SourceHealth,
  type QuarantinedObject,
  type PermanentSourceError,
} from '@reconcile-loop/object-store';
// Re-exported from primitives: time (ManualClock to test a controller without real time), logging, keys, retries, options errors.
export {
  systemClock,
  ManualClock,
  silentLogger,
  OptionsError,
  type Clock,
  type Logger,
  type Key,
  type BackoffPolicy,
} from '@reconcile-loop/primitives';
