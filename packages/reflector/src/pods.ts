import {
  partialObjectMetadataSchema,
  podResource,
  podSchema,
  type ApiResource,
  type KubernetesObjectView,
  type PartialObjectMetadata,
  type Pod,
} from '@reconcile-loop/k8s-types';
import type { KubeClient, KubeConfigAuth } from '@reconcile-loop/kube-client';
import { OptionsError } from '@reconcile-loop/primitives';
import { KubeApiClient } from './kube-api.js';
import type { ReflectorOptions } from './options.js';
import { Reflector } from './reflector.js';

/**
 * Options for {@link kubeReflector}: the reflector's, with an API resource and either a `KubeConfig`
 * or a `KubeClient` instead of a list/watch client.
 */
export interface KubeReflectorOptions<T extends KubernetesObjectView> extends Omit<ReflectorOptions<T>, 'client'> {
  /** A @kubernetes/client-node `KubeConfig` (1.x or 2.x); the reflector builds its own `KubeClient` from it. Give this or `kubeClient`. */
  kubeConfig?: KubeConfigAuth | undefined;
  /** A @reconcile-loop/kube-client `KubeClient`, e.g. the one the reconciler writes through. Give this or `kubeConfig`. */
  kubeClient?: KubeClient | undefined;
  /** Where the kind lives, e.g. `{ group: 'miles.io', version: 'v1', plural: 'trainercells' }`. */
  resource: ApiResource;
}

/** A reflector for any kind (a custom resource included): its schema and API path, over a `KubeClient` (given, or built from a `KubeConfig`). */
export function kubeReflector<T extends KubernetesObjectView>(options: KubeReflectorOptions<T>): Reflector<T> {
  return reflectorOver(options, false);
}

function reflectorOver<T extends KubernetesObjectView>(options: KubeReflectorOptions<T>, metadataOnly: boolean): Reflector<T> {
  const { kubeConfig, kubeClient, resource, ...rest } = options;
  if ((kubeConfig === undefined) === (kubeClient === undefined))
    throw new OptionsError('podReflector', 'give exactly one of kubeConfig and kubeClient');
  return new Reflector<T>({
    ...rest,
    client: new KubeApiClient((kubeClient ?? kubeConfig)!, resource, { maxFrameBytes: rest.maxFrameBytes, metadataOnly }),
  });
}

/**
 * A metadata-only reflector for a kind a controller only owns or watches (controller-runtime's
 * `OnlyMetadata`, kube-rs's `metadata_watcher`): every LIST and WATCH asks the apiserver for
 * `PartialObjectMetadata`, so the wire and the cache carry `apiVersion`, `kind` and `metadata` only
 * (k8s-types' {@link PartialObjectMetadata}: name, namespace, uid, resourceVersion, generation,
 * labels, annotations, ownerReferences, finalizers, creation and deletion timestamps). Everything
 * else is a reflector's: paged LIST, watch-list, 410 relist, bookmarks. Use it as a loop's
 * secondary source for owned objects; `ownerReferences` map them to their parent.
 */
export function metadataReflector(
  options: Omit<KubeReflectorOptions<PartialObjectMetadata>, 'schema'>,
): Reflector<PartialObjectMetadata> {
  return reflectorOver<PartialObjectMetadata>({ ...options, schema: partialObjectMetadataSchema }, true);
}

/** A reflector for pods (the bundled kind), scoped by namespace and label / field selector. */
export function podReflector(options: Omit<KubeReflectorOptions<Pod>, 'resource' | 'schema'>): Reflector<Pod> {
  return kubeReflector<Pod>({ name: 'pods', ...options, resource: podResource, schema: podSchema });
}
