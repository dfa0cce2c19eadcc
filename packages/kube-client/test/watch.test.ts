import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isExpired, KubeClient, splitLineBatches, splitLines, statusError } from './all.js';
import { deferred, FakeTransport, statusBody } from './fake-transport.js';

const pod = (name: string, rv: string) => ({ metadata: { name, namespace: 'd', resourceVersion: rv } });
const frame = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

function setup(maxFrameBytes?: number) {
  const fake = new FakeTransport();
  const clock = new ManualClock(0);
  const client = new KubeClient({
    server: 'https://k8s.test',
    transport: fake.transport,
    clock,
    rateLimit: false,
    maxFrameBytes,
  });
  return { fake, clock, client, pods: client.resource(podResource, podSchema).inNamespace('d') };
}

async function collect<V>(iterable: AsyncIterable<V>): Promise<V[]> {
  const out: V[] = [];
  for await (const v of iterable) out.push(v);
  return out;
}

async function* chunks(...parts: (string | Uint8Array)[]): AsyncGenerator<string | Uint8Array> {
  yield* parts;
}

describe('[kube_client: watch] a streamed WATCH: lines split on bytes, typed frames, bookmarks, timeoutSeconds, a frame cap, abort', () => {
  it('sends watch=true, the cursor, timeoutSeconds, allowWatchBookmarks (default true) and selectors; yields typed frames incl. BOOKMARK and an in-band ERROR', async () => {
    const { fake, pods } = setup();
    fake.next({
      chunks: [
        frame('ADDED', pod('a', '11')).slice(0, 20),
        frame('ADDED', pod('a', '11')).slice(20) + frame('MODIFIED', pod('a', '12')),
        frame('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '15' } }),
        frame('DELETED', pod('a', '16')) + '\n',
        frame('ERROR', statusBody(410, 'Expired', 'too old resource version: 10 (14)')),
      ],
    });
    const frames = await collect(pods.watch({ resourceVersion: '10', timeoutSeconds: 290, labelSelector: 'app=x' }));
    expect(frames.map((f) => f.type)).toEqual(['ADDED', 'MODIFIED', 'BOOKMARK', 'DELETED', 'ERROR']);
    expect(frames[1]).toMatchObject({
      type: 'MODIFIED',
      resourceVersion: '12',
      object: { metadata: { name: 'a', resourceVersion: '12' } },
    });
    expect(frames[2]).toEqual({ type: 'BOOKMARK', resourceVersion: '15' });
    const error = frames[4]!;
    expect(error.type === 'ERROR' && isExpired(statusError(error.status, 'watch', '/api/v1/pods'))).toBe(true);
    expect(Object.fromEntries(fake.requests[0]!.query)).toEqual({
      watch: 'true',
      resourceVersion: '10',
      timeoutSeconds: '290',
      allowWatchBookmarks: 'true',
      labelSelector: 'app=x',
    });
    expect(fake.closed).toBe(1);
  });

  it('watchLines yields raw lines (for a reader that validates frames itself); a multi-byte character split across chunks decodes whole', async () => {
    const { fake, pods } = setup();
    const line = frame('ADDED', { metadata: { name: 'ü-pod', namespace: 'd', resourceVersion: '1' } });
    const bytes = Buffer.from(line);
    const cut = bytes.indexOf(0xc3) + 1;
    fake.next({ chunks: [bytes.subarray(0, cut), bytes.subarray(cut)] });
    const lines = await collect(pods.watchLines({ resourceVersion: '0', allowWatchBookmarks: false }));
    expect(lines).toEqual([line.trimEnd()]);
    expect(fake.requests[0]!.query.get('allowWatchBookmarks')).toBe('false');
  });

  it('a frame over the cap ends the stream with KUBE_WATCH_FRAME_TOO_LARGE, also when it never ends (memory stays bounded)', async () => {
    await expect(collect(splitLines(chunks('x'.repeat(50) + '\n'), 40))).rejects.toMatchObject({
      code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE',
      maxFrameBytes: 40,
    });
    await expect(collect(splitLines(chunks('x'.repeat(30), 'x'.repeat(30)), 40))).rejects.toMatchObject({
      code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE',
    });
    expect(await collect(splitLines(chunks('x'.repeat(40) + '\n'), 40))).toHaveLength(1);
    const { fake, pods } = setup(64);
    fake.next({ chunks: [frame('ADDED', pod('a', '1')), 'y'.repeat(100)] });
    await expect(collect(pods.watch())).rejects.toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE' });
  });

  it('a body cut inside a frame is a KUBE_PROTOCOL error (the frame will be replayed from the cursor)', async () => {
    await expect(collect(splitLines(chunks('{"type":"ADDED"')))).rejects.toMatchObject({ code: 'RL_KUBE_PROTOCOL' });
    expect(await collect(splitLines(chunks('{"a":1}\r\n', '  \n')))).toEqual(['{"a":1}\r']);
  });

  it('the request deadline covers the headers only: an idle watch outlives it; aborting tears it down and releases the response', async () => {
    const { fake, clock, pods } = setup();
    const held = deferred<string>();
    fake.next({ chunks: [frame('ADDED', pod('a', '1')), held.promise] });
    const controller = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const f of pods.watch({ signal: controller.signal })) seen.push(f.type);
    })().catch((e: unknown) => e);
    await settle();
    await clock.advanceAsync(120_000);
    expect(seen).toEqual(['ADDED']);
    expect(clock.pending).toBe(0);
    controller.abort(new Error('stop watching'));
    expect(await done).toMatchObject({ message: 'stop watching' });
    expect(fake.closed).toBe(1);
  });

  it('a non-2xx WATCH answer is a KubeApiError with verb watch', async () => {
    const { fake, pods } = setup();
    fake.next({ status: 410, body: statusBody(410, 'Expired', 'too old') });
    await expect(collect(pods.watch({ resourceVersion: '1' }))).rejects.toMatchObject({
      code: 'RL_KUBE_API_ERROR',
      verb: 'watch',
      reason: 'Expired',
    });
  });
});

describe('[kube_client: ListPager] paged LIST follows continue tokens; an expired token falls back to one full LIST', () => {
  const page = (names: string[], rv: string, next?: string) => ({
    body: { metadata: { resourceVersion: rv, ...(next ? { continue: next } : {}) }, items: names.map((n) => pod(n, rv)) },
  });

  it('listPages / listAll follow continue with limit 500 by default, keeping the first page resourceVersion', async () => {
    const { fake, pods } = setup();
    fake.next(page(['a', 'b'], '7', 't1'), page(['c'], '7', 't2'), page(['d'], '7'));
    const all = await pods.listAll({ labelSelector: 'x' });
    expect(all.items.map((p) => p.metadata.name)).toEqual(['a', 'b', 'c', 'd']);
    expect(all.resourceVersion).toBe('7');
    expect(fake.requests.map((r) => [r.query.get('limit'), r.query.get('continue')])).toEqual([
      ['500', null],
      ['500', 't1'],
      ['500', 't2'],
    ]);
  });

  it('a 410 Expired on a continue drops the partial result and lists once without limit (client-go FullListIfExpired)', async () => {
    const { fake, pods } = setup();
    fake.next(
      page(['a'], '7', 't1'),
      { status: 410, body: statusBody(410, 'Expired', 'The provided continue parameter is too old') },
      page(['a', 'b', 'c'], '9'),
    );
    const all = await pods.listAll({ limit: 1 });
    expect(all).toMatchObject({ resourceVersion: '9' });
    expect(all.items.map((p) => p.metadata.name)).toEqual(['a', 'b', 'c']);
    expect(fake.requests[2]!.query.get('limit')).toBeNull();
    // a 410 on the first page is not a continue expiry: thrown
    fake.next({ status: 410, body: statusBody(410, 'Expired', 'x') });
    await expect(pods.listAll()).rejects.toMatchObject({ reason: 'Expired' });
  });
});

describe('[kube_client: watch] a connection reset mid-body', () => {
  it('is a KUBE_TRANSPORT error naming verb and path, for a watch and for a GET', async () => {
    const { fake, pods } = setup();
    const reset = Promise.reject(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    reset.catch(() => {});
    fake.next({ chunks: [frame('ADDED', pod('a', '1')), reset as Promise<string>] });
    await expect(collect(pods.watch())).rejects.toMatchObject({
      code: 'RL_KUBE_TRANSPORT',
      verb: 'watch',
      path: '/api/v1/namespaces/d/pods?watch=true&allowWatchBookmarks=true',
    });
    const again = Promise.reject(new Error('socket hang up'));
    again.catch(() => {});
    fake.next({ chunks: ['{"metadata":', again as Promise<string>] });
    await expect(pods.get('a')).rejects.toMatchObject({ code: 'RL_KUBE_TRANSPORT', verb: 'get' });
  });
});

describe('[kube_client: batched watch lines] one batch per socket read', () => {
  it('[kube_client: batched watch lines] splitLineBatches yields the lines each chunk completes, together; flattened it is splitLines for any chunking', async () => {
    const text = `{"a":1}\n{"b":2}\n{"c":\n3}\n\n{"d":"é"}\n`;
    expect(await collect(splitLineBatches(chunks('{"a":1}\n{"b":2}\n{"c":', '3}\n')))).toEqual([
      ['{"a":1}', '{"b":2}'],
      ['{"c":3}'],
    ]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 6 }), async (cuts) => {
        const bytes = Buffer.from(text);
        const points = [...new Set(cuts.map((c) => c % bytes.length))].sort((x, y) => x - y);
        const parts = [0, ...points, bytes.length].slice(1).map((end, i, ends) => bytes.subarray(i === 0 ? 0 : ends[i - 1], end));
        const batches = await collect(splitLineBatches(chunks(...parts)));
        expect(batches.every((batch) => batch.length > 0)).toBe(true);
        expect(batches.flat()).toEqual(await collect(splitLines(chunks(...parts))));
      }),
    );
  });

  it('[kube_client: batched watch lines] a frame over the cap throws after the batch of the lines completed before it', async () => {
    const stream = splitLineBatches(chunks(`{"a":1}\n${'x'.repeat(50)}\n`), 40);
    expect((await stream.next()).value).toEqual(['{"a":1}']);
    await expect(stream.next()).rejects.toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE' });
  });
});
