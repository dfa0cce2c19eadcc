export {
  StreamDriver,
  DEFAULT_SOURCE_RETRY_DELAY_MS,
  type StreamDriverOptions,
  type StoreWriter,
} from './driver.js';
export { InProcessSource } from './in-process-source.js';
export {
  StreamDriverOptionsError,
  StreamDriverAlreadyRunError,
  StreamDriverStoppedError,
  StreamDidNotOpenWithReplaceError,
} from './errors.js';
