/** @reconcile-loop/work-queue: a dedup queue of keys with client-go's per-key exclusion. */
// The queue and its options.
export { WorkQueue, type WorkQueueOptions } from './work-queue.js';
// Errors (all extend primitives' ReconcileLoopError) and the guard a consumer loop uses.
export {
  WorkQueueDrainTimeoutError,
  WorkQueueKeyError,
  WorkQueueNotProcessingError,
  WorkQueueStoppedError,
  isQueueStopped,
} from './errors.js';
// Metrics hooks.
export type { UnfinishedWork, WorkQueueObserver, WorkQueuePriority } from './observer.js';
