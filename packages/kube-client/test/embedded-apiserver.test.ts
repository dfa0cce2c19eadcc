import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema, podResource, podSchema } from '@reconcile-loop/k8s-types';
import { scaledClock, within } from '@reconcile-loop/test-support';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  addFinalizer,
  createIfAbsent,
  deleteIfPresent,
  isAlreadyExists,
  isConflict,
  isExpired,
  isInvalid,
  isNotFound,
  isUnauthorized,
  KubeClient,
  patchStatus,
  removeFinalizer,
  statusError,
  updateStatus,
} from './all.js';

// The integration layer: the real HTTP transport, auth from a client-node KubeConfig, against the
// embedded apiserver of @reconcile-loop/testing. Apply, strategic merge, Events and the writes raced
// by a second client are in writes-embedded-apiserver.test.ts; all of them again in the e2e layer.

const cellResource = { group: 'example.io', version: 'v1', plural: 'cellsets', kind: 'CellSet' };
const cellSchema = objectSchema({
  spec: z.object({ replicas: z.number() }),
  status: z
    .object({ replicas: z.number().optional(), readyReplicas: z.number().optional(), observedGeneration: z.number().optional() })
    .optional(),
});

let server: ApiServer;
let client: KubeClient;

beforeEach(async () => {
  server = await startApiServer({ timeoutSecondsScaleMs: 50, bookmarkIntervalMs: 100 });
  server.registerResource({ group: 'example.io', version: 'v1', kind: 'CellSet', plural: 'cellsets' });
  server.createNamespace('ns'); // as on a real cluster, creating into a missing namespace is 404
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  client = new KubeClient({ kubeConfig: kc, clock: scaledClock(50), rateLimit: false });
});

afterEach(async () => {
  await server.close();
});

const podBody = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

describe('[kube_client: verbs] over real HTTP against the embedded apiserver', () => {
  it('create, get, list with selectors and pages, update with a stale resourceVersion (409), merge and JSON patch, updateStatus, delete with preconditions, deleteCollection', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace('ns');
    const a = await pods.create(podBody('a', { app: 'x' }));
    await pods.create(podBody('b', { app: 'x' }));
    await pods.create(podBody('c', { app: 'y' }));
    expect(isAlreadyExists(await pods.create(podBody('a')).catch((e: unknown) => e))).toBe(true);
    expect((await pods.get('a')).metadata.uid).toBe(a.metadata.uid);
    expect(isNotFound(await pods.get('zzz').catch((e: unknown) => e))).toBe(true);
    expect((await pods.list({ labelSelector: 'app=x' })).items.map((p) => p.metadata.name)).toEqual(['a', 'b']);
    const pages = [];
    for await (const page of pods.listPages({ limit: 2 })) pages.push(page.items.map((p) => p.metadata.name));
    expect(pages).toEqual([['a', 'b'], ['c']]);

    const raw = await pods.raw.get('a');
    raw.metadata.labels = { ...raw.metadata.labels, updated: 'yes' };
    const updated = await pods.update(raw);
    expect(updated.metadata.labels['updated']).toBe('yes');
    expect(isConflict(await pods.update(raw).catch((e: unknown) => e))).toBe(true);

    const merged = await pods.patch('a', { type: 'merge', body: { metadata: { labels: { merged: 'yes' } } } });
    expect(merged.metadata.labels).toMatchObject({ app: 'x', updated: 'yes', merged: 'yes' });
    const jsonPatched = await pods.patch('a', {
      type: 'json',
      body: [{ op: 'add', path: '/metadata/annotations', value: { note: 'json' } }],
    });
    expect(jsonPatched.metadata.annotations).toEqual({ note: 'json' });
    const withStatus = await pods.updateStatus({ ...(await pods.raw.get('a')), status: { phase: 'Running' } });
    expect(withStatus.status.phase).toBe('Running');
    const statusPatched = await pods.patch(
      'a',
      { type: 'merge', body: { status: { phase: 'Succeeded' } } },
      { subresource: 'status' },
    );
    expect(statusPatched.status.phase).toBe('Succeeded');

    const wrongUid = await pods.delete('a', { preconditions: { uid: 'nope' } }).catch((e: unknown) => e);
    expect(isConflict(wrongUid)).toBe(true);
    expect((wrongUid as Error).message).toMatch(/the UID in the precondition \(.*\) does not match the UID in record/);
    const deleted = await pods.delete('a', { preconditions: { uid: a.metadata.uid } });
    expect(deleted.kind).toBe('object');
    const swept = await pods.deleteCollection({ labelSelector: 'app=x' });
    expect('items' in swept && swept.items.map((p) => p.metadata.name)).toEqual(['b']);
    expect((await pods.list()).items.map((p) => p.metadata.name)).toEqual(['c']);
  });

  it('a custom resource: spec writes bump generation, /status writes status only, and a pod with an invalid name is 422 Invalid', async () => {
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    const created = await cells.create({
      apiVersion: 'example.io/v1',
      kind: 'CellSet',
      metadata: { name: 'web' },
      spec: { replicas: 2 },
    });
    expect(created.metadata.generation).toBe(1);
    const respec = await cells.patch('web', { type: 'merge', body: { spec: { replicas: 3 } } });
    expect(respec.metadata.generation).toBe(2);
    const status = await cells.patch(
      'web',
      { type: 'merge', body: { spec: { replicas: 9 }, status: { replicas: 3 } } },
      { subresource: 'status' },
    );
    expect([status.spec.replicas, status.status?.replicas, status.metadata.generation]).toEqual([3, 3, 2]);
    const invalid = await client
      .resource(podResource)
      .inNamespace('ns')
      .create(podBody('Bad_Name'))
      .catch((e: unknown) => e);
    expect(isInvalid(invalid)).toBe(true);
  });

  it('watch: typed frames from a cursor, bookmarks, the server ending it at timeoutSeconds, and an in-band 410 after compaction', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace('ns');
    const listed = await pods.list();
    const seen: string[] = [];
    const done = within(
      (async () => {
        for await (const frame of pods.watch({ resourceVersion: listed.resourceVersion, timeoutSeconds: 10 })) {
          seen.push(
            frame.type === 'BOOKMARK'
              ? 'BOOKMARK'
              : frame.type === 'ERROR'
                ? 'ERROR'
                : `${frame.type} ${frame.object.metadata.name}`,
          );
          if (frame.type === 'ADDED') await pods.delete('w', { gracePeriodSeconds: 0 });
        }
      })(),
      'the watch to end at timeoutSeconds',
      10_000,
    );
    await server.waitForWatches(1);
    await pods.create(podBody('w'));
    await done;
    expect(seen.filter((s) => s !== 'BOOKMARK')).toEqual(['ADDED w', 'MODIFIED w', 'DELETED w']); // the terminating MODIFIED (grace 0) comes first, as on kube-apiserver
    expect(seen).toContain('BOOKMARK');

    server.compact();
    const frames = [];
    for await (const frame of pods.watch({ resourceVersion: listed.resourceVersion, timeoutSeconds: 10 })) frames.push(frame);
    const last = frames.at(-1)!;
    expect(last.type === 'ERROR' && isExpired(statusError(last.status, 'watch', '/api/v1/namespaces/ns/pods'))).toBe(true);
  });

  it('Retry-After: a 429 on create is retried after the server-given wait and the object is created once', async () => {
    const pods = client.resource(podResource, podSchema).inNamespace('ns');
    server.failNext({ verb: 'create', status: 429, times: 2 });
    const created = await pods.create(podBody('r'));
    expect(created.metadata.name).toBe('r');
    expect(server.requestCounts()['create']).toBe(3);
  });
});

describe('[kube_client: UpdateStatus with RetryOnConflict] two real writers race on one status over HTTP: every mutation lands', () => {
  it('two clients each bump their own status counter 15 times concurrently through updateStatus; both end at 15', async () => {
    await client
      .resource(cellResource)
      .inNamespace('ns')
      .create({ metadata: { name: 'race' }, spec: { replicas: 1 } });
    const kc = new KubeConfig();
    kc.loadFromString(server.kubeconfig());
    const other = new KubeClient({ kubeConfig: kc, clock: scaledClock(50), rateLimit: false });
    const bump = (c: KubeClient, field: 'replicas' | 'readyReplicas') => async () => {
      const cells = c.resource(cellResource, cellSchema).inNamespace('ns');
      let conflicts = 0;
      for (let i = 0; i < 15; i++) {
        const result = await updateStatus(
          cells,
          'race',
          (o) => {
            const status = (o['status'] ?? {}) as Record<string, number>;
            o['status'] = { ...status, [field]: (status[field] ?? 0) + 1 };
          },
          { retry: { initialMs: 1, maxMs: 1, factor: 1, jitter: 1 }, attempts: 50 },
        );
        conflicts += result.attempts - 1;
      }
      return conflicts;
    };
    const conflicts = await Promise.all([bump(client, 'replicas')(), bump(other, 'readyReplicas')()]);
    const final = await client.resource(cellResource, cellSchema).inNamespace('ns').get('race');
    expect(final.status).toMatchObject({ replicas: 15, readyReplicas: 15 });
    // the race was real: at least one write met a 409 and was re-applied
    expect(conflicts[0]! + conflicts[1]!).toBeGreaterThan(0);
  });

  it('patchStatus with an optimistic lock lands on top of a concurrent spec change', async () => {
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    await cells.create({ metadata: { name: 'p' }, spec: { replicas: 2 } });
    let first = true;
    const result = await patchStatus(cells, 'p', async (current) => {
      if (first) {
        first = false;
        await cells.patch('p', { type: 'merge', body: { spec: { replicas: 4 } } });
      }
      return { replicas: current.spec.replicas, observedGeneration: current.metadata.generation };
    });
    expect(result).toMatchObject({ written: true, attempts: 2, object: { status: { replicas: 4, observedGeneration: 2 } } });
  });
});

describe('[kube_client: controllerutil.AddFinalizer] finalizers over HTTP: a delete waits for the removal', () => {
  it('addFinalizer idempotent; delete marks the object; removeFinalizer lets it go; removing again is success', async () => {
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    await cells.create({ metadata: { name: 'f' }, spec: { replicas: 1 } });
    expect((await addFinalizer(cells, 'f', 'example.io/cleanup')).changed).toBe(true);
    expect((await addFinalizer(cells, 'f', 'example.io/cleanup')).changed).toBe(false);
    const deleting = await deleteIfPresent(cells, 'f');
    expect(deleting.outcome === 'deleted' && deleting.object?.metadata.deletionTimestamp).toBeGreaterThan(0);
    expect((await cells.get('f')).metadata.deletionTimestamp).toBeGreaterThan(0);
    expect((await removeFinalizer(cells, 'f', 'example.io/cleanup')).changed).toBe(true);
    expect(isNotFound(await cells.get('f').catch((e: unknown) => e))).toBe(true);
    expect(await removeFinalizer(cells, 'f', 'example.io/cleanup')).toEqual({ object: undefined, changed: false, attempts: 1 });
  });
});

describe('[kube_client: create-if-absent] and [kube_client: delete-if-present] over HTTP (seed 003)', () => {
  it('the GC anchor is created once; attempt-pinned deletes leave a newer pod of the same name alone', async () => {
    const cms = client
      .resource({ group: 'example.io', version: 'v1', plural: 'cellsets', kind: 'CellSet' }, cellSchema)
      .inNamespace('ns');
    const first = await createIfAbsent(cms, { metadata: { name: 'anchor' }, spec: { replicas: 0 } });
    const again = await createIfAbsent(cms, { metadata: { name: 'anchor' }, spec: { replicas: 5 } });
    expect([first.created, again.created, again.object.metadata.uid]).toEqual([true, false, first.object.metadata.uid]);

    const pods = client.resource(podResource, podSchema).inNamespace('ns');
    const attempt1 = await pods.create(podBody('task-0'));
    await pods.delete('task-0', { gracePeriodSeconds: 0 });
    const attempt2 = await pods.create(podBody('task-0'));
    expect((await deleteIfPresent(pods, 'task-0', { preconditions: { uid: attempt1.metadata.uid } })).outcome).toBe(
      'precondition-failed',
    );
    expect((await pods.get('task-0')).metadata.uid).toBe(attempt2.metadata.uid);
    expect(
      (await deleteIfPresent(pods, 'task-0', { preconditions: { uid: attempt2.metadata.uid }, gracePeriodSeconds: 0 })).outcome,
    ).toBe('deleted');
    expect((await deleteIfPresent(pods, 'task-0', { preconditions: { uid: attempt2.metadata.uid } })).outcome).toBe('absent');
  });
});

describe('[kube_client: rest.Config auth] a server URL and a bearer token, without a kubeconfig', () => {
  it('the token goes as Authorization: Bearer over the real transport; a wrong one is 401 Unauthorized', async () => {
    await using secured = await startApiServer({ token: 't0ken' });
    secured.createNamespace('ns');
    const good = new KubeClient({ server: secured.url, token: 't0ken', rateLimit: false });
    const created = await good.resource(podResource, podSchema).inNamespace('ns').create(podBody('authed'));
    expect(created.metadata.name).toBe('authed');
    const bad = new KubeClient({ server: secured.url, token: 'wrong', rateLimit: false });
    const error = await bad
      .resource(podResource)
      .inNamespace('ns')
      .get('authed')
      .catch((e: unknown) => e);
    expect(isUnauthorized(error)).toBe(true);
    expect(JSON.stringify({ ...(error as object), message: (error as Error).message })).not.toContain('wrong');
  });
});
