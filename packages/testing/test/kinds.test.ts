import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { call, watch } from './helpers.js';

let server: ApiServer;

async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 20, ...o });
  return server;
}
afterEach(async () => {
  await server.close();
});

const CM = '/api/v1/namespaces/default/configmaps';

describe('core kinds through the one engine', () => {
  it('[testing: core kinds] ConfigMaps: create, 409 on a stale resourceVersion, no generation, watch, list, delete answers a Success Status', async () => {
    await start();
    const a = await call(server, 'POST', CM, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' } },
    });
    expect(a.status).toBe(201);
    expect(a.json.metadata.generation).toBeUndefined();
    const w = await watch(server, `${CM}?watch=true&resourceVersion=${a.json.metadata.resourceVersion}`);
    await server.waitForWatches(1);
    const ok = await call(server, 'PUT', `${CM}/c`, { body: { ...a.json, data: { k: 'w' } } });
    expect(ok.status).toBe(200);
    const stale = await call(server, 'PUT', `${CM}/c`, { body: { ...a.json, data: { k: 'x' } } });
    expect(stale.status).toBe(409);
    expect(stale.json.message).toBe(
      'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again',
    );
    expect((await w.next()).frame).toMatchObject({ type: 'MODIFIED', object: { data: { k: 'w' } } });
    expect((await call(server, 'POST', CM, { body: { metadata: { name: 'bad' }, data: { k: 1 } } })).status).toBe(422);
    const list = await call(server, 'GET', CM);
    expect(list.json.kind).toBe('ConfigMapList');
    expect(list.json.items[0].kind).toBeUndefined();
    const del = await call(server, 'DELETE', `${CM}/c`);
    expect(del.json).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'c', kind: 'configmaps' } });
    expect((await w.next()).frame.type).toBe('DELETED');
    w.close();
  });

  it('[testing: core kinds] Secrets fold stringData into base64 data and default type Opaque; fieldSelector type works; bad base64 is 422', async () => {
    await start();
    const s = await call(server, 'POST', '/api/v1/namespaces/default/secrets', {
      body: { metadata: { name: 's' }, stringData: { a: 'b' } },
    });
    expect(s.status).toBe(201);
    expect(s.json).toMatchObject({ kind: 'Secret', data: { a: 'Yg==' }, type: 'Opaque' });
    expect(s.json.stringData).toBeUndefined();
    expect((await call(server, 'GET', '/api/v1/namespaces/default/secrets?fieldSelector=type%3DOpaque')).json.items).toHaveLength(
      1,
    );
    expect(
      (
        await call(server, 'POST', '/api/v1/namespaces/default/secrets', {
          body: { metadata: { name: 'x' }, data: { a: 'not base64!' } },
        })
      ).status,
    ).toBe(422);
  });

  it('[testing: core kinds] Services get protocol, targetPort, type, an allocated cluster IP that updates keep, and an empty load balancer status', async () => {
    await start();
    const s = await call(server, 'POST', '/api/v1/namespaces/default/services', {
      body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }], selector: { app: 'x' } } },
    });
    expect(s.status).toBe(201);
    expect(s.json.spec).toMatchObject({
      ports: [{ protocol: 'TCP', port: 80, targetPort: 80 }],
      type: 'ClusterIP',
      sessionAffinity: 'None',
    });
    expect(s.json.spec.clusterIP).toMatch(/^10\.0\.\d+\.\d+$/);
    expect(s.json.status).toEqual({ loadBalancer: {} });
    const { clusterIP: _ip, clusterIPs: _ips, ...spec } = s.json.spec;
    const u = await call(server, 'PUT', '/api/v1/namespaces/default/services/svc', {
      body: { ...s.json, spec: { ...spec, selector: { app: 'y' } } },
    });
    expect(u.json.spec.clusterIP).toBe(s.json.spec.clusterIP);
    expect(
      (await call(server, 'POST', '/api/v1/namespaces/default/services', { body: { metadata: { name: 'noports' }, spec: {} } }))
        .status,
    ).toBe(422);
  });

  it('[testing: core kinds] Events in v1 (involvedObject field selectors) and events.k8s.io/v1; Leases in coordination.k8s.io/v1 with optimistic concurrency', async () => {
    await start();
    const ev = await call(server, 'POST', '/api/v1/namespaces/default/events', {
      body: {
        metadata: { name: 'e1' },
        involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
        reason: 'Started',
        message: 'hi',
        type: 'Normal',
      },
    });
    expect(ev.status).toBe(201);
    expect(
      (await call(server, 'GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp,reason%3DStarted')).json
        .items,
    ).toHaveLength(1);
    expect(
      (await call(server, 'GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dq')).json.items,
    ).toHaveLength(0);
    const e2 = await call(server, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
      body: {
        metadata: { name: 'e2' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'me',
        reportingInstance: 'me-1',
        action: 'Reconcile',
        reason: 'Done',
        type: 'Normal',
        regarding: { kind: 'Pod', name: 'p' },
      },
    });
    expect(e2.status).toBe(201);
    expect(e2.json.apiVersion).toBe('events.k8s.io/v1');
    expect(
      (await call(server, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', { body: { metadata: { name: 'e3' } } }))
        .status,
    ).toBe(422);
    const lease = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', {
      body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    expect(lease.status).toBe(201);
    const took = await call(server, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/leader', {
      body: { ...lease.json, spec: { holderIdentity: 'b', leaseDurationSeconds: 15 } },
    });
    expect(took.status).toBe(200);
    const lost = await call(server, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/leader', {
      body: { ...lease.json, spec: { holderIdentity: 'c', leaseDurationSeconds: 15 } },
    });
    expect(lost.status).toBe(409);
    expect(lost.json.details).toEqual({ name: 'leader', group: 'coordination.k8s.io', kind: 'leases' });
    const api = await call(server, 'GET', '/api/v1');
    expect(api.json.resources.map((r: { name: string }) => r.name)).toEqual([
      'pods',
      'pods/binding',
      'pods/eviction',
      'pods/status',
      'namespaces',
      'namespaces/status',
      'configmaps',
      'secrets',
      'services',
      'services/status',
      'events',
    ]);
  });
});

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', shortNames: ['gd'] },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

describe('CustomResourceDefinitions', () => {
  it('[testing: crd] creating a CRD gets NamesAccepted and Established, then its kind is served with discovery; deleting it removes its objects and stops serving', async () => {
    await start();
    const crds = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const w = await watch(server, `${crds}?watch=true`);
    const c = await call(server, 'POST', crds, { body: WIDGET_CRD });
    expect(c.status).toBe(201);
    expect(c.json.metadata.finalizers).toBeUndefined();
    const established = await w.until((f) =>
      (f.frame.object.status?.conditions ?? []).some(
        (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
      ),
    );
    expect(established.hit.frame.object.status.acceptedNames).toMatchObject({
      plural: 'gadgets',
      kind: 'Gadget',
      listKind: 'GadgetList',
    });
    const group = await call(server, 'GET', '/apis/example.com/v1');
    expect(group.json.resources.map((r: { name: string }) => r.name)).toEqual(['gadgets', 'gadgets/status']);
    const g = await call(server, 'POST', '/apis/example.com/v1/namespaces/default/gadgets', {
      body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 2 } },
    });
    expect(g.status).toBe(201);
    expect(g.json.metadata.generation).toBe(1);
    const d = await call(server, 'DELETE', `${crds}/gadgets.example.com`);
    expect(d.status).toBe(200);
    expect(d.json.metadata.finalizers).toEqual(['customresourcecleanup.apiextensions.k8s.io']);
    expect(d.json.status.conditions).toContainEqual(expect.objectContaining({ type: 'Terminating', status: 'True' }));
    await w.until((f) => f.frame.type === 'DELETED');
    expect((await call(server, 'GET', '/apis/example.com/v1/namespaces/default/gadgets')).status).toBe(404);
    w.close();
  });

  it('[testing: crd] an invalid CRD is 422 with field causes: name not plural.group, no storage version, bad scope', async () => {
    await start();
    const bad = {
      ...WIDGET_CRD,
      metadata: { name: 'wrong.example.com' },
      spec: { ...WIDGET_CRD.spec, scope: 'Galaxy', versions: [{ name: 'v1', served: true, storage: false }] },
    };
    const a = await call(server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: bad });
    expect(a.status).toBe(422);
    expect(a.json.details.causes.map((c: { field: string }) => c.field).sort()).toEqual([
      'metadata.name',
      'spec.scope',
      'spec.versions',
    ]);
  });
});
