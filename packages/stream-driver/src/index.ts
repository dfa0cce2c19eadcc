export {
  StreamDriver,
  DEFAULT_CLOSE_TIMEOUT_MS,
  type StreamDriverOptions,
  type StoreWriter,
} from './driver.js';
export {
  DEFAULT_SOURCE_RETRY_DELAY_MS,
  DEFAULT_MAX_SOURCE_RETRY_DELAY_MS,
  DEFAULT_SOURCE_HEALTHY_AFTER_MS,
} from './backoff.js';
export type { StreamDriverHealth } from './driver-health.js';
export { InProcessSource } from './in-process-source.js';
export {
  StreamDriverAlreadyRunError,
  StreamDriverStoppedError,
  isDriverStopped,
  StreamDidNotOpenWithReplaceError,
} from './errors.js';
