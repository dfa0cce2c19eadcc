export { WorkQueue, type WorkQueueOptions } from './work-queue.js';
export {
  WorkQueueBusyError,
  WorkQueueDrainTimeoutError,
  WorkQueueKeyError,
  WorkQueueNotProcessingError,
  WorkQueueStoppedError,
  isQueueStopped,
} from './errors.js';
export type {
  UnfinishedWork,
  WorkQueueAddEvent,
  WorkQueueDoneEvent,
  WorkQueueGetEvent,
  WorkQueueHook,
  WorkQueueObserver,
} from './observer.js';
