/**
 * @reconcile-loop/testing — an embedded loopback Kubernetes apiserver (pods, core kinds, namespaces,
 * CRDs and custom resources) with resourceVersion semantics, watch streaming and fault injection.
 */

// The server: start it, drive it through its typed controls, close it.
// The per-call option bags of ApiServer's methods (seedPods, kubeconfig, deletePod, failNext, ...)
// and the literal unions inside its options are not exported: a call spells them inline.
export { ApiServer, startApiServer, type ApiServerOptions } from './server.js';
export type { ResourceDefinition } from './kinds/resource.js';
export type { ApiServerObject, ApiServerPod } from './types.js';

// Kubelet and scheduler emulation (`ApiServer.kubelet`).
export type { KubeletEmulator } from './kubelet.js';

// Errors of the typed controls (the HTTP API answers with Status bodies instead).
export { ApiServerStatusError, ApiServerUsageError } from './errors.js';
