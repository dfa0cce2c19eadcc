export * from './errors.js';
export * from './meta.js';
export * from './pod.js';
export * from './watch.js';
export { compactOutput, compactView } from './compact.js';
export { cutWatchLine, metadataKeysRead, type CutLine } from './frame-cut.js';
export type { ListItem, ListPage } from './bytes/frames.js';
export { useWasmScan, wasmScanAvailable } from './bytes/wasm-scan.js';
export { listContinueToken } from './bytes/list-continue.js';
