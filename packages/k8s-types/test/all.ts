// Every module of the package, for tests that reach past the public entries (a test-only barrel).
export * from '../src/errors.js';
export * from '../src/meta.js';
export * from '../src/pod.js';
export * from '../src/watch.js';
export type { BookmarkFrame, ErrorFrame, ObjectFrame, Status, StatusCause, WatchFrame } from '../src/watch-frame.js';
export { compactOutput, compactView } from '../src/compact.js';
export { cutWatchLine, metadataKeysRead, type CutLine } from '../src/frame-cut.js';
export type { ListItem, ListPage } from '../src/bytes/frames.js';
export { useWasmScan, wasmScanAvailable } from '../src/bytes/wasm-scan.js';
export { listContinueToken } from '../src/bytes/list-continue.js';
