export * from './events.js';
export * from './logger.js';
export * from './clock.js';
export * from './object-store.js';
export * from './manual-clock.js';
export * from './source-health.js';
