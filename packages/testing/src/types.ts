/** The object shapes the embedded apiserver stores: plain JSON with Kubernetes' `metadata`. */

/** `metav1.ObjectMeta`, the members this server maintains plus anything a client sends. */
export interface ObjectMeta {
  name?: string | undefined;
  generateName?: string | undefined;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  generation?: number | undefined;
  creationTimestamp?: string | undefined;
  deletionTimestamp?: string | undefined;
  deletionGracePeriodSeconds?: number | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  finalizers?: string[] | undefined;
  ownerReferences?: unknown[] | undefined;
  [key: string]: unknown;
}

/** Any stored object: `kind`/`apiVersion`/`metadata` plus free-form members (`spec`, `status`, ...). */
export interface ApiServerObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** One container of a pod, as far as this server reads it. */
export interface PodContainer {
  name: string;
  image?: string | undefined;
  [key: string]: unknown;
}

/** One entry of `status.containerStatuses`. */
export interface PodContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  started?: boolean | undefined;
  image?: string | undefined;
  imageID?: string | undefined;
  containerID?: string | undefined;
  state?: Record<string, unknown> | undefined;
  lastState?: Record<string, unknown> | undefined;
  [key: string]: unknown;
}

/** The pod members the server reads, defaults and the kubelet emulation writes. */
export interface ApiServerPod extends ApiServerObject {
  spec?:
    | {
        nodeName?: string | undefined;
        containers?: PodContainer[] | undefined;
        initContainers?: PodContainer[] | undefined;
        restartPolicy?: string | undefined;
        terminationGracePeriodSeconds?: number | undefined;
        [key: string]: unknown;
      }
    | undefined;
  status?:
    | {
        phase?: string | undefined;
        conditions?: Array<{ type: string; status: string; [key: string]: unknown }> | undefined;
        containerStatuses?: PodContainerStatus[] | undefined;
        podIP?: string | undefined;
        hostIP?: string | undefined;
        startTime?: string | undefined;
        reason?: string | undefined;
        [key: string]: unknown;
      }
    | undefined;
}

/** A watch event type on the wire. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
