/**
 * @reconcile-loop/testing — an embedded loopback Kubernetes apiserver (pods, core kinds, namespaces,
 * CRDs and custom resources) with resourceVersion semantics, watch streaming and fault injection.
 */

// The server: start it, drive it through its typed controls, close it.
export {
  ApiServer,
  startApiServer,
  type ApiServerOptions,
  type FutureWatchBehavior,
  type ApiServerResourceRef,
  type PodInput,
  type SeedPodsOptions,
} from './server.js';
export type { ResourceDefinition } from './kinds/resource.js';
export type { KubeconfigOptions } from './kubeconfig.js';
export type { ApiServerDeleteOptions } from './engine/engine.js';
export type { ApiServerObject, ApiServerPod } from './types.js';

// Fault injection and request accounting.
export type { ApiServerVerb, FailNextOptions, InjectedStatus } from './options.js';

// Kubelet and scheduler emulation (`ApiServer.kubelet`).
export type { KubeletEmulator, RunningReadyOptions } from './kubelet.js';

// Errors of the typed controls (the HTTP API answers with Status bodies instead).
export { ApiServerStatusError, ApiServerUsageError } from './errors.js';
