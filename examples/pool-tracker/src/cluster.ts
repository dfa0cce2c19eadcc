import type { Logger, Source } from '@reconcile-loop/loop';
import type { BackoffPolicy } from '@reconcile-loop/primitives';
import type { PodView } from './pod-view.js';

/** Where to find the cluster and which pods to track. */
export interface ClusterOptions {
  /** Path to a kubeconfig; default: `KUBECONFIG` / `~/.kube/config`, as the Kubernetes client resolves it. */
  kubeconfig?: string | undefined;
  /** A kubeconfig's YAML text (the embedded apiserver's `server.kubeconfig()`); takes precedence over `kubeconfig`. */
  kubeconfigYaml?: string | undefined;
  namespace: string;
  /** A label selector (e.g. `pool`, `pool in (engines,trainers)`); it should select only pods carrying the pool label. */
  selector: string;
  logger: Logger;
  /** The reflector's retries (default 1 s doubling to 30 s); the embedded scenario's tests shrink them. */
  retry?: BackoffPolicy | undefined;
}

/** The cluster path could not be set up (no usable kubeconfig). */
export class ClusterSourceUnavailableError extends Error {
  readonly code = 'POOL_TRACKER_CLUSTER_UNAVAILABLE' as const;
  override readonly name = 'ClusterSourceUnavailableError';
}

/**
 * The `Source<PodView>` for a real cluster (or the embedded apiserver, which takes the same path): a
 * pod reflector from `@reconcile-loop/reflector`, authenticated by a client-node `KubeConfig`. Both
 * imports are dynamic, so the in-process path never loads a Kubernetes client. `Pod` from k8s-types satisfies `PodView`, so the reflector plugs in as is.
 */
export async function openClusterSource(options: ClusterOptions): Promise<Source<PodView>> {
  const [{ KubeConfig }, { podReflector }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('@reconcile-loop/reflector'),
  ]);
  const kubeConfig = new KubeConfig();
  try {
    if (options.kubeconfigYaml !== undefined) kubeConfig.loadFromString(options.kubeconfigYaml);
    else if (options.kubeconfig !== undefined) kubeConfig.loadFromFile(options.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (cause) {
    throw new ClusterSourceUnavailableError(`cannot load the kubeconfig: ${(cause as Error).message}`, { cause });
  }
  if (!kubeConfig.getCurrentCluster()) {
    throw new ClusterSourceUnavailableError('the kubeconfig has no current cluster');
  }
  return podReflector({
    kubeConfig,
    name: `pods(${options.namespace}, ${options.selector})`,
    namespace: options.namespace,
    labelSelector: options.selector,
    logger: options.logger,
    retry: options.retry,
  });
}
