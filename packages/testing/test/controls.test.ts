import { readFile, rm, stat, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OptionsError } from '@reconcile-loop/primitives';
import { ApiServerStatusError, startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { PODS, WIDGET, call, podBody, types, watch } from './helpers.js';

let server: ApiServer;
async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  server = await startApiServer(o);
  return server;
}
afterEach(async () => {
  await server.close();
});

/** Settles pending I/O callbacks so bytes that were going to arrive have arrived. */
async function roundTrip(s: ApiServer): Promise<void> {
  await call(s, 'GET', '/version');
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

describe('compact', () => {
  it('[testing: compact] drops history: older watches get 410, the compacted revision and later still replay', async () => {
    await start();
    server.seedPods(3);
    const mid = server.revision - 1;
    expect(server.compact(mid)).toBe(mid);
    expect(server.compactedRevision).toBe(mid);
    const old = await watch(server, `${PODS}?watch=true&resourceVersion=${mid - 1}`);
    expect((await old.next()).frame.object).toMatchObject({
      code: 410,
      reason: 'Expired',
      message: `too old resource version: ${mid - 1} (${mid})`,
    });
    const ok = await watch(server, `${PODS}?watch=true&resourceVersion=${mid}`);
    expect((await ok.next()).frame).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'pod-2' } } });
    ok.close();
    expect(server.compact()).toBe(server.revision);
    const exact = await call(server, 'GET', `${PODS}?resourceVersion=${mid}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(410);
  });

  it('[testing: compact] bounded history compacts itself past maxHistory writes', async () => {
    await start({ maxHistory: 3 });
    server.seedPods(5);
    expect(server.compactedRevision).toBe(server.revision - 3);
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=1`);
    expect((await w.next()).frame.type).toBe('ERROR');
  });
});

describe('dropWatches', () => {
  it('[testing: dropWatches] ends every open watch cleanly (EOF); a new watch works', async () => {
    await start();
    const a = await watch(server, `${PODS}?watch=true`);
    const b = await watch(server, `/api/v1/pods?watch=true`);
    await server.waitForWatches(2);
    expect(server.dropWatches()).toBe(2);
    expect(await a.ended).toBe('eof');
    expect(await b.ended).toBe('eof');
    expect(server.openWatchCount).toBe(0);
    const c = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    server.createPod({ metadata: { name: 'after' } });
    expect((await c.next()).frame.type).toBe('ADDED');
    c.close();
  });

  it('[testing: dropWatches] abrupt resets the socket: the client sees an error, not EOF', async () => {
    await start();
    const a = await watch(server, `${PODS}?watch=true`);
    await server.waitForWatches(1);
    expect(server.dropWatches({ abrupt: true })).toBe(1);
    expect(await a.ended).toBe('error');
  });
});

describe('stallWatches', () => {
  it('[testing: stallWatches] bytes stop while the socket stays open; unstall flushes in order', async () => {
    await start();
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    expect(server.stallWatches()).toBe(1);
    server.createPod({ metadata: { name: 'a' } });
    server.createPod({ metadata: { name: 'b' } });
    // A watch opened after the stall is live and receives the next write: the stall is per connection.
    const sentinel = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(2);
    server.createPod({ metadata: { name: 'c' } });
    expect((await sentinel.next()).frame.object.metadata.name).toBe('c');
    await roundTrip(server);
    expect(w.buffered).toBe(0);
    expect(server.openWatchCount).toBe(2);
    expect(server.unstallWatches()).toBe(1);
    const got = [await w.next(), await w.next(), await w.next()].map((f) => f.frame.object.metadata.name);
    expect(got).toEqual(['a', 'b', 'c']);
    w.close();
    sentinel.close();
  });

  it('[testing: stallWatches] a stalled watch outlives its deadline and ends once unstalled', async () => {
    await start({ timeoutSecondsScaleMs: 10 });
    // Stall a watch whose 0.5 s deadline has not passed yet (on a loaded machine it may have by the
    // time the stall comes: then try again with a new one; stallWatches() says how many it caught).
    let w = await watch(server, `${PODS}?watch=true&timeoutSeconds=50`);
    for (let attempt = 1; server.stallWatches() === 0; attempt++) {
      expect(attempt, 'no watch stayed open long enough to be stalled').toBeLessThan(5);
      w = await watch(server, `${PODS}?watch=true&timeoutSeconds=50`);
    }
    // The sentinel opens after the stall with a longer deadline: once it has ended, the stalled
    // watch's deadline has passed.
    const sentinel = await watch(server, `${PODS}?watch=true&timeoutSeconds=100`);
    expect(await sentinel.ended).toBe('eof');
    expect(server.openWatchCount).toBe(1);
    server.unstallWatches();
    expect(await w.ended).toBe('eof');
    expect(server.openWatchCount).toBe(0);
  });
});

describe('frame injection', () => {
  it('[testing: injectMalformedFrame] writes a non-JSON line into open watches; later frames are intact', async () => {
    await start();
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    expect(server.injectMalformedFrame()).toBe(1);
    server.createPod({ metadata: { name: 'a' } });
    const bad = await w.next();
    expect(bad.frame).toBeUndefined();
    expect(() => JSON.parse(bad.raw) as unknown).toThrow();
    expect((await w.next()).frame).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'a' } } });
    w.close();
  });

  it('[testing: injectWatchFrame] writes any frame, e.g. an in-band 410 ERROR into a live watch', async () => {
    await start();
    const w = await watch(server, `${PODS}?watch=true`);
    await server.waitForWatches(1);
    server.injectWatchFrame({
      type: 'ERROR',
      object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Expired', code: 410 },
    });
    expect((await w.next()).frame.object.code).toBe(410);
    w.close();
  });
});

describe('failNext', () => {
  it.each([
    [500, 'InternalError', 'Internal error occurred: injected failure'],
    [429, 'TooManyRequests', 'Too many requests, please try again later.'],
    [410, 'Expired', 'The resourceVersion for the provided list is too old.'],
    [504, 'Timeout', undefined],
    [400, 'BadRequest', 'injected failure: the server rejected the request'],
    [401, 'Unauthorized', 'Unauthorized'],
    [
      403,
      'Forbidden',
      'pods is forbidden: User "system:serviceaccount:default:injected" cannot list resource "pods" in API group ""',
    ],
    [404, 'NotFound', 'the server could not find the requested resource'],
    [422, 'Invalid', 'injected failure: the request is invalid'],
  ] as const)('[testing: failNext] the next LIST answers %i %s, then LIST works again', async (status, reason, message) => {
    await start();
    server.failNext({ verb: 'list', status });
    const a = await call(server, 'GET', PODS);
    expect(a.status).toBe(status);
    expect(a.json).toMatchObject({ kind: 'Status', status: 'Failure', reason, code: status });
    if (message !== undefined) expect(a.json.message).toBe(message);
    if (status === 429) expect(a.headers.get('retry-after')).toBe('1');
    if (status === 504)
      expect(a.json.details.causes).toEqual([{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }]);
    expect((await call(server, 'GET', PODS)).status).toBe(200);
  });

  it('[testing: failNext] a WATCH fails with the HTTP status, or in-band as an ERROR frame with inBand', async () => {
    await start();
    server.failNext({ verb: 'watch', status: 410 });
    const http = await call(server, 'GET', `${PODS}?watch=true&resourceVersion=1`);
    expect(http.status).toBe(410);
    expect(http.json.reason).toBe('Expired');
    server.failNext({ verb: 'watch', status: 504, inBand: true });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=1`);
    expect(w.status).toBe(200);
    const f = await w.next();
    expect(f.frame.type).toBe('ERROR');
    expect(f.frame.object).toMatchObject({ code: 504, reason: 'Timeout' });
    expect(await w.ended).toBe('eof');
  });

  it('[testing: failNext] retryAfterSeconds sets the 429 Retry-After header and details', async () => {
    await start();
    server.failNext({ verb: 'list', status: 429, retryAfterSeconds: 7 });
    const a = await call(server, 'GET', PODS);
    expect(a.headers.get('retry-after')).toBe('7');
    expect(a.json.details.retryAfterSeconds).toBe(7);
    expect(() => server.failNext({ verb: 'list', status: 429, retryAfterSeconds: -1 })).toThrow(OptionsError);
  });

  it("[testing: failNext] 'hang' accepts the request and never answers until the client aborts; the next one is served", async () => {
    await start();
    server.failNext({ verb: 'list', status: 'hang' });
    const aborter = new AbortController();
    const hung = fetch(`${server.url}${PODS}`, { signal: aborter.signal }).then(
      () => 'answered',
      () => 'aborted',
    );
    await server.waitForRequests('list', 1);
    await roundTrip(server);
    aborter.abort();
    expect(await hung).toBe('aborted');
    expect((await call(server, 'GET', PODS)).status).toBe(200);
  });

  it('[testing: failNext] a request left hanging does not keep close() from settling', async () => {
    await start();
    server.failNext({ verb: 'watch', status: 'hang' });
    const hung = fetch(`${server.url}${PODS}?watch=true`).then(
      () => 'answered',
      () => 'reset',
    );
    await server.waitForRequests('watch', 1);
    await server.close();
    expect(await hung).toBe('reset');
  });

  it('[testing: failNext] times fails several requests; other verbs are unaffected; bad options throw', async () => {
    await start();
    server.failNext({ verb: 'list', status: 500, times: 2 });
    expect((await call(server, 'POST', PODS, { body: podBody('p') })).status).toBe(201);
    expect((await call(server, 'GET', PODS)).status).toBe(500);
    expect((await call(server, 'GET', PODS)).status).toBe(500);
    expect((await call(server, 'GET', PODS)).status).toBe(200);
    expect(() => server.failNext({ verb: 'list', status: 418 as never })).toThrow(OptionsError);
    server.failNext({ verb: 'create', status: 429 });
    server.clearFailures();
    expect((await call(server, 'POST', PODS, { body: podBody('q') })).status).toBe(201);
  });
});

describe('requestCounts', () => {
  it('[testing: requestCounts] counts each verb once per request, failures included', async () => {
    await start();
    await call(server, 'POST', PODS, { body: podBody('p') });
    await call(server, 'GET', PODS);
    await call(server, 'GET', `${PODS}/p`);
    await call(server, 'PUT', `${PODS}/p`, { body: { ...podBody('p'), metadata: { name: 'p', labels: { a: 'b' } } } });
    await call(server, 'PATCH', `${PODS}/p`, {
      body: { metadata: { labels: { c: 'd' } } },
      contentType: 'application/merge-patch+json',
    });
    const w = await watch(server, `${PODS}?watch=true`);
    await server.waitForWatches(1);
    w.close();
    await call(server, 'DELETE', `${PODS}/p`);
    server.failNext({ verb: 'list', status: 500 });
    await call(server, 'GET', PODS);
    await call(server, 'GET', '/api/v1');
    expect(server.requestCounts()).toEqual({
      list: 2,
      watch: 1,
      get: 1,
      create: 1,
      update: 1,
      patch: 1,
      delete: 1,
      deletecollection: 0,
      discovery: 1,
    });
    server.resetRequestCounts();
    expect(server.requestCounts().list).toBe(0);
  });
});

describe('kubelet emulation', () => {
  it('[testing: kubelet.bind] sets nodeName and PodScheduled; binding twice is 409', async () => {
    await start();
    server.createPod({ metadata: { name: 'p' } });
    const p = server.kubelet.bind('default', 'p', 'node-a');
    expect(p.spec?.nodeName).toBe('node-a');
    expect(p.status?.conditions).toContainEqual(expect.objectContaining({ type: 'PodScheduled', status: 'True' }));
    let err: unknown;
    try {
      server.kubelet.bind('default', 'p', 'node-b');
    } catch (e) {
      err = e;
    }
    expect(err instanceof ApiServerStatusError).toBe(true);
    expect((err as { status: { code: number } }).status.code).toBe(409);
  });

  it('[testing: kubelet.setRunningReady] Running, Ready, containers running and ready, pod IP; one MODIFIED', async () => {
    await start();
    server.createPod({ metadata: { name: 'p' } });
    expect(() => server.kubelet.setRunningReady('default', 'p')).toThrow(/not bound/);
    server.kubelet.bind('default', 'p', 'node-a');
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const p = server.kubelet.setRunningReady('default', 'p');
    expect(p.status?.phase).toBe('Running');
    expect(p.status?.podIP).toMatch(/^10\.244\./);
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(p.status?.containerStatuses?.[0]).toMatchObject({ name: 'main', ready: true, restartCount: 0, started: true });
    expect((await w.next()).frame.type).toBe('MODIFIED');
    const notReady = server.kubelet.setRunningReady('default', 'p', { ready: false });
    expect(notReady.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(notReady.status?.podIP).toBe(p.status?.podIP);
    expect(notReady.metadata.generation).toBe(p.metadata.generation);
    w.close();
  });

  it('[testing: kubelet.bumpRestartCount] increments restartCount and records lastState terminated', async () => {
    await start();
    server.createPod({
      metadata: { name: 'p' },
      spec: {
        containers: [
          { name: 'a', image: 'x:1' },
          { name: 'b', image: 'y:1' },
        ],
      },
    });
    server.kubelet.bind('default', 'p', 'n');
    server.kubelet.setRunningReady('default', 'p');
    server.kubelet.bumpRestartCount('default', 'p');
    const p = server.kubelet.bumpRestartCount('default', 'p', 'b');
    const byName = Object.fromEntries((p.status?.containerStatuses ?? []).map((c) => [c.name, c]));
    expect(byName['a']!.restartCount).toBe(1);
    expect(byName['b']!.restartCount).toBe(1);
    expect(byName['b']!.lastState).toMatchObject({ terminated: { exitCode: 1, reason: 'Error' } });
    expect(() => server.kubelet.bumpRestartCount('default', 'p', 'zzz')).toThrow(/no container/);
  });

  it('[testing: kubelet.setPhase] terminal phases make a later delete immediate', async () => {
    await start();
    server.createPod({ metadata: { name: 'p' } });
    server.kubelet.bind('default', 'p', 'n');
    expect(server.kubelet.setPhase('default', 'p', 'Succeeded').status?.phase).toBe('Succeeded');
    server.deletePod('default', 'p');
    expect(server.getPod('default', 'p')).toBeUndefined();
  });

  it('[testing: kubelet.finishGracefulDelete] removes a terminating pod (DELETED); refuses one not terminating', async () => {
    await start({ deletionEvents: 'immediate' });
    server.createPod({ metadata: { name: 'p' } });
    server.kubelet.bind('default', 'p', 'n');
    expect(() => server.kubelet.finishGracefulDelete('default', 'p')).toThrow(/not being deleted/);
    const terminating = server.deletePod('default', 'p');
    expect(terminating.metadata.deletionTimestamp).toBeDefined();
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    server.kubelet.finishGracefulDelete('default', 'p');
    expect((await w.next()).frame.type).toBe('DELETED');
    w.close();
  });

  it('[testing: kubelet auto finish] kubeletAutoFinishDeleteMs finishes graceful deletions by itself', async () => {
    await start({ kubeletAutoFinishDeleteMs: 5, deletionEvents: 'immediate' });
    server.createPod({ metadata: { name: 'p' } });
    server.kubelet.bind('default', 'p', 'n');
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    server.deletePod('default', 'p');
    expect(types([await w.next(), await w.next()])).toEqual(['MODIFIED', 'DELETED']);
    w.close();
  });
});

describe('direct object writes', () => {
  it('[testing: createPod/updatePod/deletePod/seedPods] write through the same rules as HTTP', async () => {
    await start();
    const seeded = server.seedPods(3, { namespace: 'pool', labels: { cell: 'engine' }, nodeName: 'n1' });
    expect(seeded.map((p) => p.metadata.name)).toEqual(['pod-0', 'pod-1', 'pod-2']);
    expect(seeded.every((p) => p.spec?.nodeName === 'n1' && p.metadata.labels?.['cell'] === 'engine')).toBe(true);
    const listed = await call(server, 'GET', '/api/v1/namespaces/pool/pods?labelSelector=cell%3Dengine');
    expect(listed.json.items).toHaveLength(3);
    const updated = server.updatePod('pool', 'pod-0', (p) => {
      p.status = { ...p.status, phase: 'Running' };
    });
    expect(updated.status?.phase).toBe('Running');
    const created = server.createPod({ metadata: { name: 'x' } });
    let dup: unknown;
    try {
      server.createPod({ metadata: { name: 'x' } });
    } catch (e) {
      dup = e;
    }
    expect(dup).toMatchObject({ code: 'RL_APISERVER_STATUS', status: { code: 409, reason: 'AlreadyExists' } });
    expect(server.deletePod('default', 'x').metadata.uid).toBe(created.metadata.uid);
    expect(server.listPods('default')).toEqual([]);
    // Returned objects are copies: mutating them changes nothing stored.
    updated.metadata.labels = { hacked: 'yes' };
    expect(server.getPod('pool', 'pod-0')?.metadata.labels).toEqual({ cell: 'engine' });
  });

  it('[testing: registerResource] serves a custom kind, lists it in discovery, refuses duplicates', async () => {
    await start();
    const ref = server.registerResource({
      group: 'example.com',
      version: 'v1',
      kind: 'Widget',
      plural: 'widgets',
      shortNames: ['wd'],
    });
    expect(() => server.registerResource(WIDGET)).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
    const groups = await call(server, 'GET', '/apis');
    expect(groups.json.kind).toBe('APIGroupList');
    expect(groups.json.groups.map((g: { name: string }) => g.name)).toEqual([
      'events.k8s.io',
      'coordination.k8s.io',
      'apiextensions.k8s.io',
      'example.com',
    ]);
    expect(groups.json.groups[3]).toEqual({
      name: 'example.com',
      versions: [{ groupVersion: 'example.com/v1', version: 'v1' }],
      preferredVersion: { groupVersion: 'example.com/v1', version: 'v1' },
    });
    const rl = await call(server, 'GET', '/apis/example.com/v1');
    expect(rl.json.resources.map((r: { name: string }) => r.name)).toEqual(['widgets', 'widgets/status']);
    expect(rl.json.resources[0]).toMatchObject({ kind: 'Widget', namespaced: true, shortNames: ['wd'] });
    server.createObject(ref, { metadata: { name: 'w', namespace: 'default' }, spec: {} });
    expect(server.getObject(ref, 'default', 'w')?.kind).toBe('Widget');
    server.updateObject(ref, 'default', 'w', (o) => {
      o['spec'] = { size: 9 };
    });
    expect(server.getObject(ref, 'default', 'w')?.metadata.generation).toBe(2);
    server.deleteObject(ref, 'default', 'w');
    expect(server.listObjects(ref)).toEqual([]);
    expect(() => server.listObjects({ group: 'nope.io', plural: 'things' })).toThrow(
      expect.objectContaining({ code: 'RL_APISERVER_UNKNOWN_RESOURCE' }),
    );
  });

  it('[testing: discovery] /version, /api and /api/v1 describe the served pods', async () => {
    await start();
    const version = (await call(server, 'GET', '/version')).json;
    expect(Object.keys(version)).toEqual([
      'major',
      'minor',
      'emulationMajor',
      'emulationMinor',
      'minCompatibilityMajor',
      'minCompatibilityMinor',
      'gitVersion',
      'gitCommit',
      'gitTreeState',
      'buildDate',
      'goVersion',
      'compiler',
      'platform',
    ]);
    expect(version).toMatchObject({
      major: '1',
      minor: '35',
      emulationMinor: '35',
      minCompatibilityMinor: '34',
      gitVersion: 'v1.35.4+reconcile-loop',
    });
    expect((await call(server, 'GET', '/api')).json).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    const v1 = await call(server, 'GET', '/api/v1');
    expect(v1.json.resources[0]).toEqual({
      name: 'pods',
      singularName: 'pod',
      namespaced: true,
      kind: 'Pod',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['po'],
      categories: ['all'],
    });
  });
});

describe('kubeconfig, auth, lifecycle', () => {
  it('[testing: kubeconfig] a YAML kubeconfig with the URL and a token; writeKubeconfig writes it 0600', async () => {
    await start();
    const yaml = server.kubeconfig();
    expect(yaml).toContain(`server: "${server.url}"`);
    expect(yaml).toContain('token: "reconcile-loop"');
    expect(yaml).toContain('current-context: "reconcile-loop"');
    const dir = await mkdtemp(join(tmpdir(), 'rl-kubeconfig-'));
    try {
      const path = join(dir, 'config');
      await server.writeKubeconfig(path, { namespace: 'pool' });
      expect(await readFile(path, 'utf8')).toContain('namespace: "pool"');
      expect((await stat(path)).mode & 0o777).toBe(0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('[testing: auth] any bearer token or none is accepted by default; with a token, a wrong one is 401 and none is system:anonymous (403)', async () => {
    await start();
    expect((await call(server, 'GET', PODS, { headers: { Authorization: 'Bearer whatever' } })).status).toBe(200);
    expect((await call(server, 'GET', PODS)).status).toBe(200);
    await server.close();
    await start({ token: 's3cret' });
    const wrong = await call(server, 'GET', PODS, { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', message: 'Unauthorized', code: 401 });
    const anonymous = await call(server, 'GET', PODS);
    expect(anonymous.status).toBe(403);
    expect(anonymous.json).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      message:
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default"',
      details: { kind: 'pods' },
      code: 403,
    });
    const named = await call(server, 'DELETE', '/apis/example.com/v1/namespaces/ns1/widgets/w');
    expect(named.json.message).toBe(
      'widgets.example.com "w" is forbidden: User "system:anonymous" cannot delete resource "widgets" in API group "example.com" in the namespace "ns1"',
    );
    expect(named.json.details).toEqual({ name: 'w', group: 'example.com', kind: 'widgets' });
    expect((await call(server, 'GET', '/api')).json.message).toBe('forbidden: User "system:anonymous" cannot get path "/api"');
    for (const open of ['/version', '/healthz', '/livez', '/readyz'])
      expect((await call(server, 'GET', open)).status, open).toBe(200);
    expect((await call(server, 'GET', PODS, { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
    expect(server.kubeconfig()).toContain('token: "s3cret"');
  });

  it('[testing: close] is idempotent, ends open watches, refuses typed writes and stops listening', async () => {
    await start();
    const w = await watch(server, `${PODS}?watch=true`);
    await server.waitForWatches(1);
    const first = server.close();
    const second = server.close();
    expect(second).toBe(first);
    await first;
    expect(await w.ended).toBe('eof');
    expect(() => server.createPod({ metadata: { name: 'late' } })).toThrow(
      expect.objectContaining({ code: 'RL_APISERVER_CLOSED' }),
    );
    await expect(fetch(`${server.url}/version`)).rejects.toThrow();
  });

  it('[testing: asyncDispose] `await using` closes the server at scope exit', async () => {
    await start();
    let url: string;
    {
      await using s = await startApiServer();
      url = s.url;
      expect((await fetch(`${url}/version`)).status).toBe(200);
    }
    await expect(fetch(`${url}/version`)).rejects.toThrow();
  });
});

describe('typed controls', () => {
  it("[testing: typed controls] createPod never writes to the caller's object nor aliases it: the store keeps its own copy, the caller gets another", async () => {
    const s = await start();
    // No containers: the default container is added to the stored pod, not to the input.
    const bare = { metadata: { name: 'bare', labels: { app: 'a' } } };
    const created = s.createPod(bare);
    expect(bare).toEqual({ metadata: { name: 'bare', labels: { app: 'a' } } });
    expect(created.spec?.containers?.map((c) => c.name)).toEqual(['main']);
    // With containers: changing the input, or the returned pod, after the create changes nothing stored.
    const input = { metadata: { name: 'full', labels: { app: 'b' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } };
    const returned = s.createPod(input);
    input.metadata.labels.app = 'changed';
    input.spec.containers[0]!.image = 'changed';
    returned.metadata.labels!['app'] = 'changed too';
    returned.spec!.containers![0]!.image = 'changed too';
    const stored = s.getPod('default', 'full')!;
    expect(stored.metadata.labels).toEqual({ app: 'b' });
    expect(stored.spec?.containers?.[0]?.image).toBe('i:1');
    expect(s.getPod('default', 'bare')?.spec?.containers?.map((c) => c.image)).toEqual(
      created.spec?.containers?.map((c) => c.image),
    );
  });
});
