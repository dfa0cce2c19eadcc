/**
 * The OpenAPI documents kubectl reads before a write, served from the catalog.
 *
 * kubectl ≥ 1.25 validates on the server: it reads `/openapi/v3`, fetches the document of the
 * object's group/version, and looks for a PATCH operation tagged with the object's
 * `x-kubernetes-group-version-kind` that lists a `fieldValidation` query parameter. Found, it sends
 * the write with `fieldValidation=Strict` and validates nothing itself. Older kubectl (Debian's
 * 1.20) validates on the client from `/openapi/v2` in protobuf, and skips kinds that document
 * does not define; the v2 document here defines none.
 *
 * Schemas are permissive (`x-kubernetes-preserve-unknown-fields`): this server models no kind's
 * full schema. PATCH operations declare no request body media types on purpose: kubectl then
 * computes strategic merge patches from its compiled-in types (which know the merge keys)
 * rather than from these schemas (which do not).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResourceCatalog } from '../kinds/catalog.js';
import type { ResourceType } from '../kinds/resource.js';
import { pathNotFound } from '../status.js';
import { sendJson, sendStatus } from './io.js';

/** True for the paths this module answers: `/openapi/v2`, `/openapi/v3` and `/openapi/v3/...`. */
export function isOpenApiPath(segments: string[]): boolean {
  return segments[0] === 'openapi' && (segments[1] === 'v3' || (segments[1] === 'v2' && segments.length === 2));
}

/** The `/openapi/v3` key of a group/version: `api/v1` for the core group, `apis/{g}/{v}` otherwise. */
function gvKey(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/**
 * The schema name of a kind, in the real server's style: `io.k8s.api.core.v1.Pod` for built-in
 * groups, the reversed group (`com.example.v1.Gadget`) for custom ones.
 */
export function schemaName(r: Pick<ResourceType, 'group' | 'version' | 'kind'>): string {
  if (r.group === 'apiextensions.k8s.io') return `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.${r.version}.${r.kind}`;
  if (r.group === '') return `io.k8s.api.core.${r.version}.${r.kind}`;
  if (r.group.endsWith('.k8s.io') || !r.group.includes('.')) return `io.k8s.api.${r.group.split('.')[0]!}.${r.version}.${r.kind}`;
  return `${r.group.split('.').reverse().join('.')}.${r.version}.${r.kind}`;
}

/** Query parameters every write documents; `fieldValidation` is the one kubectl looks for. */
const WRITE_PARAMS = [
  { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } },
  { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
  {
    name: 'fieldValidation',
    in: 'query',
    description: 'Ignore, Warn or Strict: how the server treats unknown and duplicate fields in the body.',
    schema: { type: 'string', uniqueItems: true },
  },
];

/** The OpenAPI v3 document of one group/version: a PATCH, PUT and POST per kind, and its schema. */
export function groupVersionDocument(
  catalog: ResourceCatalog,
  group: string,
  version: string,
  serverVersion: string,
): Record<string, unknown> | undefined {
  const served = catalog.inGroupVersion(group, version);
  if (served.length === 0) return undefined;
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  const prefix = `/${gvKey(group, version)}`;
  for (const r of served) {
    const gvk = { group: r.group, version: r.version, kind: r.kind };
    const name = schemaName(r);
    const ref = { $ref: `#/components/schemas/${name}` };
    const ok = { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } };
    const op = (action: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      operationId: `${action}${r.kind}`,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
      parameters: WRITE_PARAMS,
      responses: ok,
      ...extra,
    });
    const collection = r.namespaced ? `${prefix}/namespaces/{namespace}/${r.plural}` : `${prefix}/${r.plural}`;
    const body = { requestBody: { content: { '*/*': { schema: ref } } } };
    paths[collection] = { post: op('post', body) };
    paths[`${collection}/{name}`] = { put: op('put', body), patch: op('patch') };
    schemas[name] = {
      type: 'object',
      description: `${r.kind} (${r.apiVersion}); unknown fields are preserved, as this server models no full schema.`,
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
      'x-kubernetes-preserve-unknown-fields': true,
      'x-kubernetes-group-version-kind': [gvk],
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: serverVersion }, paths, components: { schemas } };
}

/** Hash of a document, as the real root listing puts in each `serverRelativeURL` (cache key). */
function hashOf(doc: unknown): string {
  return createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
}

/** The `/openapi/v3` root: one `serverRelativeURL` per served group/version. */
export function openApiRoot(
  catalog: ResourceCatalog,
  serverVersion: string,
): { paths: Record<string, { serverRelativeURL: string }> } {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  const gvs: Array<[string, string]> = [
    ['', 'v1'],
    ...[...catalog.groups()].flatMap(([g, vs]) => vs.map((v): [string, string] => [g, v])),
  ];
  for (const [g, v] of gvs) {
    const doc = groupVersionDocument(catalog, g, v, serverVersion);
    if (doc !== undefined) paths[gvKey(g, v)] = { serverRelativeURL: `/openapi/v3/${gvKey(g, v)}?hash=${hashOf(doc)}` };
  }
  return { paths };
}

/** Appends a protobuf length-delimited field (wire type 2). */
function lengthDelimited(field: number, payload: Buffer): Buffer {
  const len: number[] = [];
  let n = payload.length;
  do {
    len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...len]), payload]);
}

/**
 * The `/openapi/v2` document as gnostic's `openapi_v2.Document` protobuf (what kubectl asks for):
 * `swagger` and `info` only. No definitions: old kubectl skips client-side validation of a kind
 * the document does not define, as it does for a real server's unpublished kinds.
 */
export function openApiV2Protobuf(serverVersion: string): Buffer {
  const info = Buffer.concat([lengthDelimited(1, Buffer.from('Kubernetes')), lengthDelimited(2, Buffer.from(serverVersion))]);
  return Buffer.concat([lengthDelimited(1, Buffer.from('2.0')), lengthDelimited(2, info)]);
}

/** Answers an OpenAPI path (see {@link isOpenApiPath}). */
export function serveOpenApi(
  catalog: ResourceCatalog,
  serverVersion: string,
  segments: string[],
  req: IncomingMessage,
  res: ServerResponse,
): void {
  if (segments[1] === 'v2') {
    if ((req.headers.accept ?? '').includes('protobuf')) {
      const body = openApiV2Protobuf(serverVersion);
      // As kube-openapi answers it: Go's mime parser rejects the '@' of the media type kubectl asks for.
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(body.length) });
      res.end(body);
    } else
      sendJson(res, 200, { swagger: '2.0', info: { title: 'Kubernetes', version: serverVersion }, paths: {}, definitions: {} });
    return;
  }
  if (segments.length === 2) {
    sendJson(res, 200, openApiRoot(catalog, serverVersion));
    return;
  }
  let doc: Record<string, unknown> | undefined;
  if (segments.length === 4 && segments[2] === 'api')
    doc = segments[3] === 'v1' ? groupVersionDocument(catalog, '', 'v1', serverVersion) : undefined;
  else if (segments.length === 5 && segments[2] === 'apis')
    doc = groupVersionDocument(catalog, segments[3]!, segments[4]!, serverVersion);
  if (doc === undefined) sendStatus(res, pathNotFound());
  else sendJson(res, 200, doc);
}
