import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { openApiV2Protobuf, schemaName } from '../src/http/openapi.js';
import { call, WIDGET } from './helpers.js';

interface Op {
  'x-kubernetes-group-version-kind': { group: string; version: string; kind: string };
  parameters: Array<{ name: string; in: string }>;
  requestBody?: unknown;
}

describe('OpenAPI documents', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await startApiServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('[testing: openapi] /openapi/v3 lists every served group/version; each document has a PATCH with fieldValidation and a GVK-tagged permissive schema per kind', async () => {
    server.registerResource(WIDGET);
    const root = await call(server, 'GET', '/openapi/v3');
    expect(root.status).toBe(200);
    const paths = root.json.paths as Record<string, { serverRelativeURL: string }>;
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['api/v1', 'apis/apiextensions.k8s.io/v1', 'apis/example.com/v1']));
    for (const [key, { serverRelativeURL }] of Object.entries(paths))
      expect(serverRelativeURL).toMatch(new RegExp(`^/openapi/v3/${key.replace(/\./g, '\\.')}\\?hash=[0-9A-F]{128}$`));

    const core = await call(server, 'GET', paths['api/v1']!.serverRelativeURL);
    expect(core.status).toBe(200);
    expect(core.json.openapi).toBe('3.0.0');
    const cm = core.json.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'].patch as Op;
    expect(cm['x-kubernetes-group-version-kind']).toEqual({ group: '', version: 'v1', kind: 'ConfigMap' });
    expect(cm.parameters).toContainEqual(expect.objectContaining({ name: 'fieldValidation', in: 'query' }));
    // No request media types on PATCH: kubectl then builds strategic merge patches from its own types.
    expect(cm.requestBody).toBeUndefined();
    const pod = core.json.components.schemas['io.k8s.api.core.v1.Pod'];
    expect(pod['x-kubernetes-group-version-kind']).toEqual([{ group: '', version: 'v1', kind: 'Pod' }]);
    expect(pod['x-kubernetes-preserve-unknown-fields']).toBe(true);
    // Cluster-scoped kinds have no namespace segment.
    expect(core.json.paths['/api/v1/namespaces/{name}'].patch['x-kubernetes-group-version-kind'].kind).toBe('Namespace');

    const custom = await call(server, 'GET', '/openapi/v3/apis/example.com/v1');
    const widget = custom.json.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}'].patch as Op;
    expect(widget['x-kubernetes-group-version-kind']).toEqual({ group: 'example.com', version: 'v1', kind: 'Widget' });
    expect(custom.json.components.schemas['com.example.v1.Widget']['x-kubernetes-group-version-kind']).toEqual([
      { group: 'example.com', version: 'v1', kind: 'Widget' },
    ]);
  });

  it('[testing: openapi] the hash changes when a kind is added; unknown group/versions are 404 Status; writes are 405', async () => {
    const before = (await call(server, 'GET', '/openapi/v3')).json.paths['apis/example.com/v1'];
    expect(before).toBeUndefined();
    expect((await call(server, 'GET', '/openapi/v3/apis/example.com/v1')).json).toMatchObject({ kind: 'Status', code: 404 });
    expect((await call(server, 'GET', '/openapi/v3/api/v2')).status).toBe(404);
    server.registerResource(WIDGET);
    const first = (await call(server, 'GET', '/openapi/v3')).json.paths['apis/example.com/v1'].serverRelativeURL as string;
    server.registerResource({ ...WIDGET, kind: 'Gizmo', plural: 'gizmos' });
    const second = (await call(server, 'GET', '/openapi/v3')).json.paths['apis/example.com/v1'].serverRelativeURL as string;
    expect(second).not.toBe(first);
    expect((await call(server, 'POST', '/openapi/v3', { body: {} })).status).toBe(405);
  });

  it('[testing: openapi] /openapi/v2 is a gnostic Document in protobuf (swagger 2.0, no definitions) or JSON', async () => {
    const pb = await fetch(`${server.url}/openapi/v2`, {
      headers: { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' },
    });
    expect(pb.headers.get('content-type')).toBe('application/octet-stream');
    const bytes = Buffer.from(await pb.arrayBuffer());
    // field 1 (swagger) = "2.0", then field 2 (info) = { title, version }.
    expect([...bytes.subarray(0, 5)]).toEqual([0x0a, 3, 0x32, 0x2e, 0x30]);
    expect(bytes[5]).toBe(0x12);
    expect(bytes.equals(openApiV2Protobuf('v1.35.4+reconcile-loop'))).toBe(true);
    const json = await call(server, 'GET', '/openapi/v2');
    expect(json.json).toMatchObject({ swagger: '2.0', definitions: {} });
  });

  it('[testing: openapi] schema names follow the real server: core, built-in groups, CRDs and reversed custom groups', () => {
    expect(schemaName({ group: '', version: 'v1', kind: 'ConfigMap' })).toBe('io.k8s.api.core.v1.ConfigMap');
    expect(schemaName({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' })).toBe('io.k8s.api.coordination.v1.Lease');
    expect(schemaName({ group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition' })).toBe(
      'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition',
    );
    expect(schemaName({ group: 'example.com', version: 'v1', kind: 'Gadget' })).toBe('com.example.v1.Gadget');
  });
});
