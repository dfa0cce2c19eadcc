import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { PODS, WIDGET, call, podBody, watch } from './helpers.js';

let server: ApiServer;
beforeEach(async () => {
  // These tests pin the legacy single-DELETED deletion events; fidelity.test.ts covers 'graceful'.
  server = await startApiServer({ wallClock: () => Date.parse('2025-03-01T12:00:00.500Z'), deletionEvents: 'immediate' });
});
afterEach(async () => {
  await server.close();
});

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

describe('create', () => {
  it('[testing: create] assigns uid, creationTimestamp (RFC 3339 seconds), generation 1, resourceVersion, defaults and Pending', async () => {
    const before = server.revision;
    const a = await call(server, 'POST', PODS, { body: podBody('p', { app: 'x' }, { status: { phase: 'Running' } }) });
    expect(a.status).toBe(201);
    expect(a.json.metadata).toMatchObject({
      name: 'p',
      namespace: 'default',
      resourceVersion: String(before + 1),
      generation: 1,
      creationTimestamp: '2025-03-01T12:00:00Z',
      labels: { app: 'x' },
    });
    expect(a.json.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.json.spec).toMatchObject({
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
    });
    expect(a.json.spec.containers[0]).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
    });
    // Status on create is the server's, not the client's.
    expect(a.json.status).toEqual({ phase: 'Pending', qosClass: 'BestEffort' });
    expect(server.revision).toBe(before + 1);
  });

  it('[testing: create 409] a second create of the same name is 409 AlreadyExists', async () => {
    await call(server, 'POST', PODS, { body: podBody('p') });
    const a = await call(server, 'POST', PODS, { body: podBody('p') });
    expect(a.status).toBe(409);
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "p" already exists',
      reason: 'AlreadyExists',
      details: { name: 'p', kind: 'pods' },
      code: 409,
    });
  });

  it('[testing: create 422] a missing name, a bad name or no containers is 422 Invalid with field causes', async () => {
    const a = await call(server, 'POST', PODS, { body: { metadata: {}, spec: { containers: [{ name: 'c', image: 'i' }] } } });
    expect(a.status).toBe(422);
    expect(a.json.message).toBe('Pod "" is invalid: metadata.name: Required value: name or generateName is required');
    expect(a.json.details).toEqual({
      kind: 'Pod',
      causes: [
        { reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' },
      ],
    });
    const b = await call(server, 'POST', PODS, { body: podBody('Bad_Name') });
    expect(b.status).toBe(422);
    expect(b.json.message).toMatch(
      /^Pod "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
    const c = await call(server, 'POST', PODS, { body: { metadata: { name: 'c' }, spec: {} } });
    expect(c.status).toBe(422);
    expect(c.json.message).toBe('Pod "c" is invalid: spec.containers: Required value');
  });

  it('[testing: create] generateName yields a unique name; a namespace mismatch is 400', async () => {
    const a = await call(server, 'POST', PODS, { body: { ...podBody(''), metadata: { generateName: 'web-' } } });
    expect(a.status).toBe(201);
    expect(a.json.metadata.name).toMatch(/^web-[a-z0-9]{5}$/);
    const b = await call(server, 'POST', PODS, { body: { ...podBody('x'), metadata: { name: 'x', namespace: 'other' } } });
    expect(b.status).toBe(400);
    expect(b.json.message).toBe('the namespace of the provided object does not match the namespace sent on the request');
  });
});

describe('update', () => {
  it('[testing: update 409] a stale resourceVersion is 409 Conflict with the registry wording', async () => {
    const created = (await call(server, 'POST', PODS, { body: podBody('p') })).json;
    server.updatePod('default', 'p', (p) => {
      p.metadata.labels = { bump: '1' };
    });
    const a = await call(server, 'PUT', `${PODS}/p`, {
      body: { ...created, metadata: { ...created.metadata, labels: { mine: 'yes' } } },
    });
    expect(a.status).toBe(409);
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again',
      reason: 'Conflict',
      details: { name: 'p', kind: 'pods' },
      code: 409,
    });
  });

  it('[testing: update] pods take an empty resourceVersion as unconditional; custom resources answer 422', async () => {
    const created = (await call(server, 'POST', PODS, { body: podBody('p') })).json;
    const a = await call(server, 'PUT', `${PODS}/p`, { body: { ...created, metadata: { name: 'p', labels: { v: '2' } } } });
    expect(a.status).toBe(200);
    expect(a.json.metadata.labels).toEqual({ v: '2' });
    expect(a.json.metadata.uid).toBe(created.metadata.uid);
    server.registerResource(WIDGET);
    await call(server, 'POST', WIDGETS, { body: { metadata: { name: 'w' }, spec: { size: 1 } } });
    const b = await call(server, 'PUT', `${WIDGETS}/w`, { body: { metadata: { name: 'w' }, spec: { size: 2 } } });
    expect(b.status).toBe(422);
    expect(b.json.message).toBe(
      'Widget.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
    );
  });

  it('[testing: update 404] updating, patching or deleting a missing pod is 404 NotFound', async () => {
    for (const [method, body, ct] of [
      ['PUT', podBody('ghost'), 'application/json'],
      ['PATCH', { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json'],
      ['DELETE', undefined, undefined],
    ] as const) {
      const a = await call(server, method, `${PODS}/ghost`, body === undefined ? {} : { body, contentType: ct });
      expect(a.status).toBe(404);
      expect(a.json).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'pods "ghost" not found',
        reason: 'NotFound',
        details: { name: 'ghost', kind: 'pods' },
        code: 404,
      });
    }
  });

  it('[testing: status subresource] PUT /status changes status (and, on pods, labels and annotations) but never spec; a main PUT ignores status', async () => {
    const created = (await call(server, 'POST', PODS, { body: podBody('p') })).json;
    const s = await call(server, 'PUT', `${PODS}/p/status`, {
      body: {
        ...created,
        metadata: { ...created.metadata, labels: { kept: 'yes' } },
        spec: { ...created.spec, activeDeadlineSeconds: 5 },
        status: { phase: 'Running' },
      },
    });
    expect(s.status).toBe(200);
    expect(s.json.status).toEqual({ phase: 'Running' });
    expect(s.json.metadata.labels).toEqual({ kept: 'yes' });
    expect(s.json.spec.activeDeadlineSeconds).toBeUndefined();
    expect(s.json.metadata.generation).toBe(1);
    const m = await call(server, 'PUT', `${PODS}/p`, {
      body: { ...s.json, metadata: { ...s.json.metadata, labels: { a: 'b' } }, status: { phase: 'Failed' } },
    });
    expect(m.status).toBe(200);
    expect(m.json.status).toEqual({ phase: 'Running' });
    expect(m.json.metadata.labels).toEqual({ a: 'b' });
  });

  it('[testing: generation] bumps on spec changes only, never on metadata or status writes', async () => {
    server.registerResource(WIDGET);
    const w = (await call(server, 'POST', WIDGETS, { body: { metadata: { name: 'w' }, spec: { size: 1 } } })).json;
    expect(w.metadata.generation).toBe(1);
    const labels = await call(server, 'PATCH', `${WIDGETS}/w`, {
      body: { metadata: { labels: { a: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(labels.json.metadata.generation).toBe(1);
    const status = await call(server, 'PATCH', `${WIDGETS}/w/status`, {
      body: { status: { ok: true } },
      contentType: 'application/merge-patch+json',
    });
    expect(status.json.metadata.generation).toBe(1);
    expect(status.json.status).toEqual({ ok: true });
    const spec = await call(server, 'PATCH', `${WIDGETS}/w`, {
      body: { spec: { size: 2 } },
      contentType: 'application/merge-patch+json',
    });
    expect(spec.json.metadata.generation).toBe(2);
    const pod = server.createPod({ metadata: { name: 'p' } });
    const img = await call(server, 'PATCH', `${PODS}/p`, {
      body: [{ op: 'replace', path: '/spec/containers/0/image', value: 'busybox:1.36' }],
      contentType: 'application/json-patch+json',
    });
    expect(img.status).toBe(200);
    expect(img.json.metadata.generation).toBe((pod.metadata.generation ?? 0) + 1);
  });

  it('[testing: pod spec immutability] a pod update touching spec beyond images is 422 Forbidden', async () => {
    await call(server, 'POST', PODS, { body: podBody('p') });
    const a = await call(server, 'PATCH', `${PODS}/p`, {
      body: { spec: { nodeName: 'sneaky' } },
      contentType: 'application/merge-patch+json',
    });
    expect(a.status).toBe(422);
    expect(a.json.message).toMatch(/^Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than/);
  });

  it('[testing: no-op update] an update that changes nothing commits no revision and no event', async () => {
    const created = (await call(server, 'POST', PODS, { body: podBody('p') })).json;
    const rev = server.revision;
    const a = await call(server, 'PUT', `${PODS}/p`, { body: created });
    expect(a.status).toBe(200);
    expect(a.json.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    expect(server.revision).toBe(rev);
  });
});

describe('patch', () => {
  it('[testing: merge patch] RFC 7386: objects merge, null deletes, lists replace', async () => {
    await call(server, 'POST', PODS, { body: podBody('p', { a: '1', b: '2' }) });
    const a = await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { labels: { a: null, c: '3' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(a.status).toBe(200);
    expect(a.json.metadata.labels).toEqual({ b: '2', c: '3' });
  });

  it('[testing: json patch] RFC 6902 ops apply; a failed test op is 422; a non-array document is 400', async () => {
    await call(server, 'POST', PODS, { body: podBody('p', { a: '1' }) });
    const a = await call(server, 'PATCH', `${PODS}/p`, {
      body: [
        { op: 'test', path: '/metadata/labels/a', value: '1' },
        { op: 'add', path: '/metadata/labels/b', value: '2' },
        { op: 'copy', from: '/metadata/labels/b', path: '/metadata/labels/c' },
        { op: 'remove', path: '/metadata/labels/a' },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(a.status).toBe(200);
    expect(a.json.metadata.labels).toEqual({ b: '2', c: '2' });
    const b = await call(server, 'PATCH', `${PODS}/p`, {
      body: [{ op: 'test', path: '/metadata/labels/b', value: 'nope' }],
      contentType: 'application/json-patch+json',
    });
    expect(b.status).toBe(422);
    expect(b.json.reason).toBe('Invalid');
    const c = await call(server, 'PATCH', `${PODS}/p`, { body: { op: 'add' }, contentType: 'application/json-patch+json' });
    expect(c.status).toBe(400);
  });

  it('[testing: patch conflict] a patch carrying a stale resourceVersion is 409', async () => {
    const p = (await call(server, 'POST', PODS, { body: podBody('p') })).json;
    server.updatePod('default', 'p', (x) => {
      x.metadata.labels = { moved: 'on' };
    });
    const a = await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { resourceVersion: p.metadata.resourceVersion, labels: { a: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(a.status).toBe(409);
    expect(a.json.reason).toBe('Conflict');
  });

  it('[testing: strategic merge patch] custom resources refuse it with 415, as the real server does', async () => {
    server.registerResource(WIDGET);
    await call(server, 'POST', WIDGETS, { body: { metadata: { name: 'w' } } });
    const c = await call(server, 'PATCH', `${WIDGETS}/w`, {
      body: { metadata: {} },
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(c.status).toBe(415);
    expect(c.json.reason).toBe('UnsupportedMediaType');
  });
});

describe('delete', () => {
  it('[testing: delete unbound] an unbound pod goes at once: 200 with the pod, watchers see DELETED', async () => {
    await call(server, 'POST', PODS, { body: podBody('p') });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const a = await call(server, 'DELETE', `${PODS}/p`);
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({ kind: 'Pod', metadata: { name: 'p' } });
    expect((await w.next()).frame.type).toBe('DELETED');
    expect(server.getPod('default', 'p')).toBeUndefined();
    w.close();
  });

  it('[testing: graceful deletion] a bound pod gets deletionTimestamp (MODIFIED) until a delete with gracePeriodSeconds=0 (DELETED)', async () => {
    await call(server, 'POST', PODS, { body: podBody('p') });
    server.kubelet.bind('default', 'p', 'node-a');
    const gen = server.getPod('default', 'p')!.metadata.generation!;
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const first = await call(server, 'DELETE', `${PODS}/p`);
    expect(first.status).toBe(200);
    expect(first.json.metadata).toMatchObject({
      deletionTimestamp: '2025-03-01T12:00:30Z',
      deletionGracePeriodSeconds: 30,
      generation: gen + 1,
    });
    const m = await w.next();
    expect(m.frame.type).toBe('MODIFIED');
    expect(m.frame.object.metadata.deletionTimestamp).toBe('2025-03-01T12:00:30Z');
    // A longer grace period does not extend; a shorter one shortens.
    const again = await call(server, 'DELETE', `${PODS}/p`, {
      body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 60 },
    });
    expect(again.json.metadata.deletionGracePeriodSeconds).toBe(30);
    const shorter = await call(server, 'DELETE', `${PODS}/p?gracePeriodSeconds=5`);
    expect(shorter.json.metadata.deletionGracePeriodSeconds).toBe(5);
    expect((await w.next()).frame.type).toBe('MODIFIED');
    const final = await call(server, 'DELETE', `${PODS}/p`, { body: { gracePeriodSeconds: 0 } });
    expect(final.status).toBe(200);
    expect((await w.next()).frame.type).toBe('DELETED');
    expect(server.getPod('default', 'p')).toBeUndefined();
    w.close();
  });

  it('[testing: finalizers] hold an object with deletionTimestamp until an update empties them', async () => {
    server.registerResource(WIDGET);
    await call(server, 'POST', WIDGETS, { body: { metadata: { name: 'w', finalizers: ['example.com/hold'] } } });
    const a = await call(server, 'DELETE', `${WIDGETS}/w`);
    expect(a.status).toBe(200);
    expect(a.json.metadata.deletionTimestamp).toBeDefined();
    expect(a.json.kind).toBe('Widget');
    const w = await watch(server, `${WIDGETS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const b = await call(server, 'PATCH', `${WIDGETS}/w`, {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    expect(b.status).toBe(200);
    expect((await w.next()).frame.type).toBe('DELETED');
    w.close();
  });

  it('[testing: delete custom resource] an immediate delete answers a Success Status with the uid', async () => {
    server.registerResource(WIDGET);
    const w = (await call(server, 'POST', WIDGETS, { body: { metadata: { name: 'w' } } })).json;
    const a = await call(server, 'DELETE', `${WIDGETS}/w`);
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: 'w', group: 'example.com', kind: 'widgets', uid: w.metadata.uid },
      code: 200,
    });
  });

  it('[testing: delete preconditions] a mismatched uid or resourceVersion precondition is 409', async () => {
    await call(server, 'POST', PODS, { body: podBody('p') });
    const a = await call(server, 'DELETE', `${PODS}/p`, { body: { preconditions: { uid: 'nope' } } });
    expect(a.status).toBe(409);
    // Worded by the registry's delete, which names the Kind (checked against kube-apiserver 1.35.4).
    expect(a.json.message).toMatch(
      /^Operation cannot be fulfilled on Pod "p": the UID in the precondition \(nope\) does not match the UID in record \([-0-9a-f]+\)\. The object might have been deleted and then recreated$/,
    );
    expect(a.json.details).toEqual({ name: 'p', kind: 'Pod' });
    const b = await call(server, 'DELETE', `${PODS}/p`, { body: { preconditions: { resourceVersion: '1' } } });
    expect(b.status).toBe(409);
    expect(b.json.message).toMatch(
      /^Operation cannot be fulfilled on Pod "p": the ResourceVersion in the precondition \(1\) does not match the ResourceVersion in record \(\d+\)\. The object might have been modified$/,
    );
    const u = await call(server, 'PUT', `${PODS}/p`, { body: { ...podBody('p'), metadata: { name: 'p', uid: 'nope' } } });
    expect(u.status).toBe(409);
    expect(u.json.message).toMatch(
      /^Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, Key: \/registry\/pods\/default\/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: nope/,
    );
    expect(u.json.details).toEqual({ name: 'p', kind: 'pods' });
  });

  it('[testing: deletecollection] deletes the selected pods of a namespace', async () => {
    server.seedPods(2, { labels: { app: 'a' }, namePrefix: 'a' });
    server.seedPods(1, { labels: { app: 'b' }, namePrefix: 'b' });
    const a = await call(server, 'DELETE', `${PODS}?labelSelector=app%3Da`);
    expect(a.status).toBe(200);
    expect(a.json.items).toHaveLength(2);
    expect(server.listPods().map((p) => p.metadata.name)).toEqual(['b-0']);
    expect(server.requestCounts().deletecollection).toBe(1);
  });
});
