import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { call } from './helpers.js';

// kubectl's move from client-side to server-side apply, as kube-apiserver 1.37.2 answers it (checked by
// e2e/test/kubectl.test.ts against the real server): `kubectl apply --server-side` (manager `kubectl`)
// takes over, without --force-conflicts, the fields its earlier client-side apply set, and kubectl's
// follow-up JSON patch that rewrites metadata.managedFields is kept.

const CMS = '/api/v1/namespaces/default/configmaps';
const LAST = 'kubectl.kubernetes.io/last-applied-configuration';

let server: ApiServer;
beforeAll(async () => {
  server = await startApiServer();
});
afterAll(async () => {
  await server.close();
});

/** What `kubectl apply` (client-side) leaves: created, then configured by a patch under its manager. */
async function clientSideApplied(name: string): Promise<void> {
  const cm = (a: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a } });
  const created = await call(server, 'POST', `${CMS}?fieldManager=kubectl-client-side-apply`, {
    body: { ...cm('1'), metadata: { name, annotations: { [LAST]: JSON.stringify(cm('1')) } } },
  });
  expect(created.status).toBe(201);
  const configured = await call(server, 'PATCH', `${CMS}/${name}?fieldManager=kubectl-client-side-apply`, {
    body: { data: { a: '2' }, metadata: { annotations: { [LAST]: JSON.stringify(cm('2')) } } },
    contentType: 'application/merge-patch+json',
  });
  expect(configured.status).toBe(200);
}

const applied = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '3', b: 'x' } });

describe('client-side to server-side apply', () => {
  it('[testing: server-side apply] manager kubectl takes over the fields of the last client-side apply; any other manager conflicts', async () => {
    await clientSideApplied('up');
    const other = await call(server, 'PATCH', `${CMS}/up?fieldManager=someone`, {
      body: applied('up'),
      contentType: 'application/apply-patch+yaml',
    });
    expect(other.status).toBe(409);
    expect(other.json.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a');
    const kubectl = await call(server, 'PATCH', `${CMS}/up?fieldManager=kubectl`, {
      body: applied('up'),
      contentType: 'application/apply-patch+yaml',
    });
    expect(kubectl.status, kubectl.text).toBe(200);
    expect(kubectl.json.data).toEqual({ a: '3', b: 'x' });
    const owners = (kubectl.json.metadata.managedFields as Array<{ manager: string; operation: string }>).map(
      (e) => `${e.manager}/${e.operation}`,
    );
    expect(owners).toContain('kubectl/Apply');
  });

  it('[testing: server-side apply] a write that replaces metadata.managedFields keeps the written entries (kubectl csaupgrade)', async () => {
    await clientSideApplied('mf');
    const live = await call(server, 'GET', `${CMS}/mf`);
    const entry = {
      manager: 'kubectl',
      operation: 'Apply',
      apiVersion: 'v1',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:data': { 'f:a': {} } },
    };
    const patched = await call(server, 'PATCH', `${CMS}/mf?fieldManager=kubectl`, {
      body: [
        { op: 'replace', path: '/metadata/managedFields', value: [entry] },
        { op: 'replace', path: '/metadata/resourceVersion', value: live.json.metadata.resourceVersion },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.metadata.managedFields).toEqual([entry]);
    // An empty list does not wipe them: the live entries stay.
    const wiped = await call(server, 'PATCH', `${CMS}/mf`, {
      body: { metadata: { managedFields: [] } },
      contentType: 'application/merge-patch+json',
    });
    expect(wiped.json.metadata.managedFields).toEqual([entry]);
  });
});
