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
    if (r.id === '/pods') {
      out.push({ name: 'pods/binding', singularName: '', namespaced: true, kind: 'Binding', verbs: ['create'] });
      out.push({
        name: 'pods/eviction',
        singularName: '',
        namespaced: true,
        group: 'policy',
        version: 'v1',
        kind: 'Eviction',
        verbs: ['create'],
      });
    }
    if (r.statusSubresource) {
      out.push({
        name: `${r.plural}/status`,
        singularName: '',
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['get', 'patch', 'update'],
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources: out };
}

/**
 * The Go mux's answer for a path no API group claims (an unknown group, or outside /api and
 * /apis): `404 page not found` as text/plain, not a Status. Paths under /api and under a served
 * group get a JSON Status 404 from the group's own router.
 */
export function sendPlainNotFound(res: ServerResponse): void {
  const body = '404 page not found\n';
  res.writeHead(404, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/** True when a 404 for `segments` is the group router's JSON Status rather than the mux's text/plain. */
export function isApiGroupPath(catalog: ResourceCatalog, segments: string[]): boolean {
  if (segments[0] === 'api') return true;
  return segments[0] === 'apis' && segments.length >= 2 && catalog.groups().has(segments[1]!);
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
    (segments[0] === 'apis' && (segments.length === 2 || segments.length === 3))
  );
}

/** Answers a discovery path (see {@link isDiscoveryPath}); groups and versions derive from the catalog. */
export function serveDiscovery(
  catalog: ResourceCatalog,
  info: DiscoveryInfo,
  segments: string[],
  method: string,
  res: ServerResponse,
): void {
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
    const v = info.version;
    sendJson(res, 200, {
      major: v.major,
      minor: v.minor,
      // Compatibility versions (1.31+): this server emulates its own version and accepts one minor back.
      emulationMajor: v.major,
      emulationMinor: v.minor,
      minCompatibilityMajor: v.major,
      minCompatibilityMinor: String(Math.max(0, Number(v.minor) - 1)),
      gitVersion: v.gitVersion,
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
    sendJson(res, 200, {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${info.host}:${info.port}` }],
    });
    return;
  }
  if (path === 'api/v1') {
    sendJson(res, 200, apiResourceList('v1', catalog.inGroupVersion('', 'v1')));
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
    sendPlainNotFound(res);
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
