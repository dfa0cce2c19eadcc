import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { PODS, WIDGET, call, podBody, types, watch } from './helpers.js';

let server: ApiServer;

async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  // Frame sequences here pin the legacy single-DELETED deletion events; fidelity.test.ts covers 'graceful'.
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 20, deletionEvents: 'immediate', ...o });
  return server;
}
afterEach(async () => {
  await server.close();
});

describe('WATCH', () => {
  it('[testing: watch framing] a 200 chunked application/json stream of one JSON object per line', async () => {
    await start();
    server.seedPods(1);
    const w = await watch(server, `${PODS}?watch=true`);
    expect(w.status).toBe(200);
    expect(w.headers.get('content-type')).toBe('application/json');
    expect(w.headers.get('transfer-encoding')).toBe('chunked');
    const f = await w.next();
    expect(f.frame.type).toBe('ADDED');
    expect(f.frame.object).toMatchObject({ kind: 'Pod', apiVersion: 'v1', metadata: { name: 'pod-0' } });
    expect(f.raw).toBe(JSON.stringify(f.frame));
    w.close();
  });

  it.each(['', '&resourceVersion=0'])(
    '[testing: watch rv ""/"0"] starts with synthetic ADDED for the current state (query %s)',
    async (q) => {
      await start();
      server.seedPods(2);
      const w = await watch(server, `${PODS}?watch=true${q}`);
      const a = await w.next();
      const b = await w.next();
      expect([a.frame.type, b.frame.type]).toEqual(['ADDED', 'ADDED']);
      expect([a.frame.object.metadata.name, b.frame.object.metadata.name]).toEqual(['pod-0', 'pod-1']);
      await server.waitForWatches(1);
      server.createPod({ metadata: { name: 'pod-2' } });
      const c = await w.next();
      expect(c.frame).toMatchObject({
        type: 'ADDED',
        object: { metadata: { name: 'pod-2', resourceVersion: String(server.revision) } },
      });
      w.close();
    },
  );

  it('[testing: watch from rv] replays every write after the version, in revision order, then streams', async () => {
    await start();
    server.seedPods(1);
    const from = server.revision;
    server.createPod({ metadata: { name: 'b' } });
    server.updatePod('default', 'b', (p) => {
      p.metadata.labels = { x: 'y' };
    });
    server.deletePod('default', 'pod-0');
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${from}`);
    const frames = [await w.next(), await w.next(), await w.next()];
    expect(types(frames)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    const rvs = frames.map((f) => Number(f.frame.object.metadata.resourceVersion));
    expect(rvs).toEqual([from + 1, from + 2, from + 3]);
    expect(frames[2]!.frame.object.metadata.name).toBe('pod-0');
    w.close();
  });

  it('[testing: watch 410 ERROR frame] a compacted version gets an in-band ERROR with the watch cache wording, then EOF', async () => {
    await start();
    server.seedPods(3);
    const compacted = server.compact();
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=1`);
    expect(w.status).toBe(200);
    const f = await w.next();
    expect(f.raw).toBe(
      JSON.stringify({
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: 1 (${compacted})`,
          reason: 'Expired',
          code: 410,
        },
      }),
    );
    expect(await w.ended).toBe('eof');
  });

  it('[testing: watch 410 ERROR frame] the compacted revision itself is still watchable', async () => {
    await start();
    server.seedPods(1);
    const c = server.compact();
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${c}`);
    await server.waitForWatches(1);
    server.createPod({ metadata: { name: 'next' } });
    expect((await w.next()).frame.type).toBe('ADDED');
    w.close();
  });

  it('[testing: watch 504 too large] with futureWatch "error", a future version waits, then an in-band ERROR with the 504 Timeout Status', async () => {
    await start({ futureWatch: 'error', tooLargeResourceVersionWaitMs: 100 });
    const future = server.revision + 10;
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${future}`);
    const f = await w.next();
    expect(f.frame.type).toBe('ERROR');
    expect(f.frame.object).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Timeout: Too large resource version: ${future}, current: ${server.revision}`,
      reason: 'Timeout',
      details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
      code: 504,
    });
    expect(await w.ended).toBe('eof');
  });

  it('[testing: watch future wait] by default a future version is held silently (no frames, no bookmarks), then delivers only writes after it', async () => {
    await start({ bookmarkIntervalMs: 20, tooLargeResourceVersionWaitMs: 20 });
    const want = server.revision + 2;
    const w = await watch(server, `${PODS}?watch=true&allowWatchBookmarks=true&resourceVersion=${want}`);
    expect(w.status).toBe(200);
    await server.waitForWatches(1);
    await new Promise((r) => setTimeout(r, 100)); // five bookmark periods and past the LIST wait
    expect(w.buffered).toBe(0);
    server.createPod({ metadata: { name: 'a' } });
    server.createPod({ metadata: { name: 'b' } });
    server.createPod({ metadata: { name: 'c' } });
    const f = await w.until((x) => x.frame.type !== 'BOOKMARK');
    expect(f.skipped.every((x) => Number(x.frame.object.metadata.resourceVersion) >= want)).toBe(true);
    expect(f.hit.frame.object.metadata.name).toBe('c');
    w.close();
  });

  it('[testing: watch future wait] a future version that never arrives ends cleanly at timeoutSeconds, as kube-apiserver does', async () => {
    await start({ timeoutSecondsScaleMs: 50 });
    const w = await watch(server, `${PODS}?watch=true&timeoutSeconds=2&resourceVersion=${server.revision + 100}`);
    expect(w.status).toBe(200);
    expect(await w.ended).toBe('eof');
    expect(await w.rest()).toEqual([]);
  });

  it("[testing: watch malformed rv] a malformed resourceVersion on WATCH is the real server's 500; on LIST its 400", async () => {
    await start();
    const w = await call(server, 'GET', `${PODS}?watch=true&resourceVersion=abc`);
    expect(w.status).toBe(500);
    expect(w.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
      code: 500,
    });
    const l = await call(server, 'GET', `${PODS}?resourceVersion=-1`);
    expect(l.status).toBe(400);
    expect(l.json).toMatchObject({
      reason: 'BadRequest',
      message: 'invalid resource version: resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax',
    });
  });

  it('[testing: watch timeoutSeconds] the stream ends cleanly (EOF, no ERROR) at the deadline', async () => {
    await start({ timeoutSecondsScaleMs: 30 });
    const w = await watch(server, `${PODS}?watch=true&timeoutSeconds=1`);
    await server.waitForWatches(1);
    expect(await w.ended).toBe('eof');
    expect(await w.rest()).toEqual([]);
    expect(server.openWatchCount).toBe(0);
  });

  it('[testing: bookmarks] periodic BOOKMARK frames carry kind, apiVersion, the current revision and (pods) the empty spec/status stubs', async () => {
    await start({ bookmarkIntervalMs: 15 });
    server.seedPods(1);
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}&allowWatchBookmarks=true`);
    const f = await w.next();
    expect(f.raw).toBe(
      JSON.stringify({
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(server.revision) },
          spec: { containers: null },
          status: {},
        },
      }),
    );
    server.createPod({ metadata: { name: 'b' } });
    const { hit } = await w.until((x) => x.frame.type === 'BOOKMARK');
    expect(hit.frame.object.metadata.resourceVersion).toBe(String(server.revision));
    w.close();
  });

  it('[testing: bookmarks] one BOOKMARK arrives just before the timeout ends the stream; none without allowWatchBookmarks', async () => {
    await start({ timeoutSecondsScaleMs: 40, bookmarkBeforeTimeoutMs: 20 });
    const w = await watch(server, `${PODS}?watch=true&timeoutSeconds=1&allowWatchBookmarks=true`);
    const frames = await w.rest();
    expect(types(frames)).toEqual(['BOOKMARK']);
    expect(await w.ended).toBe('eof');
    const quiet = await watch(server, `${PODS}?watch=true&timeoutSeconds=1`);
    expect(await quiet.rest()).toEqual([]);
  });

  it('[testing: watch selector transitions] an object entering the selector is ADDED, leaving it DELETED', async () => {
    await start();
    server.createPod({ metadata: { name: 'p', labels: { app: 'a' } } });
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}&labelSelector=app%3Db`);
    await server.waitForWatches(1);
    server.updatePod('default', 'p', (p) => {
      p.metadata.labels = { app: 'b' };
    });
    server.updatePod('default', 'p', (p) => {
      p.metadata.annotations = { touched: 'yes' };
    });
    server.updatePod('default', 'p', (p) => {
      p.metadata.labels = { app: 'c' };
    });
    server.updatePod('default', 'p', (p) => {
      p.metadata.annotations = { touched: 'again' };
    });
    server.createPod({ metadata: { name: 'q', labels: { app: 'b' } } });
    const frames = [await w.next(), await w.next(), await w.next(), await w.next()];
    expect(frames.map((f) => `${f.frame.type} ${f.frame.object.metadata.name}`)).toEqual([
      'ADDED p',
      'MODIFIED p',
      'DELETED p',
      'ADDED q',
    ]);
    expect(frames[2]!.frame.object.metadata.labels).toEqual({ app: 'c' });
    w.close();
  });

  it('[testing: DELETED frame] carries the last state stamped with the deletion revision', async () => {
    await start();
    server.seedPods(1);
    const w = await watch(server, `${PODS}?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    const before = server.getPod('default', 'pod-0')!;
    server.deletePod('default', 'pod-0');
    const f = await w.next();
    expect(f.frame.type).toBe('DELETED');
    expect(f.frame.object.metadata.uid).toBe(before.metadata.uid);
    expect(f.frame.object.metadata.resourceVersion).toBe(String(server.revision));
    w.close();
  });

  it('[testing: watch namespaces] a namespaced watch sees its namespace only; /api/v1/pods sees all', async () => {
    await start();
    const ns = await watch(server, `/api/v1/namespaces/a/pods?watch=true&resourceVersion=${server.revision}`);
    const all = await watch(server, `/api/v1/pods?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(2);
    server.createPod({ metadata: { name: 'x', namespace: 'b' } });
    server.createPod({ metadata: { name: 'y', namespace: 'a' } });
    expect((await ns.next()).frame.object.metadata.name).toBe('y');
    expect((await all.next()).frame.object.metadata.name).toBe('x');
    expect((await all.next()).frame.object.metadata.name).toBe('y');
    ns.close();
    all.close();
  });

  it('[testing: watch one object] ?watch=true on a named pod follows that pod only', async () => {
    await start();
    server.seedPods(2);
    const w = await watch(server, `${PODS}/pod-1?watch=true&resourceVersion=${server.revision}`);
    await server.waitForWatches(1);
    server.updatePod('default', 'pod-0', (p) => {
      p.metadata.labels = { a: 'b' };
    });
    server.updatePod('default', 'pod-1', (p) => {
      p.metadata.labels = { a: 'b' };
    });
    const f = await w.next();
    expect(f.frame).toMatchObject({ type: 'MODIFIED', object: { metadata: { name: 'pod-1' } } });
    w.close();
  });

  it('[testing: sendInitialEvents] watch-list streams the state, then a BOOKMARK annotated initial-events-end', async () => {
    await start();
    server.seedPods(2);
    const w = await watch(
      server,
      `${PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=`,
    );
    const frames = [await w.next(), await w.next(), await w.next()];
    expect(types(frames)).toEqual(['ADDED', 'ADDED', 'BOOKMARK']);
    expect(frames[2]!.frame.object.metadata).toEqual({
      resourceVersion: String(server.revision),
      annotations: { 'k8s.io/initial-events-end': 'true' },
    });
    w.close();
    const bad = await call(server, 'GET', `${PODS}?watch=true&sendInitialEvents=true`);
    expect(bad.status).toBe(422);
    const badMatch = await call(server, 'GET', `${PODS}?watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1`);
    expect(badMatch.status).toBe(422);
  });

  it('[testing: sendInitialEvents] without allowWatchBookmarks the initial events still come (200), with no initial-events-end bookmark, as kube-apiserver 1.35', async () => {
    await start({ bookmarkIntervalMs: 20 });
    server.seedPods(2);
    const w = await watch(server, `${PODS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`);
    const frames = [await w.next(), await w.next()];
    expect(types(frames)).toEqual(['ADDED', 'ADDED']);
    server.createPod({ metadata: { name: 'later', namespace: 'default' } });
    expect((await w.next()).frame).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'later' } } });
    w.close();
  });

  it('[testing: sendInitialEvents] watchList: false answers a watch-list as kube-apiserver with --feature-gates=WatchList=false: 422 naming sendInitialEvents', async () => {
    await start({ watchList: false });
    const refused = await call(
      server,
      'GET',
      `${PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
    );
    expect(refused.status).toBe(422);
    expect(refused.json).toMatchObject({
      reason: 'Invalid',
      message:
        'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
      details: { causes: [{ reason: 'FieldValueForbidden', field: 'sendInitialEvents' }] },
    });
    const plain = await watch(server, `${PODS}?watch=true&resourceVersion=0`);
    plain.close();
  });

  it('[testing: watch Table] kubectl-style Accept gets each event as a one-row Table, columns on the first only', async () => {
    await start();
    server.seedPods(2);
    const w = await watch(server, `${PODS}?watch=true`, {
      Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    });
    const a = await w.next();
    const b = await w.next();
    expect(a.frame.object.kind).toBe('Table');
    expect(a.frame.object.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      'Name',
      'Ready',
      'Status',
      'Restarts',
      'Age',
      'IP',
      'Node',
      'Nominated Node',
      'Readiness Gates',
    ]);
    expect(a.frame.object.rows[0].cells.slice(0, 4)).toEqual(['pod-0', '0/1', 'Pending', '0']);
    expect(a.frame.object.rows[0].object).toMatchObject({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { name: 'pod-0' },
    });
    expect(b.frame.object.columnDefinitions).toBeNull();
    w.close();
  });

  it('[testing: watch of a custom resource] the generic path streams registered kinds', async () => {
    await start();
    const ref = server.registerResource(WIDGET);
    const w = await watch(
      server,
      `/apis/example.com/v1/namespaces/default/widgets?watch=true&resourceVersion=${server.revision}`,
    );
    await server.waitForWatches(1);
    const created = await call(server, 'POST', '/apis/example.com/v1/namespaces/default/widgets', {
      body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } },
    });
    expect(created.status).toBe(201);
    server.createPod(podBody('not-a-widget') as never);
    const f = await w.next();
    expect(f.frame).toMatchObject({
      type: 'ADDED',
      object: { kind: 'Widget', apiVersion: 'example.com/v1', metadata: { name: 'w1' }, spec: { size: 3 } },
    });
    expect(server.listObjects(ref)).toHaveLength(1);
    w.close();
  });

  it('[testing: watch client abort] a client that goes away is forgotten', async () => {
    await start();
    const w = await watch(server, `${PODS}?watch=true`);
    await server.waitForWatches(1);
    w.close();
    await expect(w.ended).resolves.toBe('error');
    // The server notices the socket close asynchronously; wait for it observably.
    await server.waitForWatches((n) => n === 0);
    expect(server.openWatchCount).toBe(0);
  });
});
