export { ReconcileLoop, type StopOptions, type StopReport } from './loop.js';
export type { ReconcileContext, Reconcile, ReconcileResult, SecondaryReaders } from './context.js';
export type { SecondaryStoreReader } from './secondary-store.js';
export { DEFAULT_EXPECTATIONS_TTL_MS, type ExpectationRecorder } from './expectations.js';
export { ownerKeyMap, type OwnerSelector, type OwnedObjectView, type SecondaryKeyMap } from './owners.js';
export { resourceVersionChanged, generationChanged, type UpdateFilter } from './filters.js';
export {
  DEFAULT_RESYNC_PERIOD_MS,
  DEFAULT_SYNC_TIMEOUT_MS,
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_HEALTH_LIMITS,
  MAX_CONCURRENCY,
  type ReconcileLoopOptions,
  type SecondarySource,
  type RetryOptions,
  type HealthLimits,
} from './options.js';
export {
  verdicts,
  type LoopHealth,
  type SourceStatus,
  type HealthCheck,
  type HealthVerdict,
  type HealthInputs,
  type ReconcileLoopState,
} from './health.js';
export type { InFlightReconcile, ReconcileCounters } from './runner.js';
export type {
  ReconcileLoopObserver,
  ReconcileOutcome,
  ReconcileStartEvent,
  ReconcileEndEvent,
  LoopBinding,
  LoopSnapshot,
  SourceSnapshot,
} from './observer.js';
export { LEADERSHIP_RETRY, type LeaderGate } from './leadership.js';
export type { ParkedKey, Fingerprint } from '@reconcile-loop/retry-scheduler';
export { healthHandler, type HealthHandlerOptions, type HealthReporter } from './http.js';
export {
  LoopAlreadyStartedError,
  LoopStoppedError,
  SyncTimeoutError,
  ReconcileTimeoutError,
  StopInsideReconcileError,
  LeadershipEndedError,
  isLeadershipEnded,
  TerminalError,
  InvalidReconcileResultError,
  isTerminalError,
  describeError,
} from './errors.js';

// Re-exported so an in-process user needs this one package: a source, its events, and the types
// a reconcile sees, plus ManualClock for testing a controller without real time.
export {
  InProcessSource,
  type InProcessSourceOptions,
  type StreamDriverHealth,
} from '@reconcile-loop/stream-driver';
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
  type ObjectStoreReader,
  type SourceHealth,
  type QuarantinedObject,
  type PermanentSourceError,
} from '@reconcile-loop/object-store';
export {
  silentLogger,
  systemClock,
  ManualClock,
  InvalidClockStepError,
  type Logger,
  type Clock,
  type Key,
  type BackoffPolicy,
} from '@reconcile-loop/primitives';
