export * from './events.js';
export * from './object-store.js';
export * from './source-health.js';
