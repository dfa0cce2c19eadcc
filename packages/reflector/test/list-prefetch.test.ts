import { KubeApiError, KubeProtocolError } from '@reconcile-loop/kube-client';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { ManualClock, sleep } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import {
  KubeApiClient,
  ListTimeoutError,
  Reflector,
  type ListPageResult,
  type ListRequest,
  type ListResult,
  type ListWatchClient,
} from '../src/index.js';
import { expectStoreEqualsFreshList, fastClock, kubeConfigFor, runCleanups, server, tapOf } from './embedded-helpers.js';
import { advance, FakeClient, openReflector, pod, apiError } from './helpers.js';

/** A scripted page: a listing (sent as its body), a body as it is, a failure, or a page the server never answers. */
type Step = ListResult | { readonly body: string } | Error | 'never';

/** The body of one LIST page as the apiserver writes it (metadata before items). */
function pageBody(page: ListResult): string {
  return JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: page.resourceVersion, ...(page.continue ? { continue: page.continue } : {}) },
    items: page.items,
  });
}

/**
 * A client with `listPage` on the fake clock: each request is answered `serveMs` after it is sent
 * (the server building the page; an abort ends the request), its body handed to the reflector's
 * `read`, and the page resolved `readMs` later (the time the reflector spends reading it). A body
 * the reader cannot prove is read the exact way (`JSON.parse`, `items: null` kept as it is). Records
 * every request (in `lists`, with the time it was sent) and the order of requests and reads in `log`.
 */
class PacedListClient extends FakeClient {
  readonly log: string[] = [];
  readonly sentAt: number[] = [];
  readonly #steps: Step[] = [];

  constructor(
    readonly clock: ManualClock,
    readonly serveMs: number,
    readonly readMs: number,
  ) {
    super();
  }

  pages(...steps: Step[]): this {
    this.#steps.push(...steps);
    return this;
  }

  async listPage<P>(request: ListRequest, read: (body: Uint8Array) => P | undefined): Promise<ListPageResult<P>> {
    this.lists.push(request);
    this.sentAt.push(this.clock.now());
    const n = this.lists.length;
    this.log.push(`request ${n}`);
    const step = this.#steps.shift() ?? this.defaultList;
    if (step === 'never')
      return new Promise<never>((_, reject) =>
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }),
      );
    await sleep(this.clock, this.serveMs, request.signal);
    if (step instanceof Error) throw step;
    const body = Buffer.from('body' in step ? step.body : pageBody(step), 'utf8');
    this.log.push(`read ${n} begins`);
    const page = read(body);
    if (this.readMs > 0) await sleep(this.clock, this.readMs);
    this.log.push(`read ${n} ends`);
    if (page !== undefined) return { kind: 'read', page };
    const parsed = JSON.parse(body.toString('utf8')) as {
      metadata: { resourceVersion: string; continue?: string };
      items: unknown[];
    };
    return {
      kind: 'exact',
      list: { items: parsed.items, resourceVersion: parsed.metadata.resourceVersion, continue: parsed.metadata.continue },
    };
  }
}

/** A paged reflector over a {@link PacedListClient} (pages served in 100 ms, read in `readMs`). */
function paced(readMs: number, steps: Step[], options: { listPageSize?: number; listTimeoutMs?: number } = {}) {
  const clock = new ManualClock();
  const client = new PacedListClient(clock, 100, readMs).pages(...steps);
  return { ...openReflector({ clock, listPageSize: 2, ...options }, () => {}, client), clock, client };
}

/** Moves the fake clock to `at` in steps of 10 ms, letting every reaction run between steps. */
async function runTo(clock: ManualClock, at: number): Promise<void> {
  while (clock.now() < at) await advance(clock, Math.min(10, at - clock.now()));
}

/** Runs `body` and lets Node report unhandled rejections; returns what it reported. */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const reported: unknown[] = [];
  const record = (reason: unknown): void => void reported.push(reason);
  process.on('unhandledRejection', record);
  try {
    await body();
    await settle();
  } finally {
    process.off('unhandledRejection', record);
  }
  return reported;
}

const tokens = (client: FakeClient) => client.lists.map((r) => [r.limit, r.continue]);
const keysOf = (events: readonly SourceEvent<Pod>[]) =>
  events[0]?.type === 'replace' ? [...events[0].objects.keys()] : undefined;
const expired = () => apiError(410, { code: 410, reason: 'Expired', message: 'The provided continue parameter is too old' });

describe('[k8s_reflector: LIST page prefetch] the next page is requested as soon as the continue token is known (fakes, fake clock)', () => {
  it("[k8s_reflector: LIST page prefetch] page N+1 is requested when page N's body arrives, before page N is read: three pages in 360 ms of fake time (480 without), the same requests, pages and replace", async () => {
    const { client, clock, reflector, stream, controller } = paced(60, [
      { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
      { items: [pod('c', '3'), pod('d', '4')], resourceVersion: '10', continue: 't2' },
      { items: [pod('e', '5')], resourceVersion: '10' },
    ]);
    await runTo(clock, 100);
    expect(client.log).toEqual(['request 1', 'read 1 begins', 'request 2']);
    await runTo(clock, 359);
    expect(stream.events).toHaveLength(0);
    await runTo(clock, 360);
    expect(keysOf(stream.events)).toEqual(['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e']);
    // Each page's successor is sent as its body arrives (100, 200), not once it is read (160, 320).
    expect(client.sentAt).toEqual([0, 100, 200]);
    expect(client.log).toEqual([
      'request 1',
      'read 1 begins',
      'request 2',
      'read 1 ends',
      'read 2 begins',
      'request 3',
      'read 2 ends',
      'read 3 begins',
      'read 3 ends',
    ]);
    expect(tokens(client)).toEqual([
      [2, undefined],
      [2, 't1'],
      [2, 't2'],
    ]);
    expect(reflector.resourceVersion).toBe('10');
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 3, listRestarts: 0, listFailures: 0 });
    controller.abort();
  });

  it('[k8s_reflector: LIST page prefetch] at most one request is ahead: a body that arrives while its own request is still the one ahead sends nothing further', async () => {
    // Pages read slower (150 ms) than served (100 ms): page 2's body arrives at 200, while page 1 is still read.
    const { client, clock, stream, reflector, controller } = paced(150, [
      { items: [pod('a', '1')], resourceVersion: '10', continue: 't1' },
      { items: [pod('b', '2')], resourceVersion: '10', continue: 't2' },
      { items: [pod('c', '3')], resourceVersion: '10' },
    ]);
    await runTo(clock, 600);
    expect(keysOf(stream.events)).toEqual(['ns/a', 'ns/b', 'ns/c']);
    // Page 3 is requested when the loop asks for it (350), not at 200 beside page 2 still ahead.
    expect(client.sentAt).toEqual([0, 100, 350]);
    expect(client.log).toEqual([
      'request 1',
      'read 1 begins',
      'request 2',
      'read 2 begins',
      'read 1 ends',
      'read 2 ends',
      'request 3',
      'read 3 begins',
      'read 3 ends',
    ]);
    expect(tokens(client)).toEqual([
      [2, undefined],
      [2, 't1'],
      [2, 't2'],
    ]);
    expect(reflector.stats).toMatchObject({ listPages: 3 });
    controller.abort();
  });

  it("[k8s_reflector: LIST page prefetch] a token read from the first bytes that is not the page's as read: the request ahead is aborted (its rejection swallowed) and the page is fetched with the page's token", async () => {
    // Two metadata members: the first bytes say "stale", JSON.parse (the page as read) says "t1".
    const body = `{"metadata":{"resourceVersion":"10","continue":"stale"},"metadata":{"resourceVersion":"10","continue":"t1"},"items":[${JSON.stringify(pod('a', '1'))}]}`;
    let run!: ReturnType<typeof paced>;
    const unhandled = await unhandledDuring(async () => {
      run = paced(0, [
        { body },
        { items: [pod('wrong', '9')], resourceVersion: '10' },
        { items: [pod('b', '2')], resourceVersion: '10' },
      ]);
      await runTo(run.clock, 200);
    });
    const { client, reflector, stream, controller } = run;
    expect(unhandled).toEqual([]);
    expect(tokens(client)).toEqual([
      [2, undefined],
      [2, 'stale'],
      [2, 't1'],
    ]);
    expect(client.lists[1]!.signal.aborted).toBe(true);
    expect(client.sentAt).toEqual([0, 100, 100]);
    // The request ahead was never read; the page fetched with the page's own token was.
    expect(client.log).toEqual([
      'request 1',
      'read 1 begins',
      'request 2',
      'read 1 ends',
      'request 3',
      'read 3 begins',
      'read 3 ends',
    ]);
    expect(keysOf(stream.events)).toEqual(['ns/a', 'ns/b']);
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 2, listFailures: 0 });
    controller.abort();
  });

  it('[k8s_reflector: LIST page prefetch] a page requested ahead answered 410 (continue expired) restarts as one unpaged LIST exactly as before', async () => {
    const { client, clock, reflector, stream, logger, controller } = paced(60, [
      { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
      expired(),
      { items: [pod('a', '1'), pod('c', '12')], resourceVersion: '12' },
    ]);
    const unhandled = await unhandledDuring(() => runTo(clock, 360));
    expect(unhandled).toEqual([]);
    // Page 2 was requested ahead (at 100, while page 1 was read until 160); its 410 came at 200.
    expect(client.sentAt).toEqual([0, 100, 200]);
    expect(tokens(client)).toEqual([
      [2, undefined],
      [2, 't1'],
      [undefined, undefined],
    ]);
    expect(keysOf(stream.events)).toEqual(['ns/a', 'ns/c']);
    expect(reflector.resourceVersion).toBe('12');
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 2, listRestarts: 1, listFailures: 0 });
    expect(logger.entries.filter((e) => e.level === 'info').map((e) => e.message)).toContain(
      'LIST continue token expired (410); restarting as one unpaged LIST',
    );
    controller.abort();
  });

  it('[k8s_reflector: LIST page prefetch] a page requested ahead that fails (500) fails the LIST as a page fails without prefetch: same requests, counters, logs, health and retry', async () => {
    const script = (): Step[] => [
      { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
      apiError(500, { code: 500, reason: 'InternalError', message: 'boom' }),
      { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '11', continue: 't2' },
      { items: [pod('c', '3')], resourceVersion: '11' },
    ];
    const ahead = paced(60, script());
    await runTo(ahead.clock, 200);
    // Page 2 was requested ahead (at 100, while page 1 was read until 160); its 500 came at 200.
    expect(ahead.client.sentAt).toEqual([0, 100]);
    expect(ahead.reflector.stats).toMatchObject({ listFailures: 1 });
    const aheadError = ahead.reflector.health().lastError;
    await runTo(ahead.clock, 1_500);
    // The string path (a client without listPage) over the same script: nothing is requested ahead.
    const plain = openReflector({ listPageSize: 2 }, (c) => c.queueList(...(script() as Array<ListResult | Error>)));
    await settle();
    const plainError = plain.reflector.health().lastError;
    await advance(plain.clock, 1_000);
    expect(aheadError).toBeInstanceOf(KubeApiError);
    expect(aheadError).toEqual(plainError);
    expect(keysOf(ahead.stream.events)).toEqual(['ns/a', 'ns/b', 'ns/c']);
    expect(keysOf(ahead.stream.events)).toEqual(keysOf(plain.stream.events));
    expect(tokens(ahead.client)).toEqual(tokens(plain.client));
    expect(ahead.reflector.stats).toEqual(plain.reflector.stats);
    const messages = (run: { logger: typeof plain.logger }) => run.logger.entries.map((e) => [e.level, e.message]);
    expect(messages(ahead)).toEqual(messages(plain));
    ahead.controller.abort();
    plain.controller.abort();
  });

  it.each([
    ['a page the reader rejects (items: null)', `{"metadata":{"resourceVersion":"10","continue":"t1"},"items":null}`],
    ['a page that is not a listing (no resourceVersion)', `{"metadata":{"continue":"t1"},"items":[]}`],
  ])(
    '[k8s_reflector: LIST page prefetch] %s fails the LIST and aborts the request ahead; nothing is left unhandled',
    async (_, body) => {
      let run!: ReturnType<typeof paced>;
      const unhandled = await unhandledDuring(async () => {
        run = paced(60, [{ body }, { items: [pod('b', '2')], resourceVersion: '10' }]);
        await runTo(run.clock, 100);
        expect(run.client.lists[1]!.signal.aborted).toBe(false);
        await runTo(run.clock, 160);
      });
      const { client, reflector, controller } = run;
      expect(unhandled).toEqual([]);
      expect(tokens(client)).toEqual([
        [2, undefined],
        [2, 't1'],
      ]);
      expect(client.lists[1]!.signal.aborted).toBe(true);
      expect(reflector.stats).toMatchObject({ listFailures: 1, listPages: 0 });
      expect(reflector.health().lastError).toBeInstanceOf(KubeProtocolError);
      controller.abort();
    },
  );

  it('[k8s_reflector: LIST page prefetch] an abort while a page is requested ahead aborts it and ends the stream quietly', async () => {
    let run!: ReturnType<typeof paced>;
    const unhandled = await unhandledDuring(async () => {
      run = paced(60, [{ items: [pod('a', '1')], resourceVersion: '10', continue: 't1' }, 'never']);
      await runTo(run.clock, 120);
      expect(run.client.lists[1]!.signal.aborted).toBe(false);
      run.controller.abort();
      await run.stream.done;
    });
    expect(unhandled).toEqual([]);
    expect(run.client.lists[1]!.signal.aborted).toBe(true);
    expect(run.stream.events).toHaveLength(0);
    expect(run.stream.error).toBeUndefined();
  });

  it('[k8s_reflector: LIST page prefetch] listTimeoutMs bounds the page requested ahead too: the timeout aborts it (reason ListTimeoutError), counted as before', async () => {
    let run!: ReturnType<typeof paced>;
    const unhandled = await unhandledDuring(async () => {
      run = paced(60, [{ items: [pod('a', '1')], resourceVersion: '10', continue: 't1' }, 'never'], { listTimeoutMs: 150 });
      await runTo(run.clock, 149);
      expect(run.client.lists[1]!.signal.aborted).toBe(false);
      await runTo(run.clock, 150);
    });
    const { client, reflector, controller } = run;
    expect(unhandled).toEqual([]);
    expect(client.sentAt).toEqual([0, 100]);
    expect(client.lists[1]!.signal.aborted).toBe(true);
    expect(client.lists[1]!.signal.reason).toBeInstanceOf(ListTimeoutError);
    expect(reflector.stats).toMatchObject({ listFailures: 1, listTimeouts: 1 });
    expect(reflector.health().lastError).toBeInstanceOf(ListTimeoutError);
    controller.abort();
  });

  it('[k8s_reflector: LIST page prefetch] an unpaged LIST (listPageSize 0) and a client without listPage request nothing ahead', async () => {
    const unpaged = paced(60, [{ items: [pod('a', '1')], resourceVersion: '10', continue: 't1' }], { listPageSize: 0 });
    await runTo(unpaged.clock, 160);
    expect(tokens(unpaged.client)).toEqual([[undefined, undefined]]);
    expect(keysOf(unpaged.stream.events)).toEqual(['ns/a']);
    unpaged.controller.abort();
    const plain = openReflector({ listPageSize: 1 }, (c) =>
      c.queueList({ items: [pod('a', '1')], resourceVersion: '10', continue: 't1' }, 'hang'),
    );
    await settle();
    expect(tokens(plain.client)).toEqual([
      [1, undefined],
      [1, 't1'],
    ]);
    plain.controller.abort();
  });
});

describe('[k8s_reflector: LIST page prefetch] over the embedded apiserver', () => {
  afterEach(runCleanups);

  it("[k8s_reflector: LIST page prefetch] the server's real continue tokens are read from each page's first bytes: every page after the first is requested while the one before is read, and the store equals a fresh LIST", async () => {
    const s = await server();
    s.seedPods(7, { namespace: 'pool-a', labels: { pool: 'engines' }, namePrefix: 'engine' });
    const kubeClient = new KubeApiClient(kubeConfigFor(s), podResource);
    const log: string[] = [];
    let sent = 0;
    const logged: ListWatchClient = {
      list: (request) => kubeClient.list(request),
      listPage: (request, read) => {
        const n = ++sent;
        log.push(`request ${n}`);
        return kubeClient.listPage(request, (body) => {
          log.push(`read ${n} begins`);
          const page = read(body);
          log.push(`read ${n} ends`);
          return page;
        });
      },
      watch: (request) => kubeClient.watch(request),
    };
    const reflector = new Reflector<Pod>({
      client: logged,
      schema: podSchema,
      clock: fastClock,
      random: () => 0,
      listPageSize: 2,
      labelSelector: 'pool',
    });
    const { tap } = tapOf<Pod>(reflector);
    const listing = await tap.next('the listing');
    expect(listing.type === 'replace' ? listing.objects.size : 0).toBe(7);
    expect(log).toEqual([
      'request 1',
      'read 1 begins',
      'request 2',
      'read 1 ends',
      'read 2 begins',
      'request 3',
      'read 2 ends',
      'read 3 begins',
      'request 4',
      'read 3 ends',
      'read 4 begins',
      'read 4 ends',
    ]);
    expect(s.requestCounts().list).toBe(4);
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 4, listRestarts: 0 });
    await expectStoreEqualsFreshList(tap, s, podResource, { labelSelector: 'pool' });
  });
});
