/** The object shapes the embedded apiserver stores: plain JSON with Kubernetes' `metadata`. */

/** `metav1.ObjectMeta`, the members this server maintains plus anything a client sends. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: unknown[];
  [key: string]: unknown;
}

/** Any stored object: `kind`/`apiVersion`/`metadata` plus free-form members (`spec`, `status`, ...). */
export interface ApiServerObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** One container of a pod, as far as this server reads it. */
export interface PodContainer {
  name: string;
  image?: string;
  [key: string]: unknown;
}

/** One entry of `status.containerStatuses`. */
export interface PodContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  started?: boolean;
  image?: string;
  imageID?: string;
  containerID?: string;
  state?: Record<string, unknown>;
  lastState?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The pod members the server reads, defaults and the kubelet emulation writes. */
export interface ApiServerPod extends ApiServerObject {
  spec?: {
    nodeName?: string;
    containers?: PodContainer[];
    initContainers?: PodContainer[];
    restartPolicy?: string;
    terminationGracePeriodSeconds?: number;
    [key: string]: unknown;
  };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; [key: string]: unknown }>;
    containerStatuses?: PodContainerStatus[];
    podIP?: string;
    hostIP?: string;
    startTime?: string;
    reason?: string;
    [key: string]: unknown;
  };
}

/** A watch event type on the wire. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
