import type { ApiResource } from '@reconcile-loop/k8s-types';

/**
 * The collection path of `resource`: `/api/v1/namespaces/{ns}/pods` or `/api/v1/pods` for the core
 * group, `/apis/{group}/{version}/namespaces/{ns}/{plural}` (or without the namespace) otherwise.
 */
export function collectionPath(resource: ApiResource, namespace?: string): string {
  const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource.plural}` : `${base}/${resource.plural}`;
}

/** The path of one object, or of one of its subresources (`status`, `scale`, `eviction`...). */
export function objectPath(resource: ApiResource, name: string, namespace?: string, subresource?: string): string {
  const path = `${collectionPath(resource, namespace)}/${encodeURIComponent(name)}`;
  return subresource ? `${path}/${subresource}` : path;
}

/** `v1` for the core group, `{group}/{version}` otherwise. */
export function apiVersionOf(resource: ApiResource): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}
