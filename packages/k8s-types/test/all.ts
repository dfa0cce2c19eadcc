// Every module of the package, for tests that reach past the public entries (a test-only barrel).
export * from '../src/errors.js';
export * from '../src/meta.js';
export { objectKey } from '@reconcile-loop/primitives';
export { intern } from '../src/decode/share.js';
export * from '../src/metadata.js';
export * from '../src/pod.js';
export * from '../src/watch.js';
export type { BookmarkFrame, ErrorFrame, ObjectFrame, Status, StatusCause, WatchFrame } from '../src/watch-frame.js';
export { compactOutput, compactView } from '../src/decode/compact.js';
export { cutWatchLine, metadataKeysRead, type CutLine } from '../src/decode/frame-cut.js';
export type { ListItem, ListPage } from '../src/decode/frames.js';
export { useWasmScan, wasmScanAvailable } from '../src/decode/wasm-scan.js';
export { listContinueToken } from '../src/decode/list-continue.js';
