import type { ResourceCatalog } from '../kinds/catalog.js';
import type { ApiServerVerb } from '../options.js';
import type { Route } from '../verbs/context.js';

/**
 * Maps a resource path to its route: `/api/v1/...` is the core group, `/apis/{g}/{v}/...` a named
 * group; `namespaces/{ns}/` precedes a namespaced kind's plural; `{name}` and `{name}/status` follow.
 */
export function route(catalog: ResourceCatalog, segments: string[]): Route | 'not-found' {
  let rest: string[];
  let group: string;
  let version: string;
  if (segments[0] === 'api' && segments[1] === 'v1') {
    group = '';
    version = 'v1';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 4) {
    group = segments[1]!;
    version = segments[2]!;
    rest = segments.slice(3);
  } else return 'not-found';
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const nsResource = catalog.at(group, version, rest[2]!);
    // `/api/v1/namespaces/{name}/status` is the namespace's own status, not a kind inside it.
    if (nsResource !== undefined && nsResource.namespaced) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
  }
  const resource = catalog.at(group, version, rest[0] ?? '');
  if (resource === undefined) return 'not-found';
  if (namespace !== undefined && !resource.namespaced) return 'not-found';
  if (rest.length === 1) return { kind: 'collection', resource, namespace };
  if (resource.namespaced && namespace === undefined) return 'not-found';
  if (rest.length === 2) return { kind: 'item', resource, namespace, name: rest[1]! };
  if (rest.length === 3 && rest[2] === 'status' && resource.statusSubresource)
    return { kind: 'status', resource, namespace, name: rest[1]! };
  if (rest.length === 3 && (rest[2] === 'binding' || rest[2] === 'eviction') && resource.id === '/pods')
    return { kind: rest[2], resource, namespace, name: rest[1]! };
  return 'not-found';
}

/** The verb a method on a route is, or undefined when the route does not serve that method (405). */
export function verbOf(method: string, r: Route, watch: boolean): Exclude<ApiServerVerb, 'discovery'> | undefined {
  const namespacedOk = r.namespace !== undefined || !r.resource.namespaced;
  if (r.kind === 'binding' || r.kind === 'eviction') return method === 'POST' ? 'create' : undefined;
  if (method === 'GET') return watch ? 'watch' : r.kind === 'collection' ? 'list' : 'get';
  if (method === 'POST' && r.kind === 'collection' && namespacedOk) return 'create';
  if (method === 'PUT' && r.kind !== 'collection') return 'update';
  if (method === 'PATCH' && r.kind !== 'collection') return 'patch';
  if (method === 'DELETE' && r.kind === 'item') return 'delete';
  if (method === 'DELETE' && r.kind === 'collection' && namespacedOk) return 'deletecollection';
  return undefined;
}
