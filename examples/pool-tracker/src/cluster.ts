import type { Logger, Source } from '@reconcile-loop/loop';
import type { PodView } from './pod-view.js';

/** Where to find the cluster and which pods to track. */
export interface ClusterOptions {
  /** Path to a kubeconfig; default: `KUBECONFIG` / `~/.kube/config` as the Kubernetes client resolves it. */
  kubeconfig?: string;
  namespace: string;
  /** A label selector (e.g. `pool`, `pool in (engines,trainers)`); it should select only pods carrying the pool label. */
  selector: string;
  logger: Logger;
}

/** The cluster path could not be set up (reflector missing or incompatible). */
export class ClusterSourceUnavailableError extends Error {
  readonly code = 'POOL_TRACKER_CLUSTER_UNAVAILABLE' as const;
  override readonly name = 'ClusterSourceUnavailableError';
}

/**
 * ─── LEAD: finish wiring here ────────────────────────────────────────────────────────────────
 * Builds the `Source<PodView>` for a real cluster through `@reconcile-loop/reflector`. When this
 * demo was written the reflector was still a stub, so this looks up a factory by name at runtime.
 * Replace the body with the reflector's real constructor call; nothing else in the demo changes
 * (the tracker takes any `Source<PodView>`, and `Pod` from k8s-types satisfies `PodView`).
 * The import is dynamic so the simulated path never loads `@kubernetes/client-node`.
 * ─────────────────────────────────────────────────────────────────────────────────────────────
 */
export async function openClusterSource(options: ClusterOptions): Promise<Source<PodView>> {
  let reflector: Record<string, unknown>;
  try {
    reflector = (await import('@reconcile-loop/reflector')) as Record<string, unknown>;
  } catch (cause) {
    throw new ClusterSourceUnavailableError('cannot load @reconcile-loop/reflector', { cause });
  }
  const factory = reflector['createPodReflector'];
  if (typeof factory !== 'function') {
    throw new ClusterSourceUnavailableError(
      '@reconcile-loop/reflector does not export createPodReflector yet; run without KUBECONFIG (or with --simulate) for the embedded pool',
    );
  }
  return (factory as (o: Record<string, unknown>) => Source<PodView> | Promise<Source<PodView>>)({
    ...(options.kubeconfig !== undefined && { kubeconfig: options.kubeconfig }),
    namespace: options.namespace,
    labelSelector: options.selector,
    logger: options.logger,
  });
}
