import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { PODS, call, podBody } from './helpers.js';

let server: ApiServer;
beforeEach(async () => {
  server = await startApiServer();
});
afterEach(async () => {
  await server.close();
});

const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const CM = '/api/v1/namespaces/default/configmaps';

async function twoContainerPod(): Promise<void> {
  const body = podBody('p');
  (body['spec'] as { containers: unknown[] }).containers = [
    { name: 'a', image: 'img:1', env: [{ name: 'X', value: '1' }] },
    { name: 'b', image: 'img:1' },
  ];
  expect((await call(server, 'POST', PODS, { body })).status).toBe(201);
}

describe('strategic merge patch', () => {
  it('[testing: strategic merge patch] merges containers by name and env by name, appends new keys, keeps the others', async () => {
    await twoContainerPod();
    const a = await call(server, 'PATCH', `${PODS}/p`, {
      body: { spec: { containers: [{ name: 'b', image: 'img:2' }] } },
      contentType: SMP,
    });
    expect(a.status).toBe(200);
    expect(a.json.spec.containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`)).toEqual([
      'a=img:1',
      'b=img:2',
    ]);
    const b = await call(server, 'PATCH', `${PODS}/p`, { body: { metadata: { labels: { x: 'y' } } }, contentType: SMP });
    expect(b.json.metadata.labels).toEqual({ x: 'y' });
    const f = await call(server, 'PATCH', `${PODS}/p`, { body: { metadata: { finalizers: ['a/one'] } }, contentType: SMP });
    const g = await call(server, 'PATCH', `${PODS}/p`, { body: { metadata: { finalizers: ['a/two'] } }, contentType: SMP });
    expect(f.json.metadata.finalizers).toEqual(['a/one']);
    expect(g.json.metadata.finalizers).toEqual(['a/one', 'a/two']);
    const h = await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { '$deleteFromPrimitiveList/finalizers': ['a/one'] } },
      contentType: SMP,
    });
    expect(h.json.metadata.finalizers).toEqual(['a/two']);
  });

  it('[testing: strategic merge patch] $patch: delete removes one element by key; $patch: replace replaces the list or the map', async () => {
    await twoContainerPod();
    // The container list is immutable on a pod, so the directives are shown on status lists and metadata maps.
    server.kubelet.bind('default', 'p', 'node-a');
    server.kubelet.setRunningReady('default', 'p');
    const del = await call(server, 'PATCH', `${PODS}/p/status`, {
      body: { status: { conditions: [{ type: 'Ready', $patch: 'delete' }] } },
      contentType: SMP,
    });
    expect(del.status).toBe(200);
    expect(del.json.status.conditions.map((c: { type: string }) => c.type)).not.toContain('Ready');
    expect(del.json.status.conditions.length).toBeGreaterThan(0);
    const rep = await call(server, 'PATCH', `${PODS}/p/status`, {
      body: { status: { conditions: [{ $patch: 'replace' }, { type: 'Custom', status: 'True' }] } },
      contentType: SMP,
    });
    expect(rep.json.status.conditions).toEqual([{ type: 'Custom', status: 'True' }]);
    await call(server, 'PATCH', `${PODS}/p`, { body: { metadata: { annotations: { a: '1', b: '2' } } }, contentType: SMP });
    const mapRep = await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { annotations: { $patch: 'replace', c: '3' } } },
      contentType: SMP,
    });
    expect(mapRep.json.metadata.annotations).toEqual({ c: '3' });
    const bad = await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { annotations: { $patch: 'explode' } } },
      contentType: SMP,
    });
    expect(bad.status).toBe(400);
  });
});

describe('server-side apply', () => {
  it('[testing: apply] fieldManager is required (422 on PatchOptions); apply creates a missing object (201) and records managedFields', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1', y: '2' } };
    const none = await call(server, 'PATCH', `${CM}/a`, { body: cm, contentType: APPLY });
    expect(none.status).toBe(422);
    expect(none.json.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
    const made = await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, { body: cm, contentType: APPLY });
    expect(made.status).toBe(201);
    expect(made.json.metadata.managedFields).toEqual([
      {
        manager: 'alice',
        operation: 'Apply',
        apiVersion: 'v1',
        time: expect.any(String),
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:x': {}, 'f:y': {} } },
      },
    ]);
    const again = await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, { body: cm, contentType: APPLY });
    expect(again.status).toBe(200);
    expect(again.json.metadata.resourceVersion).toBe(made.json.metadata.resourceVersion);
  });

  it('[testing: apply] another manager changing an owned field is 409 with one cause per field; force takes ownership; dropped fields are removed', async () => {
    await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1', y: '2' } },
      contentType: APPLY,
    });
    const c = await call(server, 'PATCH', `${CM}/a?fieldManager=bob`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '9', z: '3' } },
      contentType: APPLY,
    });
    expect(c.status).toBe(409);
    expect(c.json).toMatchObject({
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "alice": .data.x',
      details: { causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "alice"', field: '.data.x' }] },
    });
    const same = await call(server, 'PATCH', `${CM}/a?fieldManager=bob`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1' } },
      contentType: APPLY,
    });
    expect(same.status).toBe(200); // the same value is shared ownership, not a conflict
    const forced = await call(server, 'PATCH', `${CM}/a?fieldManager=bob&force=true`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '9' } },
      contentType: APPLY,
    });
    expect(forced.status).toBe(200);
    expect(forced.json.data).toEqual({ x: '9', y: '2' });
    const dropped = await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: {} },
      contentType: APPLY,
    });
    expect(dropped.json.data).toEqual({ x: '9' });
    const managers = dropped.json.metadata.managedFields.map((m: { manager: string }) => m.manager);
    expect(managers).toContain('bob');
    expect(
      (
        await call(server, 'PATCH', `${CM}/a?fieldManager=alice&force=true`, {
          body: { metadata: {} },
          contentType: 'application/merge-patch+json',
        })
      ).status,
    ).toBe(422);
  });

  it('[testing: apply] an Update by a named manager is recorded and conflicts name its apiVersion', async () => {
    await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1' } },
      contentType: APPLY,
    });
    const u = await call(server, 'PATCH', `${CM}/a?fieldManager=editor`, {
      body: { data: { w: '5' } },
      contentType: 'application/merge-patch+json',
    });
    expect(u.json.metadata.managedFields.find((m: { manager: string }) => m.manager === 'editor')).toMatchObject({
      operation: 'Update',
      fieldsV1: { 'f:data': { 'f:w': {} } },
    });
    const c = await call(server, 'PATCH', `${CM}/a?fieldManager=alice`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1', w: '6' } },
      contentType: APPLY,
    });
    expect(c.status).toBe(409);
    expect(c.json.message).toBe('Apply failed with 1 conflict: conflict with "editor" using v1: .data.w');
  });
});

describe('dryRun', () => {
  it('[testing: dryRun] dryRun=All runs every check and writes nothing: create (no resourceVersion), update, patch, delete; other values are 422', async () => {
    const before = server.revision;
    const c = await call(server, 'POST', `${CM}?dryRun=All`, { body: { metadata: { name: 'd' }, data: { a: 'b' } } });
    expect(c.status).toBe(201);
    expect(c.json.metadata.uid).toBeDefined();
    expect(c.json.metadata.resourceVersion).toBeUndefined();
    expect(server.revision).toBe(before);
    expect((await call(server, 'GET', `${CM}/d`)).status).toBe(404);
    const bad = await call(server, 'POST', `${CM}?dryRun=x`, { body: { metadata: { name: 'd' } } });
    expect(bad.status).toBe(422);
    expect(bad.json.message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"',
    );
    const invalid = await call(server, 'POST', `${CM}?dryRun=All`, { body: { metadata: { name: 'Bad_Name' } } });
    expect(invalid.status).toBe(422);
    const made = await call(server, 'POST', CM, { body: { metadata: { name: 'd' }, data: { a: 'b' } } });
    const rev = server.revision;
    const p = await call(server, 'PATCH', `${CM}/d?dryRun=All`, {
      body: { data: { a: 'c' } },
      contentType: 'application/merge-patch+json',
    });
    expect(p.json.data).toEqual({ a: 'c' });
    const u = await call(server, 'PUT', `${CM}/d?dryRun=All`, { body: { ...made.json, data: { a: 'z' } } });
    expect(u.json.data).toEqual({ a: 'z' });
    const d = await call(server, 'DELETE', `${CM}/d?dryRun=All`);
    expect(d.status).toBe(200);
    expect(server.revision).toBe(rev);
    expect((await call(server, 'GET', `${CM}/d`)).json.data).toEqual({ a: 'b' });
  });
});
