export * from './errors.js';
export * from './record.js';
export * from './lease-lock.js';
export * from './options.js';
export { LeaderElector, DEFAULT_HEALTH_TOLERANCE_MS, type LeaderHealth } from './elector.js';
export * from './run-when-leader.js';
