import type { ServerResponse } from 'node:http';
import type { ResourceCatalog } from '../kinds/catalog.js';
import type { ResourceType } from '../kinds/resource.js';
import { methodNotAllowed, pathNotFound } from '../status.js';
import { sendJson, sendStatus } from './io.js';

/** What discovery answers need besides the catalog. */
export interface DiscoveryInfo {
  host: string;
  port: number;
  version: { major: string; minor: string; gitVersion: string };
}

/** `metav1.APIResource` entries for one group/version, as `/api/v1` and `/apis/{g}/{v}` list them. */
export function apiResourceList(groupVersion: string, resources: readonly ResourceType[]): Record<string, unknown> {
  const out: Record<string, unknown>[] = [];
  for (const r of resources) {
    const main: Record<string, unknown> = {
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    };
    if (r.shortNames.length > 0) main['shortNames'] = [...r.shortNames];
    if (r.categories.length > 0) main['categories'] = [...r.categories];
    out.push(main);
    if (r.statusSubresource) {
      out.push({ name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources: out };
}

/** True for the paths discovery serves (version, health, group and resource lists). */
export function isDiscoveryPath(segments: string[]): boolean {
  const path = segments.join('/');
  return (
    path === 'version' ||
    path === 'api' ||
    path === 'api/v1' ||
    path === 'apis' ||
    path === 'healthz' ||
    path === 'livez' ||
    path === 'readyz' ||
    (segments[0] === 'apis' && (segments.length === 2 || segments.length === 3)) ||
    (segments[0] === 'api' && segments[1] === 'v1' && segments[2] === 'namespaces' && segments.length === 4)
  );
}

/** Answers a discovery path (see {@link isDiscoveryPath}); groups and versions derive from the catalog. */
export function serveDiscovery(catalog: ResourceCatalog, info: DiscoveryInfo, segments: string[], method: string, res: ServerResponse): void {
  const path = segments.join('/');
  if (method !== 'GET') {
    sendStatus(res, methodNotAllowed());
    return;
  }
  if (path === 'healthz' || path === 'livez' || path === 'readyz') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('ok');
    return;
  }
  if (path === 'version') {
    sendJson(res, 200, {
      ...info.version,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2025-01-01T00:00:00Z',
      goVersion: 'go1.23.0',
      compiler: 'gc',
      platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    });
    return;
  }
  if (path === 'api') {
    sendJson(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${info.host}:${info.port}` }] });
    return;
  }
  if (path === 'api/v1') {
    sendJson(res, 200, apiResourceList('v1', catalog.inGroupVersion('', 'v1')));
    return;
  }
  if (segments[2] === 'namespaces' && segments.length === 4) {
    // Every namespace exists here; kubectl occasionally reads one.
    sendJson(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: segments[3] }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
    return;
  }
  const groups = catalog.groups();
  const groupDoc = (g: string): Record<string, unknown> => {
    const versions = (groups.get(g) ?? []).map((v) => ({ groupVersion: `${g}/${v}`, version: v }));
    return { name: g, versions, preferredVersion: versions[0] };
  };
  if (path === 'apis') {
    sendJson(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups.keys()].map(groupDoc) });
    return;
  }
  const g = segments[1]!;
  if (!groups.has(g)) {
    sendStatus(res, pathNotFound());
    return;
  }
  if (segments.length === 2) {
    sendJson(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(g) });
    return;
  }
  const served = catalog.inGroupVersion(g, segments[2]!);
  if (served.length === 0) {
    sendStatus(res, pathNotFound());
    return;
  }
  sendJson(res, 200, apiResourceList(`${g}/${segments[2]!}`, served));
}
