import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { decodeJsonBody, KubeClient, readListBody, type KubeClientOptions } from './all.js';
import { deferred, FakeTransport, statusBody } from './fake-transport.js';

const pod = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'd', uid: `u-${name}`, resourceVersion: '5' },
  ...extra,
});

function setup(options: Partial<KubeClientOptions> = {}) {
  const fake = new FakeTransport();
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: fake.transport, clock, ...options });
  return { fake, clock, client, pods: client.resource(podResource, podSchema).inNamespace('d') };
}

/** What a promise settles with, rejection included. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('[kube_client: LIST pages as bytes]', () => {
  it('listBytes sends the request list sends and resolves the body bytes whole (chunks joined); readList of them equals list', async () => {
    const { fake, pods } = setup();
    const text = JSON.stringify({
      kind: 'PodList',
      metadata: { resourceVersion: '9', continue: 'tok', remainingItemCount: 3 },
      items: [pod('a'), pod('b')],
    });
    const cut = Buffer.from(text);
    const answer = { chunks: [cut.subarray(0, 17), cut.subarray(17, 40), cut.subarray(40).toString('utf8')] };
    fake.next(answer, answer);
    const options = {
      labelSelector: 'app=x',
      fieldSelector: 'status.phase!=Failed',
      limit: 2,
      continue: 'c1',
      resourceVersion: '0',
      resourceVersionMatch: 'NotOlderThan' as const,
    };
    const bytes = await pods.listBytes(options);
    const listed = await pods.list(options);
    expect(fake.requests.map((r) => [r.method, r.path, r.query.toString()])).toEqual([
      ['GET', '/api/v1/namespaces/d/pods', fake.requests[1]!.query.toString()],
      [
        'GET',
        '/api/v1/namespaces/d/pods',
        'labelSelector=app%3Dx&fieldSelector=status.phase%21%3DFailed&limit=2&continue=c1&resourceVersion=0&resourceVersionMatch=NotOlderThan',
      ],
    ]);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(bytes).toString('utf8')).toBe(text);
    expect(pods.readList(bytes)).toEqual(listed);
    expect(listed).toMatchObject({ resourceVersion: '9', continue: 'tok', remainingItemCount: 3 });
    expect(listed.items.map((p) => p.metadata.name)).toEqual(['a', 'b']);
    expect(fake.closed).toBe(2);
  });

  it('non-2xx, the deadline over the body read, and an abort fail listBytes exactly as they fail list', async () => {
    const { fake, clock, pods } = setup({ requestTimeoutMs: 1_000, maxRetries: 0 });
    fake.otherwise(() => ({ status: 403, body: statusBody(403, 'Forbidden', 'pods is forbidden') }));
    const [viaList, viaBytes] = [await outcome(pods.list()), await outcome(pods.listBytes())];
    expect(viaBytes).toEqual(viaList);
    expect(viaBytes).toMatchObject({ error: { code: 'RL_KUBE_API_ERROR', statusCode: 403, reason: 'Forbidden', verb: 'list' } });

    // Headers arrive, the body never ends: the request deadline covers the read.
    const held = () => ({ chunks: ['{"items":[', deferred<string>().promise] });
    fake.next(held, held);
    const listing = outcome(pods.list());
    const reading = outcome(pods.listBytes());
    await settle();
    await clock.advanceAsync(1_000);
    const [timedList, timedBytes] = [await listing, await reading];
    expect(timedBytes).toMatchObject({ error: { code: 'RL_KUBE_REQUEST_TIMEOUT' } });
    expect((timedBytes as { error: Error }).error.message).toBe((timedList as { error: Error }).error.message);

    fake.next(held);
    const controller = new AbortController();
    const aborted = outcome(pods.listBytes({ signal: controller.signal }));
    await settle();
    controller.abort(new Error('stopping'));
    expect(await aborted).toMatchObject({ error: { message: 'stopping' } });
    await clock.advanceAsync(5_000);
    expect(clock.pending).toBe(0); // no deadline timer left behind
  });

  it('[kube_client: LIST page buffer] readListBytes hands read the body listBytes resolves, asks for a whole read, and fails as listBytes fails', async () => {
    const { fake, clock, pods } = setup({ requestTimeoutMs: 1_000, maxRetries: 0 });
    const text = JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '9' }, items: [pod('a'), pod('b')] });
    const cut = Buffer.from(text);
    const answer = { chunks: [cut.subarray(0, 17), cut.subarray(17, 40).toString('latin1'), cut.subarray(40)] };
    fake.next(answer, answer);
    const bytes = await pods.listBytes({ limit: 2 });
    const read = await pods.readListBytes({ limit: 2 }, (body) => Buffer.from(body).toString('utf8'));
    expect(read).toBe(text);
    expect(Buffer.from(bytes).toString('utf8')).toBe(text);
    expect(fake.requests[1]!.query.toString()).toBe(fake.requests[0]!.query.toString());
    // The transport is told the body is read whole (the default transport then reads it off a bare socket).
    expect(fake.requests.map((r) => [r.stream, r.readWhole])).toEqual([
      [false, false],
      [true, true],
    ]);
    expect(fake.closed).toBe(2);

    fake.next({ chunks: [text] });
    await expect(
      pods.readListBytes(undefined, () => {
        throw new Error('reader failed');
      }),
    ).rejects.toThrow('reader failed');
    fake.otherwise(() => ({ status: 403, body: statusBody(403, 'Forbidden', 'pods is forbidden') }));
    const [viaBytes, viaRead] = [await outcome(pods.listBytes()), await outcome(pods.readListBytes(undefined, () => 1))];
    expect(viaRead).toEqual(viaBytes);
    const held = () => ({ chunks: ['{"items":[', deferred<string>().promise] });
    fake.next(held, held);
    const reading = outcome(pods.listBytes());
    const readingInto = outcome(pods.readListBytes(undefined, () => 1));
    await settle();
    await clock.advanceAsync(1_000);
    const [timed, timedInto] = [await reading, await readingInto];
    expect(timedInto).toMatchObject({ error: { code: 'RL_KUBE_REQUEST_TIMEOUT' } });
    expect((timedInto as { error: Error }).error.message).toBe((timed as { error: Error }).error.message);
    expect(clock.pending).toBe(0);
  });

  it('[kube_client: LIST page buffer] a page requested while one is read is read into the same memory; the last page of a LIST keeps none', async () => {
    const { fake, pods } = setup();
    const page = (n: number, size: number): string =>
      JSON.stringify({ metadata: { resourceVersion: String(n), continue: 'x'.repeat(size) }, items: [] });
    // Without Content-Length (a chunked answer) the buffer grows by doubling; with it, to the declared length and an eighth.
    const bodies = [page(1, 150_000), page(2, 20_000), page(3, 300_000), page(4, 10)];
    fake.next(
      { chunks: [bodies[0]!.slice(0, 70_000), bodies[0]!.slice(70_000)] },
      { chunks: [bodies[1]!] },
      { chunks: [bodies[2]!], headers: { 'Content-Length': String(bodies[2]!.length) } },
      { chunks: [bodies[3]!] },
    );
    const buffers: ArrayBufferLike[] = [];
    const texts: string[] = [];
    // A pager: each page's read requests the next (as the reflector's does) until the last.
    const readPage = async (index: number): Promise<void> => {
      await pods.readListBytes({ limit: 1 }, (body): Promise<void> => {
        buffers.push(body.buffer);
        texts.push(Buffer.from(body).toString('utf8'));
        return index + 1 < 3 ? readPage(index + 1) : Promise.resolve();
      });
    };
    await readPage(0);
    expect(texts).toEqual(bodies.slice(0, 3));
    // Page 1 grew its buffer (64 KiB, 128 KiB, 256 KiB); page 2 fit it; page 3 declared more than it holds: a new one.
    expect(buffers[1]).toBe(buffers[0]);
    expect(buffers[2]).not.toBe(buffers[0]);
    expect(buffers[2]!.byteLength).toBe(bodies[2]!.length + (bodies[2]!.length >>> 3));
    // Nothing was under way when page 3 was read: its buffer was let go, the next read allocates afresh.
    let last: ArrayBufferLike | undefined;
    expect(await pods.readListBytes(undefined, (body) => ((last = body.buffer), Buffer.from(body).toString('utf8')))).toBe(
      bodies[3],
    );
    expect(last).not.toBe(buffers[2]);
    expect(last).not.toBe(buffers[0]);
  });

  it('readList refuses exactly what list refuses (not JSON, empty, not an object, non-array items, no resourceVersion) and reads null items as none', async () => {
    const bodies = [
      '{"items":[',
      '  ',
      '[1]',
      '{"metadata":{"resourceVersion":"1"},"items":{}}',
      '{"metadata":{"resourceVersion":""},"items":[]}',
      '{"metadata":{},"items":[]}',
      '{"metadata":{"resourceVersion":"3","continue":""},"items":null}',
      '{"metadata":{"resourceVersion":"3","continue":7,"remainingItemCount":"x"}}',
    ];
    const { fake, pods } = setup();
    for (const body of bodies) {
      fake.next({ chunks: [body] });
      const viaList = await outcome(pods.list());
      const viaBytes = await outcome(Promise.resolve().then(() => pods.readList(Buffer.from(body))));
      expect(viaBytes, body).toEqual(viaList);
    }
    expect(await outcome(Promise.resolve().then(() => pods.readList(Buffer.from('{"items":['))))).toMatchObject({
      error: {
        code: 'RL_KUBE_PROTOCOL',
        message: expect.stringMatching(/^list \/api\/v1\/namespaces\/d\/pods: the body is not JSON/),
      },
    });
    expect(pods.readList(Buffer.from(bodies[6]!))).toEqual({
      items: [],
      resourceVersion: '3',
      continue: undefined,
      remainingItemCount: undefined,
    });
    // A poison item is the view's InvalidObjectError, as list throws it.
    const poison = Buffer.from(
      JSON.stringify({ metadata: { resourceVersion: '3' }, items: [pod('a', { status: { phase: 7 } })] }),
    );
    expect(() => pods.readList(poison)).toThrow(expect.objectContaining({ code: 'RL_TYPES_OBJECT_INVALID' }));
  });

  it('decodeJsonBody and readListBody are the exact path on their own: UTF-8 as request decodes it, a pass-through parse keeps raw items', () => {
    expect(decodeJsonBody(Buffer.from('{"a":"é"}'), 'get /x')).toEqual({ a: 'é' });
    expect(decodeJsonBody(new Uint8Array(0), 'get /x')).toBeUndefined();
    expect(() => decodeJsonBody(Buffer.from('nope'), 'get /x')).toThrow(/^get \/x: the body is not JSON/);
    const raw = { metadata: 'not an object' };
    expect(readListBody({ metadata: { resourceVersion: '1' }, items: [raw] }, (item) => item).items[0]).toBe(raw);
  });
});
