import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { deleteEvent, type ReplaceEvent } from '@reconcile-loop/object-store';
import { ManualClock, OptionsError } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { isCursorExpired, isCursorTooLarge } from '../src/classify.js';
import { Reflector, type ListPageResult, type ListRequest, type ReflectorOptions } from '../src/index.js';
import { advance, bookmark, consume, errorFrame, FakeClient, line, openReflector, pod, apiError } from './helpers.js';

const setup = openReflector;

function keys(event: unknown): string[] {
  return [...(event as ReplaceEvent<Pod>).objects.keys()];
}

describe('Reflector: list, watch, events', () => {
  it('[k8s_reflector: Reflector] LISTs, emits a replace keyed by namespace/name, then one upsert or delete per watch frame, all in scope', async () => {
    const { client, reflector, stream, controller } = setup(
      { namespace: 'ns', labelSelector: 'app=engine', fieldSelector: 'status.phase!=Failed' },
      (c) => c.queueList({ items: [pod('a', '5'), pod('b', '6')], resourceVersion: '10' }),
    );
    await settle();
    expect(stream.events).toHaveLength(1);
    expect(stream.events[0]?.type).toBe('replace');
    expect(keys(stream.events[0])).toEqual(['ns/a', 'ns/b']);
    expect(client.lists[0]).toMatchObject({
      namespace: 'ns',
      labelSelector: 'app=engine',
      fieldSelector: 'status.phase!=Failed',
    });
    expect(client.watch0.request).toMatchObject({
      namespace: 'ns',
      labelSelector: 'app=engine',
      fieldSelector: 'status.phase!=Failed',
      resourceVersion: '10',
      allowWatchBookmarks: true,
    });

    client.watch0.push(line('ADDED', pod('c', '11')), line('MODIFIED', pod('a', '12')), line('DELETED', pod('b', '13')));
    await settle();
    expect(stream.events.slice(1).map((e) => (e.type === 'replace' ? e.type : [e.type, e.type !== 'release' && e.key]))).toEqual([
      ['upsert', 'ns/c'],
      ['upsert', 'ns/a'],
      ['delete', 'ns/b'],
    ]);
    expect(stream.events[3]).toEqual(deleteEvent('ns/b'));
    const upsert = stream.events[2];
    expect(upsert?.type === 'upsert' && upsert.object.metadata.resourceVersion).toBe('12');
    expect(reflector.resourceVersion).toBe('13');

    controller.abort();
    await stream.done;
    expect(stream.error).toBeUndefined();
  });

  it('[k8s_reflector: Watch frame shape] a frame may arrive as a JSON line or as a decoded object', async () => {
    const { client, reflector, stream } = setup();
    await settle();
    client.watch0.push(
      line('ADDED', pod('a', '2')),
      { type: 'ADDED', object: pod('b', '3') },
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '4' } } },
    );
    await settle();
    expect(stream.events.slice(1).map((e) => e.type !== 'replace' && e.type !== 'release' && e.key)).toEqual(['ns/a', 'ns/b']);
    expect(reflector.resourceVersion).toBe('4');
  });

  it('[k8s_reflector: cursor bookkeeping] the cursor follows the listing, every applied frame and every bookmark; counters add up', async () => {
    const { client, reflector, clock } = setup({}, (c) => c.queueList({ items: [], resourceVersion: '100' }));
    expect(reflector.resourceVersion).toBeUndefined();
    await settle();
    expect(reflector.resourceVersion).toBe('100');
    client.watch0.push(line('ADDED', pod('a', '101')));
    await settle();
    expect(reflector.resourceVersion).toBe('101');
    client.watch0.push(bookmark('150'));
    await settle();
    expect(reflector.resourceVersion).toBe('150');
    await advance(clock, 2_000);
    client.watch0.end();
    await settle();
    expect(reflector.stats).toEqual({
      lists: 1,
      listPages: 1,
      listRestarts: 0,
      watchLists: 0,
      watchListFallbacks: 0,
      relists: 0,
      healRelists: 0,
      reshardRelists: 0,
      watches: 2,
      bookmarks: 1,
      skippedFrames: 0,
      invalidObjects: 0,
      idleTimeouts: 0,
      listFailures: 0,
      listTimeouts: 0,
      watchFailures: 0,
    });
  });
});

describe('Reflector: reopening and relisting', () => {
  it('[k8s_reflector: ListAndWatch → Run → LIST again] a watch that ends on its timeout reopens from the cursor with no LIST', async () => {
    const { client, clock, reflector } = setup({}, (c) => c.queueList({ items: [], resourceVersion: '7' }));
    await settle();
    client.watch0.push(line('ADDED', pod('a', '8')));
    await settle();
    for (let i = 0; i < 3; i++) {
      await advance(clock, 300_000); // the server closes at timeoutSeconds
      client.watch0.end();
      await settle();
    }
    expect(client.lists).toHaveLength(1);
    expect(client.watches.map((w) => w.request.resourceVersion)).toEqual(['7', '8', '8', '8']);
    expect(reflector.stats.watches).toBe(4);
  });

  it('[k8s_reflector: Bookmarks] a bookmark advances the cursor without an event, and the next watch resumes from it', async () => {
    const { client, clock, stream, reflector } = setup({}, (c) => c.queueList({ items: [], resourceVersion: '7' }));
    await settle();
    client.watch0.push(bookmark('90'));
    await settle();
    expect(reflector.resourceVersion).toBe('90');
    expect(stream.events).toHaveLength(1); // only the replace
    await advance(clock, 60_000);
    client.watch0.end();
    await settle();
    expect(client.watch0.request.resourceVersion).toBe('90');
    expect(client.lists).toHaveLength(1);
  });

  it('[k8s_reflector: ApiException shape] HTTP 410 on WATCH relists (after the backoff) and emits a fresh replace', async () => {
    const { client, clock, stream, reflector } = setup({}, (c) =>
      c.queueList({ items: [pod('a', '1')], resourceVersion: '5' }, { items: [pod('b', '9')], resourceVersion: '9' }),
    );
    await settle();
    client.watch0.fail(apiError(410, { code: 410, reason: 'Expired', message: 'too old resource version: 5 (8)' }));
    await settle();
    expect(client.lists).toHaveLength(1);
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(keys(stream.events.at(-1))).toEqual(['ns/b']);
    expect(client.watch0.request.resourceVersion).toBe('9');
    expect(reflector.stats.relists).toBe(1);
  });

  it('[k8s_reflector: An ERROR frame reaching the consumer] an in-band ERROR frame with code 410 relists too', async () => {
    const { client, clock, reflector } = setup({}, (c) =>
      c.queueList({ items: [], resourceVersion: '5' }, { items: [], resourceVersion: '20' }),
    );
    await settle();
    client.watch0.push(errorFrame({ code: 410, reason: 'Expired', message: 'too old resource version' }));
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(reflector.resourceVersion).toBe('20');
    expect(reflector.stats.relists).toBe(1);
  });

  it('[k8s_reflector: IsTooLargeResourceVersion] 504 relists, by HTTP code, by ERROR-frame code, and by the ResourceVersionTooLarge cause', async () => {
    const { client, clock } = setup();
    await settle();
    client.watch0.fail(apiError(504));
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);

    client.watch0.push(line('ADDED', pod('a', '2'))); // resets the backoff
    client.watch0.push(errorFrame({ code: 504, reason: 'Timeout', message: 'Too large resource version: 9, current: 2' }));
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(3);

    client.watch0.push(line('ADDED', pod('a', '3')));
    // No code at all: only the cause (Go's Causes[].Type, JSON `reason`) says the cursor is from the future.
    client.watch0.push(
      errorFrame({ details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] } }),
    );
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(4);
  });

  it('[k8s_reflector: IsTooLargeResourceVersion] the classifiers read the cause, never a top-level Status.reason', () => {
    expect(isCursorTooLarge({ code: 504 })).toBe(true);
    expect(isCursorTooLarge(undefined, 504)).toBe(true);
    expect(isCursorTooLarge({ details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } })).toBe(true);
    expect(isCursorTooLarge({ code: 500, reason: 'ResourceVersionTooLarge' })).toBe(false);
    expect(isCursorExpired({ code: 410 })).toBe(true);
    expect(isCursorExpired(undefined, 410)).toBe(true);
    expect(isCursorExpired({ code: 500, reason: 'InternalError' })).toBe(false);
  });

  it('[k8s_reflector: isCursorExpired narrowed] a reason Expired/Gone counts only when no other code contradicts it', () => {
    expect(isCursorExpired({ reason: 'Expired' })).toBe(true);
    expect(isCursorExpired({ reason: 'Gone' })).toBe(true);
    expect(isCursorExpired({ code: 410, reason: 'Gone' })).toBe(true);
    expect(isCursorExpired({ code: 500, reason: 'Expired' })).toBe(false);
    expect(isCursorExpired({ reason: 'Expired' }, 500)).toBe(false);
    expect(isCursorExpired({ code: 403, reason: 'Gone' })).toBe(false);
  });

  it('[k8s_reflector: ApiException shape] any other failure retries the WATCH from the cursor, without a LIST', async () => {
    const { client, clock, reflector } = setup({}, (c) => c.queueList({ items: [], resourceVersion: '5' }));
    await settle();
    client.watch0.push(line('ADDED', pod('a', '6')));
    await settle();
    client.watch0.fail(apiError(500, { code: 500, reason: 'InternalError' }));
    await advance(clock, 1_000);
    client.watch0.push(errorFrame({ code: 500, reason: 'InternalError', message: 'etcd hiccup' }));
    await advance(clock, 2_000);
    client.watch0.fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    await advance(clock, 4_000);
    expect(client.lists).toHaveLength(1);
    expect(client.watches.map((w) => w.request.resourceVersion)).toEqual(['5', '6', '6', '6']);
    expect(reflector.stats.watchFailures).toBe(3);
  });

  it('[source_stream_driver: Retry inside vs outside the stream] a failed LIST is retried inside the stream, which stays open', async () => {
    const { client, clock, stream } = setup({}, (c) =>
      c.queueList(new Error('connect ECONNREFUSED'), apiError(503), { items: [pod('a', '3')], resourceVersion: '3' }),
    );
    await settle();
    expect(client.lists).toHaveLength(1);
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    await advance(clock, 2_000);
    expect(client.lists).toHaveLength(3);
    expect(stream.events).toHaveLength(1);
    expect(stream.ended).toBe(false);
  });
});

describe('Reflector: bad frames', () => {
  it('[k8s_reflector: watchHandler per-event metadata failure] an unreadable envelope is logged and skipped, the cursor advances past it, and the watch stays open', async () => {
    const logger = recordingLogger();
    const { client, reflector, stream } = setup({ logger }, (c) => c.queueList({ items: [], resourceVersion: '5' }));
    await settle();
    client.watch0.push(
      '{"type":"ADDED","object":', // not JSON
      JSON.stringify({ object: pod('x', '6') }), // no type
      JSON.stringify({ type: 'RESIZED', object: { metadata: { resourceVersion: '7' } } }), // unknown type, readable cursor
      line('ADDED', pod('a', '8')),
    );
    await settle();
    expect(stream.events.slice(1).map((e) => e.type !== 'replace' && e.type !== 'release' && e.key)).toEqual(['ns/a']);
    expect(reflector.stats.skippedFrames).toBe(3);
    expect(client.watches).toHaveLength(1);
    expect(reflector.resourceVersion).toBe('8');
    expect(logger.entries.filter((r) => r.level === 'warn' && r.message.includes('unreadable envelope'))).toHaveLength(3);

    client.watch0.push(
      JSON.stringify({ type: 'MODIFIED', object: { metadata: { resourceVersion: '9' } }, garbage: true }).replace(
        'MODIFIED',
        'WHATEVER',
      ),
    );
    await settle();
    expect(reflector.resourceVersion).toBe('9'); // advanced past the skipped frame
  });
});

describe('Reflector: memory', () => {
  it('[k8s_reflector: Reflector] the raw LIST response is unreachable once the replace is consumed and the watch runs (a cached pod is held once, by the store)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let rawListing: WeakRef<object> | undefined;
    const { client, stream, controller } = setup({}, (c) => {
      const listing = { items: [pod('a', '1'), pod('b', '1')], resourceVersion: '1' };
      rawListing = new WeakRef(listing);
      c.queueList(listing);
    });
    await settle();
    expect(client.watches).toHaveLength(1); // the stream is in its watch phase
    expect(stream.events).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(rawListing?.deref()).toBeUndefined();
    controller.abort();
    await stream.done;
  });

  it("[k8s_reflector: Reflector] through listPage, every page's raw body bytes and the page read from them are unreachable once the replace is consumed and the watch runs", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const bodies: WeakRef<Uint8Array>[] = [];
    const pages: WeakRef<object>[] = [];
    const reads: string[] = [];
    class BytesClient extends FakeClient {
      async listPage<P>(request: ListRequest, read: (body: Uint8Array) => P | undefined): Promise<ListPageResult<P>> {
        const answer = await this.list(request);
        const body = Buffer.from(
          JSON.stringify({
            metadata: { resourceVersion: answer.resourceVersion, continue: answer.continue },
            items: answer.items,
          }),
        );
        bodies.push(new WeakRef(body));
        const page = read(body);
        reads.push(page === undefined ? 'exact' : 'read');
        if (page === undefined) throw new Error('the byte reader should read this page');
        pages.push(new WeakRef(page as object));
        return { kind: 'read', page };
      }
    }
    const { client, stream, controller } = setup(
      { listPageSize: 1 },
      (c) =>
        c.queueList(
          { items: [pod('a', '1')], resourceVersion: '1', continue: 'k' },
          { items: [pod('b', '1')], resourceVersion: '1' },
        ),
      new BytesClient(),
    );
    await settle();
    expect(reads).toEqual(['read', 'read']);
    expect(client.watches).toHaveLength(1);
    expect(stream.events).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(bodies.map((ref) => ref.deref())).toEqual([undefined, undefined]);
    expect(pages.map((ref) => ref.deref())).toEqual([undefined, undefined]);
    controller.abort();
    await stream.done;
  });
});

describe('Reflector: timing', () => {
  it('[k8s_reflector: BackoffManager around reconnects] every WATCH sends timeoutSeconds (with jitter) and asks for bookmarks', async () => {
    const randoms = [0, 0.5, 0.999];
    const { client, clock } = setup({ random: () => randoms.shift() ?? 0 });
    await settle();
    for (let i = 0; i < 2; i++) {
      await advance(clock, 300_000);
      client.watch0.end();
      await settle();
    }
    expect(client.watches.map((w) => [w.request.timeoutSeconds, w.request.allowWatchBookmarks])).toEqual([
      [300, true],
      [450, true],
      [599, true],
    ]);
  });

  it('[k8s_reflector: BackoffManager around reconnects] a sub-second watchTimeoutSeconds still sends timeoutSeconds >= 1 (0 would mean "no timeout" to the apiserver)', async () => {
    const { client } = setup({ watchTimeoutSeconds: 0.5, random: () => 0 });
    await settle();
    expect(client.watches[0]?.request.timeoutSeconds).toBe(1);
  });

  it('[k8s_reflector: BackoffUntil] deviation: the retry delay doubles per consecutive failure up to the cap, and resets after a watch that delivered a frame', async () => {
    const { client, clock, reflector } = setup({ retry: { initialMs: 1_000, maxMs: 4_000 } });
    await settle();
    const watchesAfter = async (ms: number): Promise<number> => {
      await advance(clock, ms);
      return client.watches.length;
    };
    expect(reflector.nextRetryDelayMs).toBe(1_000);
    client.watch0.fail(apiError(500));
    await settle();
    expect(await watchesAfter(999)).toBe(1);
    expect(await watchesAfter(1)).toBe(2);
    client.watch0.fail(apiError(500));
    await settle();
    expect(await watchesAfter(1_999)).toBe(2);
    expect(await watchesAfter(1)).toBe(3);
    client.watch0.fail(apiError(500));
    await settle();
    expect(await watchesAfter(4_000)).toBe(4);
    client.watch0.fail(apiError(500));
    await settle();
    expect(reflector.nextRetryDelayMs).toBe(4_000); // capped
    expect(await watchesAfter(4_000)).toBe(5);

    client.watch0.push(bookmark('2'));
    client.watch0.fail(apiError(500));
    await settle();
    expect(await watchesAfter(1_000)).toBe(6); // reset by the delivered frame
  });

  it('[k8s_reflector: BackoffUntil] deviation: neither a successful LIST nor an ERROR frame resets the backoff, so LIST-then-410 loops slow down', async () => {
    const { client, clock, reflector } = setup();
    await settle();
    for (const expected of [1_000, 2_000, 4_000, 8_000]) {
      expect(reflector.nextRetryDelayMs).toBe(expected);
      if (expected === 2_000 || expected === 8_000) client.watch0.push(errorFrame({ code: 410, reason: 'Expired' }));
      else client.watch0.fail(apiError(410));
      await advance(clock, expected - 1);
      const before = client.lists.length;
      await advance(clock, 1);
      expect(client.lists).toHaveLength(before + 1);
    }
    expect(client.lists).toHaveLength(5);
    expect(reflector.nextRetryDelayMs).toBe(8_000); // capped
  });

  it('[k8s_reflector: deviation, very short watch] a watch that closes within a second without a frame backs off instead of spinning', async () => {
    const { client, clock, reflector } = setup();
    await settle();
    client.watch0.end();
    await settle();
    expect(client.watches).toHaveLength(1);
    await advance(clock, 1_000);
    expect(client.watches).toHaveLength(2);
    expect(reflector.stats.watchFailures).toBe(1);
  });

  it('[k8s_reflector: deviation, idle timeout] a watch silent for longer than its timeout plus the grace is torn down and reopened from the cursor', async () => {
    const { client, clock, reflector } = setup({ watchTimeoutSeconds: 60, idleGraceMs: 5_000 }, (c) => {
      c.queueList({ items: [], resourceVersion: '5' });
      c.honorSignal = false; // a dead TCP connection: nothing ever arrives, not even an error
    });
    await settle();
    await advance(clock, 30_000);
    client.watch0.push(line('ADDED', pod('a', '6'))); // activity pushes the deadline out
    await settle();
    await advance(clock, 64_999);
    expect(client.watches).toHaveLength(1);
    const dead = client.watch0;
    await advance(clock, 1);
    expect(dead.request.signal.aborted).toBe(true);
    expect(dead.returned).toBe(true);
    expect(reflector.stats.idleTimeouts).toBe(1);
    await advance(clock, 1_000); // backoff (reset by the delivered frame)
    expect(client.watches).toHaveLength(2);
    expect(client.watch0.request.resourceVersion).toBe('6');
    expect(client.lists).toHaveLength(1);
  });
});

describe('Reflector: idle deadline', () => {
  it('[k8s_reflector: deviation, idle timeout] a frame really pushes the deadline out: at the first deadline the timer re-arms instead of tearing the watch down', async () => {
    const { client, clock, reflector } = setup({ watchTimeoutSeconds: 60, idleGraceMs: 5_000 }, (c) => {
      c.queueList({ items: [], resourceVersion: '5' });
      c.honorSignal = false;
    });
    await settle();
    const watch = client.watch0;
    await advance(clock, 30_000);
    watch.push(line('ADDED', pod('a', '6')));
    await settle(); // the frame's reaction runs at t=30 000, well before the first deadline (65 000)
    await advance(clock, 34_999);
    expect(watch.request.signal.aborted).toBe(false);
    await advance(clock, 1); // t=65 000: the first deadline; 35 s of silence only
    expect(watch.request.signal.aborted).toBe(false);
    expect(reflector.stats.idleTimeouts).toBe(0);
    await advance(clock, 29_999); // t=94 999
    expect(watch.request.signal.aborted).toBe(false);
    await advance(clock, 1); // t=95 000: 65 s after the frame
    expect(watch.request.signal.aborted).toBe(true);
    expect(reflector.stats.idleTimeouts).toBe(1);
  });
});

describe('Reflector: stopping', () => {
  it('[k8s_reflector: deviation, prompt stop] aborting while the LIST is still connecting ends the stream at once, even if the client ignores its signal', async () => {
    const { client, controller, stream, clock } = setup({}, (c) => c.queueList('hang'));
    await settle();
    expect(client.lists).toHaveLength(1);
    controller.abort();
    await settle();
    expect(stream.ended).toBe(true);
    expect(stream.error).toBeUndefined();
    expect(stream.events).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });

  it('[k8s_reflector: deviation, prompt stop] aborting during a watch (client deaf to signals) or during a backoff ends the stream and leaves no timer', async () => {
    const watching = setup({}, (c) => (c.honorSignal = false));
    await settle();
    watching.controller.abort();
    await settle();
    expect(watching.stream.ended).toBe(true);
    expect(watching.client.watch0.request.signal.aborted).toBe(true);
    expect(watching.clock.pending).toBe(0);

    const backingOff = setup({}, (c) => c.queueList(new Error('down')));
    await settle();
    expect(backingOff.clock.pending).toBe(1);
    backingOff.controller.abort();
    await settle();
    expect(backingOff.stream.ended).toBe(true);
    expect(backingOff.clock.pending).toBe(0);
  });

  it('[k8s_reflector: deviation, prompt stop] a consumer that stops iterating tears the watch down', async () => {
    const clock = new ManualClock();
    const client = new FakeClient();
    const reflector = new Reflector<Pod>({ client, schema: podSchema, clock });
    const iterator = reflector.open(new AbortController().signal)[Symbol.asyncIterator]();
    await iterator.next(); // the replace
    const pending = iterator.next();
    await settle();
    client.watch0.push(line('ADDED', pod('a', '2')));
    await pending;
    await iterator.return?.();
    expect(client.watch0.returned).toBe(true);
    expect(client.watch0.request.signal.aborted).toBe(true);
    expect(clock.pending).toBe(0);
  });
});

describe('Reflector: options', () => {
  it('[k8s_reflector: deviation, options] bad options are a typed error', () => {
    const client = new FakeClient();
    expect(() => new Reflector<Pod>({ client, schema: podSchema, retry: { initialMs: -1, maxMs: 1 } })).toThrow(OptionsError);
    expect(() => new Reflector<Pod>({ client, schema: podSchema, retry: { initialMs: 10, maxMs: 5 } })).toThrow(OptionsError);
    expect(() => new Reflector<Pod>({ client, schema: podSchema, watchTimeoutSeconds: 0 })).toThrow(/watchTimeoutSeconds/);
    expect(() => new Reflector<Pod>({ client: {} as FakeClient, schema: podSchema })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
  });

  it('[k8s_reflector: deviation, options] memoryBudgetBytes, moved to the loop where the store it bounds is, is a typed error naming where it went', () => {
    const client = new FakeClient();
    const moved = { client, schema: podSchema, memoryBudgetBytes: 1_000_000 } as unknown as ConstructorParameters<
      typeof Reflector<Pod>
    >[0];
    expect(() => new Reflector<Pod>(moved)).toThrow(OptionsError);
    expect(() => new Reflector<Pod>(moved)).toThrow(/memoryBudgetBytes is a loop option now/);
  });
});
