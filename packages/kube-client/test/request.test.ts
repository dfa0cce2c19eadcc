import { podResource } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { isTooManyRequests, KubeClient, TokenBucketRateLimiter, type KubeClientOptions } from './all.js';
import { deferred, FakeTransport, statusBody } from './fake-transport.js';

const pod = (name: string) => ({ metadata: { name, namespace: 'd', resourceVersion: '1' } });

function setup(options: Partial<KubeClientOptions> = {}) {
  const fake = new FakeTransport().otherwise((r) => ({ status: r.method === 'POST' ? 201 : 200, body: pod('p') }));
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: fake.transport, clock, ...options });
  return { fake, clock, client, pods: client.resource(podResource).inNamespace('d') };
}

describe('[kube_client: rest.Config QPS/Burst] client-side token bucket, client-go defaults 5 QPS / burst 10 on the writes', () => {
  it('the first 10 writes go at once, then one every 200 ms; reads are not throttled by default', async () => {
    const { fake, clock, pods } = setup();
    const done: number[] = [];
    const writes = Array.from({ length: 13 }, (_, i) => pods.create({ metadata: { name: `p${i}` } }).then(() => done.push(i)));
    await settle();
    expect(fake.requests).toHaveLength(10);
    // reads pass while writes wait
    await pods.get('p');
    expect(fake.requests).toHaveLength(11);
    await clock.advanceAsync(199);
    expect(fake.requests).toHaveLength(11);
    await clock.advanceAsync(1);
    expect(fake.requests).toHaveLength(12);
    await clock.advanceAsync(200);
    await clock.advanceAsync(200);
    await Promise.all(writes);
    // served in call order
    expect(done).toEqual([...Array(13).keys()]);
  });

  it("scope 'all' throttles reads too, as client-go does; custom qps/burst; rateLimit:false disables it", async () => {
    const a = setup({ rateLimit: { qps: 1, burst: 2, scope: 'all' } });
    void a.pods.get('x');
    void a.pods.get('x');
    void a.pods.get('x');
    await settle();
    expect(a.fake.requests).toHaveLength(2);
    await a.clock.advanceAsync(1000);
    expect(a.fake.requests).toHaveLength(3);
    const b = setup({ rateLimit: false });
    await Promise.all(Array.from({ length: 50 }, (_, i) => b.pods.create({ metadata: { name: `p${i}` } })));
    expect(b.fake.requests).toHaveLength(50);
    expect(b.clock.setTimeoutCalls).toBe(50); // only the request deadlines: nothing waited
  });

  it('a wait honours the AbortSignal and hands its token back; a wait longer than the request deadline fails at once with KUBE_REQUEST_TIMEOUT', async () => {
    const { fake, clock, pods } = setup({ rateLimit: { qps: 1, burst: 1 }, requestTimeoutMs: 5_000 });
    await pods.create({ metadata: { name: 'a' } });
    const controller = new AbortController();
    const aborted = pods.create({ metadata: { name: 'b' } }, { signal: controller.signal }).catch((e: unknown) => e);
    controller.abort(new Error('reconcile cancelled'));
    expect(await aborted).toMatchObject({ message: 'reconcile cancelled' });
    // the aborted waiter's token came back: the next write waits 1 s, not 2 s
    const next = pods.create({ metadata: { name: 'c' } });
    await clock.advanceAsync(1000);
    await next;
    expect(fake.requests.map((r) => (r.body as { metadata: { name: string } }).metadata.name)).toEqual(['a', 'c']);
    const tight = await pods.create({ metadata: { name: 'd' } }, { timeoutMs: 500 }).catch((e: unknown) => e);
    expect(tight).toMatchObject({ code: 'RL_KUBE_REQUEST_TIMEOUT', verb: 'create' });
    expect((tight as Error).message).toMatch(/rate limiter/);
  });

  it('TokenBucketRateLimiter starts full, refills at qps up to burst, tryTake never waits', () => {
    const clock = new ManualClock(0);
    const bucket = new TokenBucketRateLimiter({ qps: 2, burst: 3, clock });
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([true, true, true, false]);
    clock.advance(500);
    expect(bucket.tryTake()).toBe(true);
    clock.advance(60_000);
    expect(bucket.tokens).toBe(3);
  });
});

describe('[kube_client: Retry-After] a 429 with Retry-After is retried after the wait (bounded); a 5xx only for reads', () => {
  const tooMany = (seconds: number) => ({
    status: 429,
    headers: { 'Retry-After': String(seconds) },
    body: statusBody(429, 'TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds: seconds }),
  });

  it('a write answered 429 is sent again after Retry-After seconds on the clock, through the rate limiter again', async () => {
    const { fake, clock, pods } = setup({ rateLimit: false });
    fake.next(tooMany(2), tooMany(1));
    const created = pods.create({ metadata: { name: 'p' } });
    await settle();
    expect(fake.requests).toHaveLength(1);
    await clock.advanceAsync(1999);
    expect(fake.requests).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(fake.requests).toHaveLength(2);
    await clock.advanceAsync(1000);
    await created;
    expect(fake.requests).toHaveLength(3);
  });

  it('retries stop after maxRetries and the last 429 is thrown; without Retry-After there is no retry', async () => {
    const { fake, clock, pods } = setup({ rateLimit: false, maxRetries: 2 });
    fake.otherwise(() => tooMany(1));
    const result = pods.get('p').catch((e: unknown) => e);
    for (let i = 0; i < 3; i++) await clock.advanceAsync(1000);
    const error = await result;
    expect(isTooManyRequests(error)).toBe(true);
    expect(fake.requests).toHaveLength(3);
    const bare = setup({ rateLimit: false });
    bare.fake.next({ status: 429, body: statusBody(429, 'TooManyRequests', 'x') });
    expect(isTooManyRequests(await bare.pods.get('p').catch((e: unknown) => e))).toBe(true);
    expect(bare.fake.requests).toHaveLength(1);
  });

  it('a 503/504 with Retry-After is retried for a read but not for a write (it may have been applied)', async () => {
    const { fake, clock, pods } = setup({ rateLimit: false });
    const unavailable = { status: 503, headers: { 'Retry-After': '1' }, body: statusBody(503, 'ServiceUnavailable', 'x') };
    fake.next(unavailable);
    const read = pods.get('p');
    await clock.advanceAsync(1000);
    await read;
    expect(fake.requests).toHaveLength(2);
    fake.next(unavailable);
    const write = await pods.create({ metadata: { name: 'p' } }).catch((e: unknown) => e);
    expect(write).toMatchObject({ statusCode: 503 });
    expect(fake.requests).toHaveLength(3);
  });

  it('a Retry-After longer than the rest of the deadline fails at once; the wait honours the AbortSignal', async () => {
    const { fake, clock, pods } = setup({ rateLimit: false, requestTimeoutMs: 3000 });
    fake.next(tooMany(5));
    expect(await pods.get('p').catch((e: unknown) => e)).toMatchObject({ statusCode: 429 });
    fake.next(tooMany(1));
    const controller = new AbortController();
    const pending = pods.get('p', { signal: controller.signal }).catch((e: unknown) => e);
    await settle();
    controller.abort(new Error('stop'));
    expect(await pending).toMatchObject({ message: 'stop' });
    expect(clock.pending).toBe(0);
  });
});

describe('[kube_client: request timeout and AbortSignal] every request has a deadline; every wait is abortable', () => {
  it('a server that never answers fails with KUBE_REQUEST_TIMEOUT at the default 30 s and leaves no timer', async () => {
    const { fake, clock, pods } = setup();
    const never = deferred<never>();
    fake.next(() => never.promise);
    const result = pods.get('p').catch((e: unknown) => e);
    await clock.advanceAsync(29_999);
    await clock.advanceAsync(1);
    expect(await result).toMatchObject({ code: 'RL_KUBE_REQUEST_TIMEOUT', timeoutMs: 30_000, verb: 'get' });
    expect(clock.pending).toBe(0);
  });

  it('a body that stalls mid-way is also cut by the deadline; timeoutMs 0 means none', async () => {
    const { fake, clock, pods } = setup({ requestTimeoutMs: 1000 });
    const stalled = deferred<string>();
    fake.next({ chunks: ['{"metadata":', stalled.promise] });
    const result = pods.get('p').catch((e: unknown) => e);
    await clock.advanceAsync(1000);
    expect(await result).toMatchObject({ code: 'RL_KUBE_REQUEST_TIMEOUT' });
    const slow = deferred<string>();
    fake.next({ chunks: ['{"metadata":', slow.promise] });
    const patient = pods.get('p', { timeoutMs: 0 });
    await clock.advanceAsync(3_600_000);
    slow.resolve('{"name":"p"}}');
    expect((await patient).metadata.name).toBe('p');
  });

  it('an already aborted signal sends nothing; aborting in flight rejects with the reason and releases the response', async () => {
    const { fake, pods } = setup();
    await expect(pods.get('p', { signal: AbortSignal.abort(new Error('early')) })).rejects.toThrow('early');
    expect(fake.requests).toHaveLength(0);
    const hang = deferred<string>();
    fake.next({ chunks: ['{', hang.promise] });
    const controller = new AbortController();
    const result = pods.get('p', { signal: controller.signal }).catch((e: unknown) => e);
    await settle();
    controller.abort(new Error('late'));
    expect(await result).toMatchObject({ message: 'late' });
    expect(fake.closed).toBe(1);
  });

  it('onWarning receives Warning headers', async () => {
    const warnings: string[] = [];
    const { fake, pods } = setup({ onWarning: (w, r) => warnings.push(`${r.verb} ${w}`) });
    fake.next({ body: pod('p'), headers: { Warning: '299 - "unknown field \\"spec.foo\\""' } });
    await pods.get('p');
    expect(warnings).toEqual(['get 299 - "unknown field \\"spec.foo\\""']);
  });
});
