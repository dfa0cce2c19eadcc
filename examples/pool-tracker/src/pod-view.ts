/**
 * The pod fields the tracker reads, declared locally so the simulated path needs no Kubernetes
 * package. `Pod` from `@reconcile-loop/k8s-types` (what the reflector yields) satisfies it.
 */
export interface PodView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly labels: Readonly<Record<string, string>>;
    /** Set once a graceful deletion began (the pod is Terminating until the kubelet finishes it). */
    readonly deletionTimestamp?: number | undefined;
  };
  readonly status: {
    readonly phase?: string | undefined;
    readonly conditions: ReadonlyArray<{ readonly type: string; readonly status: string }>;
    readonly containerStatuses: ReadonlyArray<{ readonly name: string; readonly ready: boolean; readonly restartCount: number }>;
  };
}

/** The pod's `Ready` condition is `True`. */
export function isReady(pod: PodView): boolean {
  return pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** A graceful deletion began: kubectl shows the pod as `Terminating`. */
export function isTerminating(pod: PodView): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

/** Container restarts summed over the pod's containers. */
export function restarts(pod: PodView): number {
  return pod.status.containerStatuses.reduce((sum, c) => sum + c.restartCount, 0);
}

/** The object key: `namespace/name` (client-go's `MetaNamespaceKeyFunc`). */
export function podKey(pod: PodView): string {
  return pod.metadata.namespace ? `${pod.metadata.namespace}/${pod.metadata.name}` : pod.metadata.name;
}
