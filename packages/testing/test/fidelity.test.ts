import { afterEach, describe, expect, it } from 'vitest';
import { ApiServerStatusError, startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { PODS, WIDGET, call, podBody, watch, type Frame } from './helpers.js';

let server: ApiServer;

async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 20, ...o });
  return server;
}
afterEach(async () => {
  await server.close();
});

/** type, deletionTimestamp set?, deletionGracePeriodSeconds, generation — what the real server's events carry. */
function summary(f: Frame): [string, boolean, unknown, unknown] {
  const m = f.frame.object.metadata;
  return [f.frame.type, m.deletionTimestamp !== undefined, m.deletionGracePeriodSeconds, m.generation];
}

describe("deletion events as the registry sends them (deletionEvents: 'graceful')", () => {
  it('[testing: deletion events] an unbound pod: MODIFIED with deletionTimestamp and grace 0, then DELETED; the response is the terminating pod', async () => {
    await start({ deletionEvents: 'graceful' });
    server.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const d = await call(server, 'DELETE', `${PODS}/p`);
    expect(d.status).toBe(200);
    expect(d.json.metadata.deletionGracePeriodSeconds).toBe(0);
    expect(d.json.metadata.deletionTimestamp).toBeDefined();
    const a = await w.next();
    const b = await w.next();
    expect([summary(a), summary(b)]).toEqual([
      ['MODIFIED', true, 0, 2],
      ['DELETED', true, 0, 2],
    ]);
    expect(d.json.metadata.resourceVersion).toBe(b.frame.object.metadata.resourceVersion);
    expect(Number(b.frame.object.metadata.resourceVersion)).toBe(Number(a.frame.object.metadata.resourceVersion) + 1);
    w.close();
  });

  it('[testing: deletion events] a bound pod: each shortening is its own MODIFIED, a longer grace changes nothing, grace 0 is MODIFIED then DELETED', async () => {
    await start({ deletionEvents: 'graceful' });
    server.createPod({ metadata: { name: 'p', namespace: 'default' } });
    server.kubelet.bind('default', 'p', 'node-a');
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const answers = [];
    for (const g of ['', '?gracePeriodSeconds=10', '?gracePeriodSeconds=20', '?gracePeriodSeconds=0']) {
      const a = await call(server, 'DELETE', `${PODS}/p${g}`);
      expect(a.status).toBe(200);
      answers.push(a.json.metadata.deletionGracePeriodSeconds);
    }
    expect(answers).toEqual([30, 10, 10, 0]);
    const frames = [await w.next(), await w.next(), await w.next(), await w.next()];
    expect(frames.map(summary)).toEqual([
      ['MODIFIED', true, 30, 2],
      ['MODIFIED', true, 10, 2],
      ['MODIFIED', true, 0, 2],
      ['DELETED', true, 0, 2],
    ]);
    w.close();
  });

  it("[testing: deletion events] the kubelet's final delete is MODIFIED (grace 0) then DELETED too; custom resources go with DELETED alone", async () => {
    await start({ deletionEvents: 'graceful' });
    const ref = server.registerResource(WIDGET);
    server.createPod({ metadata: { name: 'p', namespace: 'default' } });
    server.kubelet.bind('default', 'p', 'node-a');
    server.deletePod('default', 'p');
    server.createObject(ref, { metadata: { name: 'w', namespace: 'default' } });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    const ww = await watch(
      server,
      `/apis/example.com/v1/namespaces/default/widgets?watch=true&resourceVersion=${server.revision}`,
    );
    await server.waitForWatches(2);
    server.kubelet.finishGracefulDelete('default', 'p');
    expect([summary(await w.next()), summary(await w.next())]).toEqual([
      ['MODIFIED', true, 0, 2],
      ['DELETED', true, 0, 2],
    ]);
    server.deleteObject(ref, 'default', 'w');
    expect((await ww.next()).frame.type).toBe('DELETED');
    w.close();
    ww.close();
  });

  it("[testing: deletion events] deletionEvents 'immediate' keeps the old single DELETED", async () => {
    await start({ deletionEvents: 'immediate' });
    server.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    server.deletePod('default', 'p');
    expect((await w.next()).frame.type).toBe('DELETED');
    w.close();
  });
});

describe('namespaces are an API', () => {
  it('[testing: namespaces] default, kube-system, kube-public and kube-node-lease exist at start, Active, labelled with their name', async () => {
    await start();
    const list = await call(server, 'GET', '/api/v1/namespaces');
    expect(list.json.kind).toBe('NamespaceList');
    expect(list.json.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual([
      'default',
      'kube-node-lease',
      'kube-public',
      'kube-system',
    ]);
    const d = await call(server, 'GET', '/api/v1/namespaces/default');
    expect(d.json).toMatchObject({
      kind: 'Namespace',
      apiVersion: 'v1',
      metadata: { name: 'default', labels: { 'kubernetes.io/metadata.name': 'default' } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
    expect(d.json.metadata.namespace).toBeUndefined();
    const api = await call(server, 'GET', '/api/v1');
    expect(api.json.resources).toContainEqual(
      expect.objectContaining({ name: 'namespaces', namespaced: false, kind: 'Namespace', shortNames: ['ns'] }),
    );
  });

  it('[testing: namespaces] a create into a missing namespace is 404 NotFound worded as the real server; POST /api/v1/namespaces makes it', async () => {
    await start();
    const before = server.revision;
    const miss = await call(server, 'POST', '/api/v1/namespaces/pool/pods', { body: podBody('p') });
    expect(miss.status).toBe(404);
    expect(miss.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'namespaces "pool" not found',
      reason: 'NotFound',
      details: { name: 'pool', kind: 'namespaces' },
      code: 404,
    });
    expect(server.revision).toBe(before);
    const made = await call(server, 'POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pool' } },
    });
    expect(made.status).toBe(201);
    expect(made.json.status).toEqual({ phase: 'Active' });
    expect((await call(server, 'POST', '/api/v1/namespaces/pool/pods', { body: podBody('p') })).status).toBe(201);
    expect((await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: 'pool' } } })).status).toBe(409);
    expect((await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: 'Bad.Name' } } })).status).toBe(422);
    // Reads of a missing namespace are empty, not 404, as from etcd.
    expect((await call(server, 'GET', '/api/v1/namespaces/nowhere/pods')).json.items).toEqual([]);
  });

  it('[testing: namespaces] typed creates (createPod, seedPods, createObject) make a missing namespace; implicitNamespaces does it for HTTP', async () => {
    await start();
    server.seedPods(1, { namespace: 'seeded' });
    expect(server.listNamespaces()).toContain('seeded');
    await server.close();
    await start({ implicitNamespaces: true });
    expect((await call(server, 'POST', '/api/v1/namespaces/fresh/pods', { body: podBody('p') })).status).toBe(201);
    expect(server.listNamespaces()).toContain('fresh');
    let err: unknown;
    try {
      server.createPod({ metadata: { name: 'p', namespace: 'Not_A_Label' } });
    } catch (e) {
      err = e;
    }
    expect(err instanceof ApiServerStatusError && err.status.code).toBe(404);
  });

  it('[testing: namespaces] DELETE answers the Terminating namespace; its content is deleted, then the namespace; creates in it meanwhile are 403', async () => {
    await start({ deletionEvents: 'graceful' });
    server.seedPods(2, { namespace: 'gone', nodeName: 'node-a' });
    // A finalizer holds one pod, and so the namespace, until the test removes it.
    server.updatePod('gone', 'pod-0', (p) => {
      p.metadata.finalizers = ['example.com/hold'];
    });
    const w = await watch(server, `/api/v1/namespaces?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const d = await call(server, 'DELETE', '/api/v1/namespaces/gone');
    expect(d.status).toBe(200);
    expect(d.json.status.phase).toBe('Terminating');
    expect(d.json.metadata.deletionTimestamp).toBeDefined();
    expect((await w.next()).frame.type).toBe('MODIFIED');
    await new Promise((r) => setTimeout(r, 20));
    expect(server.listPods('gone').map((p) => p.metadata.name)).toEqual(['pod-0']);
    const refused = await call(server, 'POST', '/api/v1/namespaces/gone/pods', { body: podBody('late') });
    expect(refused.status).toBe(403);
    expect(refused.json.message).toBe('unable to create new content in namespace gone because it is being terminated');
    server.updatePod('gone', 'pod-0', (p) => {
      p.metadata.finalizers = [];
    });
    const last = await w.next();
    expect(last.frame.type).toBe('DELETED');
    expect(server.listPods('gone')).toEqual([]);
    expect((await call(server, 'GET', '/api/v1/namespaces/gone')).status).toBe(404);
    w.close();
  });
});

describe('smaller differences, now as the real server', () => {
  it('[testing: create with resourceVersion] a set resourceVersion on create is the real 500 (etcd3 refuses it); "0" and non-numbers pass', async () => {
    await start();
    const before = server.revision;
    const a = await call(server, 'POST', PODS, { body: { ...podBody('p'), metadata: { name: 'p', resourceVersion: '5' } } });
    expect(a.status).toBe(500);
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'resourceVersion should not be set on objects to be created',
      code: 500,
    });
    expect(server.revision).toBe(before);
    expect(
      (await call(server, 'POST', PODS, { body: { ...podBody('q'), metadata: { name: 'q', resourceVersion: '0' } } })).status,
    ).toBe(201);
    expect(
      (await call(server, 'POST', PODS, { body: { ...podBody('r'), metadata: { name: 'r', resourceVersion: '-1' } } })).status,
    ).toBe(201);
  });

  it('[testing: pod subresources] pods/binding binds (201 Success, generation kept), 409 once bound, 404 for a missing pod; pods/eviction deletes (201)', async () => {
    await start({ deletionEvents: 'graceful' });
    server.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const binding = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'p' },
      target: { apiVersion: 'v1', kind: 'Node', name: 'n1' },
    };
    const a = await call(server, 'POST', `${PODS}/p/binding`, { body: binding });
    expect(a.status).toBe(201);
    expect(a.json).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
    expect(server.getPod('default', 'p')?.spec?.nodeName).toBe('n1');
    expect(server.getPod('default', 'p')?.metadata.generation).toBe(1);
    const b = await call(server, 'POST', `${PODS}/p/binding`, { body: binding });
    expect(b.status).toBe(409);
    expect(b.json.message).toBe('Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"');
    expect((await call(server, 'POST', `${PODS}/nope/binding`, { body: binding })).status).toBe(404);
    expect((await call(server, 'GET', `${PODS}/p/binding`)).status).toBe(405);
    const e = await call(server, 'POST', `${PODS}/p/eviction`, {
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' }, deleteOptions: { gracePeriodSeconds: 0 } },
    });
    expect(e.status).toBe(201);
    expect(server.getPod('default', 'p')).toBeUndefined();
  });

  it('[testing: pod admission] a created pod gets priority 0, preemptionPolicy and the not-ready/unreachable NoExecute tolerations (300 s) unless covered', async () => {
    await start();
    const a = await call(server, 'POST', PODS, { body: podBody('p') });
    expect(a.json.spec).toMatchObject({
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    });
    const own = await call(server, 'POST', PODS, {
      body: podBody('q', {}, { spec: { containers: [{ name: 'c', image: 'i' }], tolerations: [{ operator: 'Exists' }] } }),
    });
    expect(own.json.spec.tolerations).toEqual([{ operator: 'Exists' }]);
  });
});
