export {
  StreamDriver,
  DEFAULT_CLOSE_TIMEOUT_MS,
  DEFAULT_HEALTHY_STREAM_MS,
  type StreamDriverOptions,
  type StoreWriter,
} from './driver.js';
export type { StreamDriverHealth } from './driver-health.js';
export { InProcessSource, type InProcessSourceOptions } from './in-process-source.js';
export {
  StreamDriverAlreadyRunError,
  StreamDriverStoppedError,
  isDriverStopped,
  StreamDidNotOpenWithReplaceError,
} from './errors.js';
