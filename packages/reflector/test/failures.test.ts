/**
 * Fail loudly, never stall: permanent vs transient failures, deadlines, cursor rejection, heal
 * relists, frame caps, Retry-After, the backoff across reopens, and health(). Fakes and a fake clock.
 */
import { podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { WatchFrameTooLargeError } from '@reconcile-loop/kube-client';
import { isPermanentSourceError, type ReplaceEvent } from '@reconcile-loop/object-store';
import { Backoff, ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { isCursorRejected } from '../src/classify.js';
import { KubeClientConfigError, ListTimeoutError, Reflector, type ReflectorOptions } from '../src/index.js';
import { advance, bookmark, consume, errorFrame, FakeClient, line, openReflector, pod, apiError } from './helpers.js';

const setup = openReflector;

const status = (code: number, reason: string, message = `${reason} says no`) => ({ code, reason, message });
const request = { verb: 'list' as const, path: '/api/v1/namespaces/ns/pods?labelSelector=app%3D%3D%3D' };

function replaceKeys(event: unknown): string[] {
  return [...(event as ReplaceEvent<Pod>).objects.keys()].sort();
}

describe('Reflector: permanent vs transient failures', () => {
  for (const code of [400, 422]) {
    it(`[k8s_reflector: Permanent vs transient failures] a first LIST answered ${code} ends the stream with a permanent ListRejectedError carrying the Status and the request`, async () => {
      const cause = apiError(
        code,
        status(code, code === 400 ? 'BadRequest' : 'Invalid', 'unable to parse requirement'),
        undefined,
        request,
      );
      const { client, stream, reflector, clock, logger } = setup({}, (c) => c.queueList(cause));
      await stream.done;
      expect(isPermanentSourceError(stream.error)).toBe(true);
      expect(stream.error).toMatchObject({
        code: 'RL_REFLECTOR_LIST_REJECTED',
        permanent: true,
        statusCode: code,
        status: { code, message: 'unable to parse requirement' },
        cause,
      });
      expect((stream.error as Error).message).toContain(request.path);
      expect(client.lists).toHaveLength(1); // no retry
      expect(clock.pending).toBe(0);
      expect(reflector.health()).toMatchObject({
        listed: false,
        streaming: false,
        lastError: stream.error,
        consecutiveFailures: 1,
      });
      expect(logger.entries.filter((e) => e.level === 'error' && e.message.includes('permanent'))).toHaveLength(1);
    });
  }

  it('[k8s_reflector: Permanent vs transient failures] a client that cannot build a request (KubeClientConfigError) ends the stream, from LIST or WATCH', async () => {
    const broken = new KubeClientConfigError('the KubeConfig has no current cluster');
    const listing = setup({}, (c) => c.queueList(broken));
    await listing.stream.done;
    expect(listing.stream.error).toBe(broken);
    expect(isPermanentSourceError(listing.stream.error)).toBe(true);

    const watching = setup();
    await settle();
    watching.client.watch0.fail(broken);
    await watching.stream.done;
    expect(watching.stream.error).toBe(broken);
    expect(watching.reflector.health().streaming).toBe(false);
  });

  for (const code of [401, 403, 404]) {
    it(`[k8s_reflector: Permanent vs transient failures] a LIST answered ${code} is retried with backoff, logged at error once (not per retry), visible in health, and heals`, async () => {
      const failure = apiError(
        code,
        status(code, code === 404 ? 'NotFound' : code === 403 ? 'Forbidden' : 'Unauthorized'),
        undefined,
        request,
      );
      const { client, clock, stream, reflector, logger } = setup({}, (c) =>
        c.queueList(failure, failure, failure, { items: [pod('a', '3')], resourceVersion: '3' }),
      );
      await settle();
      expect(reflector.health()).toMatchObject({ listed: false, lastError: failure, consecutiveFailures: 1 });
      await advance(clock, 1_000);
      await advance(clock, 2_000);
      expect(client.lists).toHaveLength(3);
      expect(reflector.health()).toMatchObject({ lastError: failure, consecutiveFailures: 3 });
      expect(stream.events).toHaveLength(0);
      const loud = logger.entries.filter((e) => e.level === 'error' || e.level === 'warn');
      expect(loud).toHaveLength(1);
      expect(loud[0]).toMatchObject({
        level: 'error',
        fields: {
          code,
          reason: failure.status?.reason,
          request: `LIST ${request.path}`,
          consecutiveFailures: 1,
          retryDelayMs: 1_000,
        },
      });
      expect(logger.entries.filter((e) => e.level === 'debug' && e.message.startsWith('LIST failed'))).toHaveLength(2);

      await advance(clock, 4_000);
      expect(replaceKeys(stream.events[0])).toEqual(['ns/a']);
      expect(reflector.health()).toMatchObject({ listed: true, lastError: undefined, consecutiveFailures: 0 });
      expect(logger.entries.some((e) => e.level === 'info' && e.message.startsWith('recovered'))).toBe(true);
      expect(stream.ended).toBe(false);
    });
  }

  it('[k8s_reflector: Permanent vs transient failures] after a first listing, a relist answered 400 or 422 is retried, not permanent', async () => {
    const { client, clock, stream, reflector } = setup({}, (c) =>
      c.queueList(
        { items: [], resourceVersion: '5' },
        apiError(400, status(400, 'BadRequest')),
        apiError(422, status(422, 'Invalid')),
        { items: [pod('b', '9')], resourceVersion: '9' },
      ),
    );
    await settle();
    client.watch0.fail(apiError(410, status(410, 'Expired')));
    await advance(clock, 1_000); // relist → 400
    await advance(clock, 2_000); // → 422
    expect(reflector.health().consecutiveFailures).toBe(3); // the 410, the 400, the 422
    await advance(clock, 4_000);
    expect(client.lists).toHaveLength(4);
    expect(replaceKeys(stream.events.at(-1))).toEqual(['ns/b']);
    expect(stream.ended).toBe(false);
  });

  it('[k8s_reflector: Permanent vs transient failures] a failure that changes is logged again; recovery is logged once', async () => {
    const { clock, logger } = setup({}, (c) =>
      c.queueList(
        apiError(403, status(403, 'Forbidden')),
        apiError(403, status(403, 'Forbidden')),
        apiError(500, status(500, 'InternalError')),
      ),
    );
    await settle();
    await advance(clock, 1_000);
    await advance(clock, 2_000);
    await advance(clock, 4_000);
    const loud = logger.entries.filter((e) => e.level !== 'debug');
    expect(loud.map((e) => [e.level, e.fields['code']])).toEqual([
      ['error', 403],
      ['warn', 500],
      ['info', undefined], // recovered
    ]);
  });
});

describe('Reflector: deadlines', () => {
  it('[k8s_reflector: LIST timeout] a hung first LIST fails after listTimeoutMs (a counted failure with ListTimeoutError), backs off and is retried', async () => {
    const { client, clock, stream, reflector } = setup({ listTimeoutMs: 10_000 }, (c) =>
      c.queueList('hang', { items: [pod('a', '2')], resourceVersion: '2' }),
    );
    await advance(clock, 9_999);
    expect(client.lists).toHaveLength(1);
    expect(client.lists[0]?.signal.aborted).toBe(false);
    await advance(clock, 1);
    expect(client.lists[0]?.signal.aborted).toBe(true); // the hung request is abandoned, not leaked
    expect(reflector.health().lastError).toBeInstanceOf(ListTimeoutError);
    expect(reflector.stats).toMatchObject({ listFailures: 1, listTimeouts: 1 });
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(replaceKeys(stream.events[0])).toEqual(['ns/a']);
  });

  it('[k8s_reflector: LIST timeout] a relist that hangs is bounded too: the store is not frozen behind it', async () => {
    const { client, clock, stream, reflector } = setup({ listTimeoutMs: 10_000 }, (c) =>
      c.queueList({ items: [pod('a', '1')], resourceVersion: '1' }, 'hang', { items: [pod('b', '7')], resourceVersion: '7' }),
    );
    await settle();
    client.watch0.fail(apiError(410, status(410, 'Expired')));
    await advance(clock, 1_000); // relist starts, hangs
    expect(client.lists).toHaveLength(2);
    expect(reflector.health().listed).toBe(false); // a relist is pending: readiness can see it
    await advance(clock, 10_000);
    expect(reflector.stats.listTimeouts).toBe(1);
    await advance(clock, 2_000);
    expect(client.lists).toHaveLength(3);
    expect(replaceKeys(stream.events.at(-1))).toEqual(['ns/b']);
    expect(reflector.health().listed).toBe(true);
  });

  it('[k8s_reflector: Rejected cursor] a WATCH answered 400 drops the cursor and relists; so does an in-band ERROR 422', async () => {
    const { client, clock, reflector, logger } = setup({}, (c) =>
      c.queueList(
        { items: [], resourceVersion: '5' },
        { items: [], resourceVersion: '20' },
        { items: [], resourceVersion: '30' },
      ),
    );
    await settle();
    client.watch0.push(bookmark('abc')); // a broken bookmark becomes the cursor
    await settle();
    expect(reflector.resourceVersion).toBe('abc');
    await advance(clock, 300_000);
    client.watch0.end(); // reopen from "abc"
    await settle();
    expect(client.watch0.request.resourceVersion).toBe('abc');
    client.watch0.fail(apiError(400, status(400, 'BadRequest', 'invalid resource version: "abc"')));
    await settle();
    expect(reflector.resourceVersion).toBeUndefined();
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(client.watch0.request.resourceVersion).toBe('20');
    expect(logger.entries.some((e) => e.message.includes('cursor rejected; dropping it and relisting'))).toBe(true);

    client.watch0.push(errorFrame({ code: 422, reason: 'Invalid', message: 'resourceVersion: Invalid value' }));
    await advance(clock, 2_000);
    expect(client.lists).toHaveLength(3);
    expect(reflector.resourceVersion).toBe('30');
    expect(reflector.stats.relists).toBe(2);
  });

  it('[k8s_reflector: Rejected cursor] kube-apiserver\'s answer to an unparseable cursor (HTTP 500 "resourceVersion: Invalid value") relists too; a plain 500 does not', async () => {
    const { client, clock, reflector } = setup({}, (c) =>
      c.queueList({ items: [], resourceVersion: '5' }, { items: [], resourceVersion: '20' }),
    );
    await settle();
    client.watch0.fail(
      apiError(500, {
        code: 500,
        message: 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
      }),
    );
    await settle();
    expect(reflector.resourceVersion).toBeUndefined();
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(isCursorRejected({ code: 500, message: 'resourceVersion: Invalid value: "x"' })).toBe(true);
    expect(
      isCursorRejected({ code: 500, details: { causes: [{ field: 'resourceVersion', reason: 'FieldValueInvalid' }] } }),
    ).toBe(true);
    expect(isCursorRejected({ code: 500, reason: 'InternalError', message: 'etcd hiccup' })).toBe(false);
    expect(isCursorRejected(undefined, 400)).toBe(true);
    expect(isCursorRejected({ code: 422 })).toBe(true);
  });

  it('[k8s_reflector: Heal relist after a skipped frame] a skipped frame schedules a relist after the heal backoff; more skips meanwhile do not reschedule; the next heal waits twice as long', async () => {
    const { client, clock, stream, reflector } = setup({}, (c) =>
      c.queueList(
        { items: [pod('a', '1')], resourceVersion: '1' },
        { items: [pod('a', '4')], resourceVersion: '4' },
        { items: [pod('a', '9')], resourceVersion: '9' },
      ),
    );
    await settle();
    client.watch0.push(JSON.stringify({ type: 'Modified', object: pod('a', '2') })); // readable cursor, unreadable type
    await advance(clock, 500);
    expect(reflector.resourceVersion).toBe('2'); // skip-and-advance kept
    client.watch0.push('{"type":"MODIFIED",'); // another one: same heal
    await advance(clock, 499);
    expect(client.lists).toHaveLength(1);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(2); // healed 1 s after the first skip, no backoff wait on top
    expect(replaceKeys(stream.events.at(-1))).toEqual(['ns/a']);
    expect(reflector.stats).toMatchObject({ skippedFrames: 2, healRelists: 1, relists: 1 });
    expect(reflector.health().lastError).toBeUndefined(); // a heal is not a failure

    client.watch0.push(JSON.stringify({ object: pod('a', '5') }));
    await advance(clock, 1_999);
    expect(client.lists).toHaveLength(2);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(3);
    expect(reflector.stats.healRelists).toBe(2);
  });

  it('[k8s_reflector: Heal relist after a skipped frame] a heal still due when the watch ends is kept by the next watch', async () => {
    const { client, clock } = setup({}, (c) =>
      c.queueList({ items: [], resourceVersion: '1' }, { items: [], resourceVersion: '3' }),
    );
    await settle();
    await advance(clock, 5_000);
    client.watch0.push('not json');
    client.watch0.fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    await settle();
    expect(client.watches).toHaveLength(1);
    await advance(clock, 1_000); // the retry backoff and the heal deadline coincide
    expect(client.watches).toHaveLength(2);
    await advance(clock, 0); // the new watch finds the heal due at once
    expect(client.lists).toHaveLength(2);
    expect(client.watches[1]?.request.signal.aborted).toBe(true);
  });

  it('[k8s_reflector: Frame size cap] a frame over maxFrameBytes tears the watch down and relists; so does the client reporting one', async () => {
    const { client, clock, reflector, stream } = setup({ maxFrameBytes: 1_000 }, (c) =>
      c.queueList(
        { items: [], resourceVersion: '1' },
        { items: [pod('a', '6')], resourceVersion: '6' },
        { items: [], resourceVersion: '8' },
      ),
    );
    await settle();
    const first = client.watch0;
    first.push(
      line(
        'ADDED',
        pod('big', '2', {
          metadata: { name: 'big', namespace: 'ns', resourceVersion: '2', annotations: { x: 'y'.repeat(1_000) } },
        }),
      ),
    );
    await settle();
    expect(first.returned).toBe(true);
    expect(reflector.health().lastError).toBeInstanceOf(WatchFrameTooLargeError);
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
    expect(replaceKeys(stream.events.at(-1))).toEqual(['ns/a']);

    client.watch0.fail(new WatchFrameTooLargeError(1_000));
    await advance(clock, 2_000);
    expect(client.lists).toHaveLength(3);
    expect(reflector.stats.watchFailures).toBe(2);

    // The cap counts bytes of the UTF-8 line: 450 'é' fit in 1 000 characters but not in 1 000 bytes.
    const wide = line(
      'ADDED',
      pod('wide', '9', {
        metadata: { name: 'wide', namespace: 'ns', resourceVersion: '9', annotations: { x: 'é'.repeat(450) } },
      }),
    );
    expect(wide.length).toBeLessThan(1_000);
    expect(Buffer.byteLength(wide)).toBeGreaterThan(1_000);
    client.watch0.push(wide);
    await advance(clock, 4_000);
    expect(client.lists).toHaveLength(4);
    expect(reflector.stats.watchFailures).toBe(3);

    // The same error from a hand-written client relists too.
    client.watch0.fail(new WatchFrameTooLargeError(1_000));
    await settle();
    expect(reflector.health().lastError).toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE' });
    await advance(clock, 8_000);
    expect(client.lists).toHaveLength(5);
    expect(reflector.stats.watchFailures).toBe(4);
  });

  it('[k8s_reflector: Retry-After honoured] a 429 with Retry-After waits that long instead of the backoff, bounded by retry.maxMs; an ERROR frame carrying one too', async () => {
    const { client, clock } = setup({}, (c) =>
      c.queueList(
        apiError(429, status(429, 'TooManyRequests'), undefined, { retryAfterSeconds: 5 }),
        apiError(429, { ...status(429, 'TooManyRequests'), details: { causes: [], retryAfterSeconds: 100 } }),
      ),
    );
    await advance(clock, 4_999);
    expect(client.lists).toHaveLength(1);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(2);
    await advance(clock, 7_999); // 100 s asked, capped at 8 s
    expect(client.lists).toHaveLength(2);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(3);

    await settle();
    client.watch0.push(errorFrame({ code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 3 } }));
    await advance(clock, 2_999);
    expect(client.watches).toHaveLength(1);
    await advance(clock, 1);
    expect(client.watches).toHaveLength(2);
  });
});

describe('Reflector: backoff across streams', () => {
  it('[k8s_reflector: BackoffUntil] the delay climbs to the cap and stays there; a zero base never overflows to NaN; Retry-After is bounded both ways', () => {
    // The reflector's backoff is primitives' Backoff under its `retry` policy.
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 8_000 });
    expect([1, 2, 3, 4, 5].map(() => backoff.next())).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(backoff.next(0)).toBe(1_000); // Retry-After: 0 is not a hot loop
    expect(backoff.next(60_000)).toBe(8_000);
    backoff.reset();
    expect(backoff.nextMs).toBe(1_000);
    const zero = new Backoff({ initialMs: 0, maxMs: 8_000 });
    for (let i = 0; i < 5_000; i++) zero.next();
    expect(zero.nextMs).toBe(0);
  });

  it('[k8s_reflector: Backoff survives a reopen] a reopened stream continues the backoff of the failed one; only a listing plus a healthy watch resets it', async () => {
    const clock = new ManualClock();
    const client = new FakeClient();
    const reflector = new Reflector<Pod>({
      client,
      schema: podSchema,
      clock,
      random: () => 0,
      retry: { initialMs: 1_000, maxMs: 30_000 },
    });
    const failing = apiError(500, status(500, 'InternalError'));
    client.queueList(failing, failing, failing);
    let controller = new AbortController();
    let stream = consume(reflector.open(controller.signal));
    await advance(clock, 1_000);
    await advance(clock, 2_000);
    expect(client.lists).toHaveLength(3);
    controller.abort();
    await stream.done;

    client.queueList(failing);
    controller = new AbortController();
    stream = consume(reflector.open(controller.signal));
    await settle();
    expect(client.lists).toHaveLength(4);
    expect(reflector.nextRetryDelayMs).toBe(16_000); // 1, 2, 4, then 8 for this failure: not back to 1 s
    await advance(clock, 7_999);
    expect(client.lists).toHaveLength(4);
    await advance(clock, 1);
    expect(client.lists).toHaveLength(5); // listed fine
    expect(reflector.nextRetryDelayMs).toBe(16_000); // a listing alone does not reset it
    client.watch0.push(line('ADDED', pod('a', '2')));
    await settle();
    expect(reflector.nextRetryDelayMs).toBe(1_000); // a listing plus a frame on the watch does
    controller.abort();
    await stream.done;
  });
});

describe('Reflector: poison objects', () => {
  const poisoned = (name: string, rv: string) => pod(name, rv, { status: { phase: 7 } });

  it('[k8s_reflector: Poison objects quarantined] a LIST item failing the schema is held out of the replace, logged at error with key, resourceVersion and issues, counted, and listed in health', async () => {
    const { stream, reflector, logger, clock } = setup({}, (c) =>
      c.queueList({ items: [pod('a', '1'), poisoned('bad', '2'), { metadata: { resourceVersion: '3' } }], resourceVersion: '3' }),
    );
    await advance(clock, 0);
    expect(stream.error).toBeUndefined();
    expect(replaceKeys(stream.events[0])).toEqual(['ns/a']);
    expect(reflector.stats.invalidObjects).toBe(2);
    expect(reflector.health().quarantined).toEqual([
      { key: 'ns/bad', resourceVersion: '2', issues: [expect.stringMatching(/^status\.phase: /)], since: 0 },
    ]);
    const logged = logger.entries.find((e) => e.level === 'error' && e.message.includes('quarantined'));
    expect(logged?.fields).toMatchObject({
      key: 'ns/bad',
      resourceVersion: '2',
      issues: [expect.stringMatching(/^status\.phase/)],
    });
    expect(logger.entries.some((e) => e.level === 'error' && e.message.includes('without a readable name'))).toBe(true);
  });

  it('[k8s_reflector: Poison objects quarantined] a frame object failing the schema emits nothing (the store keeps its last good version), the stream goes on, a valid MODIFIED lifts it, a DELETED releases it; no relist', async () => {
    const { client, clock, stream, reflector, logger } = setup({}, (c) =>
      c.queueList({ items: [pod('a', '1'), pod('b', '1')], resourceVersion: '1' }),
    );
    await settle();
    clock.advance(100);
    client.watch0.push(
      line('MODIFIED', poisoned('a', '2')),
      line('MODIFIED', poisoned('a', '3')),
      line('MODIFIED', pod('b', '4')),
    );
    await settle();
    const seen = () =>
      stream.events.slice(1).map((e) => (e.type === 'replace' ? 'replace' : `${e.type} ${e.type !== 'release' && e.key}`));
    expect(seen()).toEqual(['upsert ns/b']); // no delete: ns/a exists, only its new version is unusable
    expect(reflector.resourceVersion).toBe('4');
    expect(reflector.health().quarantined).toEqual([expect.objectContaining({ key: 'ns/a', resourceVersion: '3', since: 100 })]);
    expect(logger.entries.filter((e) => e.level === 'error' && e.message.includes('quarantined'))).toHaveLength(2);

    client.watch0.push(line('MODIFIED', pod('a', '5')));
    await settle();
    expect(seen().at(-1)).toBe('upsert ns/a');
    expect(reflector.health().quarantined).toEqual([]);
    expect(logger.entries.some((e) => e.message.startsWith('quarantine lifted'))).toBe(true);

    client.watch0.push(line('ADDED', poisoned('c', '6')), line('DELETED', poisoned('c', '7')));
    await settle();
    expect(seen().slice(-2)).toEqual(['upsert ns/a', 'delete ns/c']); // the ADDED poison emits nothing; the DELETED is a delete
    expect(reflector.health().quarantined).toEqual([]);
    expect(client.lists).toHaveLength(1);
    expect(client.watches).toHaveLength(1);
    expect(reflector.stats).toMatchObject({ invalidObjects: 4, relists: 0, skippedFrames: 0 });
    expect(stream.ended).toBe(false);
  });

  it('[k8s_reflector: Poison objects quarantined] a relist rebuilds the quarantine from the listing; its replace keeps the quarantined keys (their last good versions stay)', async () => {
    const { client, clock, reflector, stream } = setup({}, (c) =>
      c.queueList(
        { items: [poisoned('a', '1'), pod('b', '1')], resourceVersion: '1' },
        { items: [pod('a', '8'), poisoned('b', '9')], resourceVersion: '9' },
      ),
    );
    await settle();
    expect(reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/a']);
    client.watch0.fail(apiError(410, status(410, 'Expired')));
    await advance(clock, 1_000);
    expect(reflector.health().quarantined.map((q) => [q.key, q.resourceVersion])).toEqual([['ns/b', '9']]);
    const replaces = stream.events.filter((e) => e.type === 'replace');
    expect(replaces.map((e) => [[...e.objects.keys()], [...(e.keep ?? [])]])).toEqual([
      [['ns/b'], ['ns/a']],
      [['ns/a'], ['ns/b']],
    ]);
  });

  it('[k8s_reflector: Poison objects quarantined] a frame object without a readable name is skipped like an unreadable frame, and healed by a relist', async () => {
    const { client, clock, reflector } = setup();
    await settle();
    client.watch0.push(line('ADDED', { metadata: { namespace: 'ns', resourceVersion: '2' } }));
    await settle();
    expect(reflector.resourceVersion).toBe('2');
    expect(reflector.stats.invalidObjects).toBe(1);
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
  });
});

describe('Reflector: health', () => {
  it('[k8s_reflector: health()] reports listed, streaming, lastListAt and lastEventAt in the fake clock, and no error when all is well', async () => {
    const clock = new ManualClock();
    clock.advance(1_000);
    const client = new FakeClient();
    client.queueList({ items: [pod('a', '1')], resourceVersion: '1' });
    const reflector = new Reflector<Pod>({ client, schema: podSchema, clock, random: () => 0 });
    expect(reflector.health()).toEqual({
      listed: false,
      streaming: false,
      lastListAt: undefined,
      lastEventAt: undefined,
      lastError: undefined,
      consecutiveFailures: 0,
      quarantined: [],
    });
    const controller = new AbortController();
    const stream = consume(reflector.open(controller.signal));
    await settle();
    expect(reflector.health()).toEqual({
      listed: true,
      streaming: true,
      lastListAt: 1_000,
      lastEventAt: 1_000,
      lastError: undefined,
      consecutiveFailures: 0,
      quarantined: [],
    });
    clock.advance(2_500);
    client.watch0.push(bookmark('5'));
    await settle();
    expect(reflector.health()).toMatchObject({ lastListAt: 1_000, lastEventAt: 3_500 });
    controller.abort();
    await stream.done;
    expect(reflector.health()).toMatchObject({ listed: false, streaming: false });
  });
});
