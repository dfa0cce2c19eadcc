import type { Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore, type SourceEvent } from '@reconcile-loop/object-store';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import type { ReflectorOptions } from '../src/index.js';
import { WATCH_LIST_GIVE_UP_AFTER } from '../src/options.js';
import { advance, bookmark, errorFrame, line, openReflector, pod, type FakeClient, apiError } from './helpers.js';

/** The bookmark that ends a watch-list's initial events. */
function endBookmark(resourceVersion: string): string {
  return line('BOOKMARK', {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
  });
}

function summary(event: SourceEvent<Pod>): string {
  return event.type === 'replace'
    ? `replace ${[...event.objects.keys()].join(',')}`
    : `${event.type} ${event.type !== 'release' && event.key}`;
}

function status(code: number, reason: string, message = ''): { kind: string; code: number; reason: string; message: string } {
  return { kind: 'Status', code, reason, message };
}

function setup(options: Partial<ReflectorOptions<Pod>> = {}, prepare: (client: FakeClient) => void = () => {}) {
  return openReflector({ initialList: 'watch-list', ...options }, prepare);
}

describe('Reflector: streaming initial list (watch-list)', () => {
  it('[k8s_reflector: Streaming initial list] initial ADDED frames are gathered, nothing is emitted until the initial-events-end bookmark, which yields one replace and becomes the cursor; the watch goes on on the same stream', async () => {
    const { client, reflector, stream } = setup();
    await settle();
    expect(client.lists).toEqual([]);
    const request = client.watch0.request;
    expect(request).toMatchObject({
      resourceVersion: '',
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
    });
    expect(reflector.health()).toMatchObject({ listed: false, streaming: true });
    // Initial events are not ordered by resourceVersion: the cursor does not follow them.
    client.watch0.push(line('ADDED', pod('b', '30')), line('ADDED', pod('a', '12')), bookmark('31'));
    await settle();
    expect(stream.events).toEqual([]);
    expect(reflector.resourceVersion).toBeUndefined();
    client.watch0.push(line('ADDED', pod('c', '20')), endBookmark('40'));
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/b,ns/a,ns/c']);
    expect(reflector.resourceVersion).toBe('40');
    expect(reflector.health()).toMatchObject({ listed: true, streaming: true, consecutiveFailures: 0 });
    client.watch0.push(line('MODIFIED', pod('a', '41')), line('DELETED', pod('b', '42')));
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/b,ns/a,ns/c', 'upsert ns/a', 'delete ns/b']);
    expect(reflector.resourceVersion).toBe('42');
    expect(client.watches).toHaveLength(1);
    expect(reflector.stats).toMatchObject({ lists: 0, watchLists: 1, watches: 1, watchListFallbacks: 0, relists: 0 });
  });

  it('[k8s_reflector: Streaming initial list] a poison object among the initial events is quarantined, held out of the replace, and listed in health()', async () => {
    const { client, reflector, stream } = setup();
    await settle();
    client.watch0.push(
      line('ADDED', pod('good', '5')),
      line('ADDED', pod('bad', '6', { spec: { containers: 'nope' } })),
      endBookmark('9'),
    );
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/good']);
    expect(reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/bad']);
    expect(reflector.stats.invalidObjects).toBe(1);
  });

  it('[k8s_reflector: Streaming initial list] an unreadable initial frame is skipped; its heal relist is armed only once the watch runs on the same stream, never cutting the initial phase', async () => {
    const { client, reflector, stream, clock } = setup({ retry: { initialMs: 1_000, maxMs: 30_000 } });
    await settle();
    client.watch0.push(line('ADDED', pod('a', '5')), '{"type":"ADDED","object":');
    await advance(clock, 5_000); // past the heal delay, still in the initial phase
    expect(client.watches).toHaveLength(1);
    expect(stream.events).toEqual([]);
    client.watch0.push(endBookmark('9'));
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/a']);
    await advance(clock, 1); // the heal is overdue: armed at the swap, it fires at once
    await settle();
    expect(reflector.stats).toMatchObject({ skippedFrames: 1, healRelists: 1, watchLists: 2 });
  });

  it("[k8s_reflector: Streaming initial list] initialList 'auto' streams only over a client that declares supportsWatchList; otherwise it LISTs", async () => {
    const plain = openReflector({ initialList: 'auto' });
    await settle();
    expect(plain.client.lists).toHaveLength(1);
    expect(plain.reflector.listingMode).toBe('list');
    plain.controller.abort();
    const able = openReflector({ initialList: 'auto' }, (c) => Object.assign(c, { supportsWatchList: true }));
    await settle();
    expect(able.client.lists).toEqual([]);
    expect(able.client.watch0.request.sendInitialEvents).toBe(true);
    expect(able.reflector.listingMode).toBe('watch-list');
    able.controller.abort();
  });

  it('[k8s_reflector: Streaming initial list] a relist after a 410 streams again; the replace drops what was deleted meanwhile (the store synthesises the deletion)', async () => {
    const { client, reflector, stream, clock } = setup();
    await settle();
    client.watch0.push(line('ADDED', pod('a', '5')), line('ADDED', pod('b', '6')), endBookmark('10'));
    await settle();
    client.watch0.push(errorFrame(status(410, 'Expired', 'too old resource version')));
    await advance(clock, 1_000);
    expect(client.watches).toHaveLength(2);
    expect(client.watch0.request).toMatchObject({ resourceVersion: '', sendInitialEvents: true });
    client.watch0.push(line('ADDED', pod('a', '15')), endBookmark('20'));
    await settle();
    const store = new ObjectStore<Pod, string>({ keyMap: () => 'all' });
    for (const event of stream.events) store.apply(event);
    expect([...store.keys()]).toEqual(['ns/a']);
    expect(reflector.stats).toMatchObject({ watchLists: 2, relists: 1, lists: 0 });
  });
});

describe('Reflector: watch-list fallback to LIST', () => {
  it('[k8s_reflector: Streaming initial list fallback] a watch-list refused with 422 (the WatchList feature off) falls back to a LIST at once and turns watch-list off for this reflector', async () => {
    const { client, reflector, stream, logger, clock } = setup({}, (c) =>
      c.queueList({ items: [pod('a', '3')], resourceVersion: '3' }, { items: [pod('a', '3')], resourceVersion: '8' }),
    );
    await settle();
    client.watch0.fail(
      apiError(
        422,
        status(
          422,
          'Invalid',
          'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
        ),
      ),
    );
    await settle();
    expect(client.lists).toHaveLength(1);
    expect(stream.events.map(summary)).toEqual(['replace ns/a']);
    expect(reflector.watchListOff).toMatch(/refused by the server \(422\)/);
    expect(reflector.listingMode).toBe('list');
    expect(client.watch0.request.sendInitialEvents).toBeUndefined();
    expect(client.watch0.request.resourceVersion).toBe('3');
    expect(logger.entries.some((r) => r.level === 'warn' && /watch-list incomplete: the server refused/.test(r.message))).toBe(
      true,
    );
    // Relists stay on LIST.
    client.watch0.push(errorFrame(status(410, 'Expired')));
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(reflector.stats).toMatchObject({ watchLists: 1, watchListFallbacks: 1, lists: 2, relists: 1 });
    expect(stream.error).toBeUndefined();
  });

  it(`[k8s_reflector: Streaming initial list fallback] a stream that ends before the initial-events-end bookmark falls back to a LIST; after ${WATCH_LIST_GIVE_UP_AFTER} such streams in a row watch-list is given up (kubernetes PR #140902)`, async () => {
    const { client, reflector, stream, clock } = setup({}, (c) => {
      c.defaultList = { items: [pod('a', '3')], resourceVersion: '3' };
    });
    for (let attempt = 1; attempt <= WATCH_LIST_GIVE_UP_AFTER; attempt++) {
      await settle();
      expect(client.watch0.request.sendInitialEvents).toBe(true);
      client.watch0.push(line('ADDED', pod('a', '3'))).end(); // no bookmark
      await settle();
      expect(client.lists).toHaveLength(attempt);
      expect(reflector.watchListOff === undefined).toBe(attempt < WATCH_LIST_GIVE_UP_AFTER);
      // The fallback LIST synced; the plain watch from its cursor is open. A 410 forces the next listing.
      expect(client.watch0.request.sendInitialEvents).toBeUndefined();
      client.watch0.push(errorFrame(status(410, 'Expired')));
      await advance(clock, 8_000);
    }
    await settle();
    expect(reflector.watchListOff).toMatch(/3 incomplete watch-list streams in a row/);
    expect(client.lists).toHaveLength(WATCH_LIST_GIVE_UP_AFTER + 1);
    expect(reflector.stats.watchLists).toBe(WATCH_LIST_GIVE_UP_AFTER);
    expect(stream.events.every((e) => e.type === 'replace')).toBe(true);
  });

  it('[k8s_reflector: Streaming initial list fallback] a 400 that is not about the watch-list parameters (a selector) is not a refusal: one incomplete stream, and the LIST fallback meets it under the LIST rules (a first LIST answered 400 is permanent)', async () => {
    const selector = apiError(400, status(400, 'BadRequest', "unable to parse requirement: found '=', expected: identifier"));
    const { client, reflector, stream } = setup({}, (c) => c.queueList(selector));
    await settle();
    client.watch0.fail(selector);
    await stream.done;
    expect(reflector.watchListOff).toBeUndefined();
    expect(stream.error).toMatchObject({ code: 'RL_REFLECTOR_LIST_REJECTED', permanent: true });
    expect(reflector.stats).toMatchObject({ watchLists: 1, watchListFallbacks: 1, lists: 1 });
  });

  it("[k8s_reflector: Streaming initial list] the default is 'list', even over a client that supports watch-list", async () => {
    const { client, reflector } = openReflector({}, (c) => Object.assign(c, { supportsWatchList: true }));
    await settle();
    expect(reflector.listingMode).toBe('list');
    expect(client.lists).toHaveLength(1);
  });

  it('[k8s_reflector: Streaming initial list fallback] a completed watch-list resets the count of incomplete ones', async () => {
    const { client, reflector, clock } = setup({}, (c) => {
      c.defaultList = { items: [], resourceVersion: '3' };
    });
    for (let round = 0; round < WATCH_LIST_GIVE_UP_AFTER * 2; round++) {
      await settle();
      const watchList = client.watch0;
      if (round % 2 === 0) watchList.end();
      else watchList.push(endBookmark('9'));
      await settle();
      client.watch0.push(errorFrame(status(410, 'Expired')));
      await advance(clock, 8_000);
    }
    expect(reflector.watchListOff).toBeUndefined();
    expect(reflector.listingMode).toBe('watch-list');
  });

  it('[k8s_reflector: LIST timeout] the initial phase of a watch-list is bounded by listTimeoutMs: past it, a counted timeout and a LIST', async () => {
    const { client, reflector, stream, clock } = setup({ listTimeoutMs: 5_000, idleGraceMs: 60_000 }, (c) =>
      c.queueList({ items: [pod('a', '3')], resourceVersion: '3' }),
    );
    await settle();
    client.watch0.push(line('ADDED', pod('a', '3')));
    await advance(clock, 4_999);
    expect(client.lists).toHaveLength(0);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(1);
    expect(stream.events.map(summary)).toEqual(['replace ns/a']);
    expect(reflector.stats).toMatchObject({ listTimeouts: 1, watchListFallbacks: 1 });
    expect(client.watches[0]!.returned).toBe(true);
  });

  it('[k8s_reflector: Streaming initial list fallback] an in-band ERROR frame (410) or a frame over maxFrameBytes before the bookmark falls back to a LIST; nothing gathered is emitted', async () => {
    const { client, stream, clock } = setup({ maxFrameBytes: 2_000 }, (c) => {
      c.defaultList = { items: [pod('z', '3')], resourceVersion: '3' };
    });
    await settle();
    client.watch0.push(line('ADDED', pod('a', '1')), errorFrame(status(410, 'Expired')));
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/z']);
    client.watch0.push(errorFrame(status(410, 'Expired')));
    await advance(clock, 8_000);
    client.watch0.push(line('ADDED', pod('a', '1', { spec: { nodeName: 'x'.repeat(3_000) } })));
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/z', 'replace ns/z']);
    expect(client.lists).toHaveLength(2);
  });

  it('[k8s_reflector: Streaming initial list] aborting during the initial phase ends the stream with nothing emitted and the watch closed', async () => {
    const { client, controller, stream } = setup();
    await settle();
    client.watch0.push(line('ADDED', pod('a', '1')));
    await settle();
    controller.abort();
    await stream.done;
    expect(stream.events).toEqual([]);
    expect(stream.error).toBeUndefined();
    expect(client.watch0.returned).toBe(true);
  });
});

describe('Reflector: paginated LIST', () => {
  it("[k8s_reflector: LIST pagination] a LIST is read in pages of listPageSize following continue tokens, at the first page's resourceVersion, as one replace", async () => {
    const { client, reflector, stream } = openReflector({ initialList: 'list', listPageSize: 2 }, (c) =>
      c.queueList(
        { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
        { items: [pod('c', '3')], resourceVersion: '10' },
      ),
    );
    await settle();
    expect(client.lists.map((r) => [r.limit, r.continue])).toEqual([
      [2, undefined],
      [2, 't1'],
    ]);
    expect(stream.events.map(summary)).toEqual(['replace ns/a,ns/b,ns/c']);
    expect(reflector.resourceVersion).toBe('10');
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 2, listRestarts: 0 });
  });

  it('[k8s_reflector: LIST pagination] a continue token that expired (410) restarts as one unpaged LIST (client-go pager FullListIfExpired); listPageSize 0 sends no limit', async () => {
    const { client, reflector, stream } = openReflector({ initialList: 'list', listPageSize: 2 }, (c) =>
      c.queueList(
        { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
        apiError(410, status(410, 'Expired', 'The provided continue parameter is too old')),
        { items: [pod('a', '1'), pod('c', '12')], resourceVersion: '12' },
      ),
    );
    await settle();
    expect(client.lists.map((r) => [r.limit, r.continue])).toEqual([
      [2, undefined],
      [2, 't1'],
      [undefined, undefined],
    ]);
    expect(stream.events.map(summary)).toEqual(['replace ns/a,ns/c']);
    expect(reflector.resourceVersion).toBe('12');
    expect(reflector.stats).toMatchObject({ lists: 1, listRestarts: 1, listFailures: 0 });
    const unpaged = openReflector({ initialList: 'list', listPageSize: 0 });
    await settle();
    expect(unpaged.client.lists[0]!.limit).toBeUndefined();
  });
});
