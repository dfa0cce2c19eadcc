// Every module of the package, for tests that reach past the public entries (a test-only barrel).
export * from '../src/errors.js';
export * from '../src/transport.js';
export * from '../src/lines.js';
export * from '../src/rate-limiter.js';
export * from '../src/client.js';
export * from '../src/paths.js';
export * from '../src/types.js';
export { ResourceClient, DEFAULT_PAGE_SIZE, type SubresourceClient } from '../src/resource.js';
export { toStatus } from '../src/status-body.js';
export { decodeJsonBody, readListBody } from '../src/body.js';
export * from '../src/retry-on-conflict.js';
export * from '../src/status.js';
export * from '../src/finalizers.js';
export * from '../src/create-delete.js';
export * from '../src/events/event.js';
export * from '../src/events/recorder.js';
export { COMBINED_PREFIX, DEFAULT_AGGREGATE_INTERVAL_MS, DEFAULT_AGGREGATE_MAX_EVENTS } from '../src/events/aggregator.js';
export * from '../src/apply.js';
