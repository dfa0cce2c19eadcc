/**
 * @reconcile-loop/reflector: client-go's Reflector as an object-store `Source` — LIST, then WATCH
 * from the resourceVersion, relist when it is rejected, back off, report health. Build one with
 * `podReflector` / `kubeReflector` (over kube-client) or `new Reflector` over any `ListWatchClient`.
 */

// Building a reflector.
export { Reflector } from './reflector.js';
export { kubeReflector, metadataReflector, podReflector, type KubeReflectorOptions } from './pods.js';
export {
  DEFAULT_LIST_PAGE_SIZE,
  DEFAULT_LIST_TIMEOUT_MS,
  type InitialListMode,
  type ReflectorOptions,
} from './options.js';
// Holding one shard of a kind (Kubernetes' sharded LIST/WATCH); `Reflector.reshard` changes it.
export type { ShardOption } from './shard.js';

// Where LIST and WATCH go: kube-client's KubeClient, or any ListWatchClient (a fake in tests).
export { KubeApiClient, reflectorKubeClient, type KubeApiClientOptions } from './kube-api.js';
export type {
  ListPageResult,
  ListRequest,
  ListResult,
  ListWatchClient,
  ListWatchScope,
  WatchRequest,
} from './client.js';

// How a failed WATCH is read: relist (expired, too large, rejected resourceVersion) or retry.
export { watchVerdict } from './classify.js';

// The reflector's own errors (kube-client's pass through as they are); all extend ReconcileLoopError.
export { KubeClientConfigError, ListRejectedError, ListTimeoutError } from './errors.js';
