/**
 * @reconcile-loop/k8s-types/internal: the readers kube-client and the reflector use on the hot path
 * (an object, a watch frame or a LIST page read from its bytes or line, the frame cut, the WASM
 * scanner switch). Not part of the stable API: names and shapes here change in any release.
 */

// Reading objects, watch frames and LIST pages.
export {
  parseListPage,
  parseObject,
  parseWatchFrame,
  parseWatchLine,
  readWatchFrame,
} from './watch.js';
export type { ListItem, ListPage } from './decode/frames.js';
export { listContinueToken } from './decode/list-continue.js';
// Cutting what a view does not read out of a watch line before it is parsed.
export { cutWatchLine, metadataKeysRead } from './decode/frame-cut.js';
// The WASM byte scanner: on by default where it loads.
export { useWasmScan } from './decode/wasm-scan.js';
