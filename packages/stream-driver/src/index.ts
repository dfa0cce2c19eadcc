/** @reconcile-loop/stream-driver: pumps a source's stream into a store, reopening it after the source's own retry. */
// The driver, its options and its health.
export { StreamDriver } from './driver.js';
export type { StreamDriverOptions, StoreWriter } from './options.js';
export type { StreamDriverHealth } from './driver-health.js';
// The in-process source.
export { InProcessSource, type InProcessSourceOptions } from './in-process-source.js';
// Errors (all extend primitives' ReconcileLoopError) and a guard.
export {
  StreamDriverAlreadyRunError,
  StreamDriverStoppedError,
  isDriverStopped,
  StreamDidNotOpenWithReplaceError,
} from './errors.js';
