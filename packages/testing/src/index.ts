/**
 * @reconcile-loop/testing — an embedded loopback Kubernetes apiserver (pods and registered
 * custom resources) with resourceVersion semantics, watch streaming and fault injection.
 */
export {
  ApiServer,
  startApiServer,
  type ApiServerOptions,
  type FailNextOptions,
  type FutureWatchBehavior,
  type InjectedStatus,
  type PodInput,
  type ResourceRef,
  type SeedPodsOptions,
  type Verb,
} from './server.js';
export { KubeletEmulator, type RunningReadyOptions } from './kubelet.js';
export type { KubeconfigOptions } from './kubeconfig.js';
export type { DeleteOptions, DeleteResult, PatchType } from './engine/engine.js';
export type { ResourceDefinition } from './kinds/resource.js';
export { ApiServerStatusError, ApiServerUsageError } from './errors.js';
export type { KubeStatus, StatusCause, StatusDetails } from './status.js';
export type { KubeObject, ObjectMeta, Pod, PodContainer, PodContainerStatus, WatchEventType } from './types.js';
export { parseLabelSelector, matchesLabels, SelectorParseError, type LabelRequirement } from './selectors.js';
