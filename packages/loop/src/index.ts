export {
  ReconcileLoop,
  DEFAULT_RESYNC_PERIOD_MS,
  type ReconcileLoopOptions,
  type ReconcileLoopState,
  type ReconcileContext,
  type Reconcile,
  type RetryOptions,
} from './loop.js';
export {
  ReconcileLoopOptionsError,
  LoopAlreadyStartedError,
  LoopStoppedError,
  SyncTimeoutError,
  ReconcileTimeoutError,
  StopInsideReconcileError,
} from './errors.js';

// Re-exported so an in-process user needs this one package: a source, its events, and the types
// a reconcile sees, plus ManualClock for testing a controller without real time.
export { InProcessSource, DEFAULT_SOURCE_RETRY_DELAY_MS } from '@reconcile-loop/stream-driver';
export {
  upsertEvent,
  deleteEvent,
  replaceEvent,
  silentLogger,
  systemClock,
  ManualClock,
  InvalidClockStepError,
  type Source,
  type SourceEvent,
  type UpsertEvent,
  type DeleteEvent,
  type ReplaceEvent,
  type ObjectKey,
  type ParentKey,
  type KeyMap,
  type ObjectStoreReader,
  type Logger,
  type Clock,
} from '@reconcile-loop/object-store';
