import { podResource, podSchema, type ApiResource, type KubernetesObjectView, type Pod } from '@reconcile-loop/k8s-types';
import { KubeApiClient, type KubeConfigAuth } from './kube-api.js';
import { Reflector, type ReflectorOptions } from './reflector.js';

/** Options for {@link kubeReflector}: the reflector's, with a KubeConfig and an API resource instead of a client. */
export interface KubeReflectorOptions<T extends KubernetesObjectView> extends Omit<ReflectorOptions<T>, 'client'> {
  /** A @kubernetes/client-node `KubeConfig` (1.x or 2.x). */
  kubeConfig: KubeConfigAuth;
  /** Where the kind lives, e.g. `{ group: 'miles.io', version: 'v1', plural: 'trainercells' }`. */
  resource: ApiResource;
}

/** A reflector for any kind (a custom resource included): its schema and API path, auth from a `KubeConfig`. */
export function kubeReflector<T extends KubernetesObjectView>(options: KubeReflectorOptions<T>): Reflector<T> {
  const { kubeConfig, resource, ...rest } = options;
  return new Reflector<T>({ ...rest, client: new KubeApiClient(kubeConfig, resource, { maxFrameSize: rest.maxFrameSize }) });
}

/** A reflector for pods (the bundled kind), scoped by namespace and label / field selector. */
export function podReflector(options: Omit<KubeReflectorOptions<Pod>, 'resource' | 'schema'>): Reflector<Pod> {
  return kubeReflector<Pod>({ name: 'pods', ...options, resource: podResource, schema: podSchema });
}
