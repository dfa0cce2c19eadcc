import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { PODS, call, watch } from './helpers.js';

let server: ApiServer;

async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 200, ...o });
  return server;
}
afterEach(async () => {
  await server.close();
});

describe("personality: 'cached' (default) vs 'uncached' (--watch-cache=false)", () => {
  it('[testing: personality] rv=0 with limit: the cached server ignores limit, the uncached one pages', async () => {
    await start({ personality: 'uncached' });
    server.seedPods(3);
    const a = await call(server, 'GET', `${PODS}?resourceVersion=0&limit=2`);
    expect(a.json.items).toHaveLength(2);
    expect(a.json.metadata.continue).toBeDefined();
    expect(a.json.metadata.remainingItemCount).toBe(1);
  });

  it('[testing: personality] a future-version LIST: cached waits then 504 with retryAfterSeconds; uncached 504 at once without it', async () => {
    // Uncached: configured to wait a minute, it answers anyway — so it did not wait (the test's own
    // 5 s deadline is the failure if it did), and no Retry-After.
    await start({ personality: 'uncached', tooLargeResourceVersionWaitMs: 60_000 });
    const a = await call(server, 'GET', `${PODS}?resourceVersion=${server.revision + 5}`);
    expect(a.status).toBe(504);
    expect(a.json.details).toEqual({ causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] });
    expect(a.headers.get('retry-after')).toBeNull();
    await server.close();
    await start();
    const b = await call(server, 'GET', `${PODS}?resourceVersion=${server.revision + 5}`);
    expect(b.status).toBe(504);
    expect(b.json.details.retryAfterSeconds).toBe(1);
    await server.close();
    // Cached: it waits for the revision — once writes reach it, the same LIST is answered 200.
    await start({ tooLargeResourceVersionWaitMs: 60_000 });
    const target = server.revision + 2;
    const pending = call(server, 'GET', `${PODS}?resourceVersion=${target}`);
    await server.waitForRequests('list', 1); // the LIST arrived (and waits: the revision is not there yet)
    server.createPod({ metadata: { name: 'a', namespace: 'default' } });
    server.createPod({ metadata: { name: 'b', namespace: 'default' } });
    const c = await pending;
    expect(c.status).toBe(200);
    expect(Number(c.json.metadata.resourceVersion)).toBeGreaterThanOrEqual(target);
  });

  it('[testing: personality] after an etcd compaction the cached server replays a cursor from its window; the uncached one sends the etcd 410', async () => {
    for (const personality of ['cached', 'uncached'] as const) {
      await start({ personality });
      server.createPod({ metadata: { name: 'a', namespace: 'default' } });
      const cursor = server.revision;
      server.createPod({ metadata: { name: 'b', namespace: 'default' } });
      server.compact(undefined, { keepWatchCache: true });
      const w = await watch(server, `${PODS}?watch=true&resourceVersion=${cursor}`);
      const f = await w.next();
      if (personality === 'cached') {
        expect(f.frame).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'b' } } });
        w.close();
      } else {
        expect(f.frame.type).toBe('ERROR');
        expect(f.frame.object).toMatchObject({
          code: 410,
          reason: 'Expired',
          message: 'The resourceVersion for the provided watch is too old.',
        });
        expect(await w.ended).toBe('eof');
      }
      // An Exact list below the compaction is 410 on both: it reads etcd.
      expect((await call(server, 'GET', `${PODS}?resourceVersion=${cursor}&resourceVersionMatch=Exact`)).status).toBe(410);
      await server.close();
    }
    await start();
  });

  it('[testing: personality] bookmarks: cached sends one before the deadline (not when timeoutSeconds is below the lead time); uncached sends none', async () => {
    const opts = { timeoutSecondsScaleMs: 100, bookmarkBeforeTimeoutMs: 200, bookmarkIntervalMs: 60_000 };
    await start(opts);
    const a = await watch(
      server,
      `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=${server.revision}`,
    );
    expect((await a.ended) && (await a.rest()).map((f) => f.frame.type)).toEqual(['BOOKMARK']);
    const short = await watch(
      server,
      `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=${server.revision}`,
    );
    expect((await short.ended) && (await short.rest())).toEqual([]);
    await server.close();
    await start({ ...opts, personality: 'uncached', bookmarkIntervalMs: 50 });
    const b = await watch(
      server,
      `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=${server.revision}`,
    );
    expect((await b.ended) && (await b.rest())).toEqual([]);
  });
});
