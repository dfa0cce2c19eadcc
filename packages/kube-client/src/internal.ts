/**
 * @reconcile-loop/kube-client/internal: what this repository's own packages and tests need beyond
 * the front door. Not part of the stable API: names and shapes here change in any release.
 */

// Request paths, as the client builds them.
export { collectionPath, objectPath } from './paths.js';
// The one watch-body line splitter (a frame over `maxFrameBytes` ends it).
export { splitLines } from './http/lines.js';
