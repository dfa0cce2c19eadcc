import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { KubeClient, KubeProtocolError } from '@reconcile-loop/kube-client';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { settle } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
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

/** The body of one LIST page as the apiserver writes it. */
function pageBody(page: ListResult): string {
  return JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: page.resourceVersion, ...(page.continue ? { continue: page.continue } : {}) },
    items: page.items,
  });
}

/**
 * A {@link FakeClient} with `listPage`, as `KubeApiClient` has it: each queued LIST answer is sent
 * as its body's bytes (a `body` string queued with {@link queueBody} as it is), read by the
 * reflector's reader; when the reader returns `undefined`, the same bytes are read the exact way
 * (`JSON.parse`). Records how each page was read.
 */
class BytesListClient extends FakeClient {
  readonly reads: Array<'read' | 'exact'> = [];
  readonly #bodies: string[] = [];

  queueBody(...bodies: string[]): this {
    this.#bodies.push(...bodies);
    this.queueList(...bodies.map(() => ({ items: [], resourceVersion: 'unused' })));
    return this;
  }

  async listPage<P>(request: ListRequest, read: (body: Uint8Array) => P | undefined): Promise<ListPageResult<P>> {
    const answer = await this.list(request);
    const text = answer.resourceVersion === 'unused' ? this.#bodies.shift()! : pageBody(answer);
    const body = Buffer.from(text, 'utf8');
    const page = read(body);
    this.reads.push(page === undefined ? 'exact' : 'read');
    if (page !== undefined) return { kind: 'read', page };
    const parsed = JSON.parse(body.toString('utf8')) as {
      metadata: { resourceVersion: string; continue?: string };
      items: unknown[] | null;
    };
    return {
      kind: 'exact',
      list: { items: parsed.items ?? [], resourceVersion: parsed.metadata.resourceVersion, continue: parsed.metadata.continue },
    };
  }
}

const replaceOf = (events: readonly SourceEvent<Pod>[]): Map<string, Pod> => {
  const first = events[0];
  if (first?.type !== 'replace') throw new Error(`expected a replace first, got ${first?.type ?? 'nothing'}`);
  return first.objects as Map<string, Pod>;
};

/** A pod with more than a name: labels, annotations (escapes, non-ASCII), containers, status, managedFields. */
function richPod(name: string, resourceVersion: string): Record<string, unknown> {
  return pod(name, resourceVersion, {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion,
      labels: { app: 'engine', 'miles.io/pool': 'rollout' },
      annotations: { note: 'quote " backslash \\ tab \t café 😀' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-uid', controller: true }],
      managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: { 'f:status': { 'f:phase': {} } } }],
    },
    spec: {
      nodeName: 'node-1',
      containers: [
        { name: 'main', image: 'img:1', ports: [{ containerPort: 8080, protocol: 'TCP' }], env: [{ name: 'A', value: '1' }] },
      ],
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.7',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      containerStatuses: [{ name: 'main', ready: true, restartCount: 2 }],
    },
  });
}

describe('[k8s_reflector: LIST pages as bytes] each LIST page is read from its bytes (fakes)', () => {
  it('[k8s_reflector: LIST pages as bytes] paged: every page read by the byte reader, same requests, counters and replace as the string path', async () => {
    const pages: ListResult[] = [
      { items: [richPod('a', '1'), richPod('b', '2')], resourceVersion: '10', continue: 't1' },
      { items: [richPod('c', '3')], resourceVersion: '10' },
    ];
    const bytes = openReflector({ listPageSize: 2 }, (c) => c.queueList(...pages), new BytesListClient());
    const strings = openReflector({ listPageSize: 2 }, (c) => c.queueList(...pages));
    await settle();
    expect(bytes.client.reads).toEqual(['read', 'read']);
    expect(bytes.client.lists.map((r) => [r.limit, r.continue])).toEqual(strings.client.lists.map((r) => [r.limit, r.continue]));
    expect(bytes.client.lists.map((r) => [r.limit, r.continue])).toEqual([
      [2, undefined],
      [2, 't1'],
    ]);
    const byBytes = replaceOf(bytes.stream.events);
    expect([...byBytes.keys()]).toEqual(['ns/a', 'ns/b', 'ns/c']);
    expect(byBytes).toEqual(replaceOf(strings.stream.events));
    expect(bytes.reflector.resourceVersion).toBe('10');
    expect(bytes.reflector.stats).toMatchObject({ lists: 1, listPages: 2, listRestarts: 0, invalidObjects: 0 });
    bytes.controller.abort();
    strings.controller.abort();
  });

  it('[k8s_reflector: LIST pages as bytes] a poison item is quarantined exactly as before (log, counter, health); a later valid item of its key lifts it; a keyless one is skipped and logged', async () => {
    const poisoned = pod('bad', '4', { status: { phase: 7 } });
    const keyless = { apiVersion: 'v1', kind: 'Pod', metadata: { resourceVersion: '6' }, status: { phase: 7 } };
    const pages: ListResult[] = [
      { items: [pod('a', '1'), poisoned, pod('lift', '5', { status: { phase: 7 } })], resourceVersion: '10', continue: 't1' },
      { items: [keyless, pod('lift', '5'), pod('c', '3')], resourceVersion: '10' },
    ];
    const bytes = openReflector({ listPageSize: 3 }, (c) => c.queueList(...pages), new BytesListClient());
    const strings = openReflector({ listPageSize: 3 }, (c) => c.queueList(...pages));
    await settle();
    expect(bytes.client.reads).toEqual(['read', 'read']);
    expect([...replaceOf(bytes.stream.events).keys()].sort()).toEqual(['ns/a', 'ns/c', 'ns/lift']);
    expect(replaceOf(bytes.stream.events)).toEqual(replaceOf(strings.stream.events));
    expect(bytes.reflector.health().quarantined).toEqual(strings.reflector.health().quarantined);
    expect(bytes.reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/bad']);
    expect(bytes.reflector.stats.invalidObjects).toBe(3);
    expect(bytes.reflector.stats.invalidObjects).toBe(strings.reflector.stats.invalidObjects);
    const errors = (logger: typeof bytes.logger) => logger.entries.filter((e) => e.level === 'error').map((e) => e.message);
    expect(errors(bytes.logger)).toEqual(errors(strings.logger));
    expect(errors(bytes.logger)).toEqual([
      'LIST item without a readable name failed the schema; skipped',
      'object failed the schema; quarantined (its last good version, if any, stays in the store)',
    ]);
    bytes.controller.abort();
    strings.controller.abort();
  });

  it('[k8s_reflector: LIST pages as bytes] a page the reader cannot prove (a duplicate member, null items) is read the exact way from the same bytes: no second request', async () => {
    const duplicate = `{"metadata":{"resourceVersion":"7"},"items":[${JSON.stringify(pod('a', '1'))}],"items":[${JSON.stringify(pod('b', '2'))}]}`;
    const { client, stream, reflector } = openReflector(
      { listPageSize: 0 },
      (c) => c.queueBody(duplicate),
      new BytesListClient(),
    );
    await settle();
    expect(client.reads).toEqual(['exact']);
    expect(client.lists).toHaveLength(1);
    // JSON.parse keeps the last duplicate: what the exact path has always read.
    expect([...replaceOf(stream.events).keys()]).toEqual(['ns/b']);
    expect(reflector.resourceVersion).toBe('7');
    const nulls = openReflector(
      { listPageSize: 0 },
      (c) => c.queueBody('{"metadata":{"resourceVersion":"8"},"items":null}'),
      new BytesListClient(),
    );
    await settle();
    expect(nulls.client.reads).toEqual(['exact']);
    expect(replaceOf(nulls.stream.events).size).toBe(0);
  });

  it("[k8s_reflector: LIST pages as bytes] a view of one's own (no byte reader) is read the exact way on every page, validated by its schema", async () => {
    const ownView = z.object({
      metadata: z.object({
        name: z.string(),
        namespace: z.string().optional(),
        uid: z.string().optional(),
        resourceVersion: z.string(),
      }),
      status: z.object({ phase: z.string() }),
    });
    type Own = z.infer<typeof ownView>;
    const client = new BytesListClient().queueList(
      { items: [pod('a', '1')], resourceVersion: '3', continue: 'k' },
      { items: [pod('b', '2', { status: { phase: 9 } })], resourceVersion: '3' },
    );
    const controller = new AbortController();
    const reflector = new Reflector<Own>({ client, schema: ownView, listPageSize: 1, random: () => 0 });
    const iterator = reflector.open(controller.signal)[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(client.reads).toEqual(['exact', 'exact']);
    expect(first.value?.type === 'replace' && [...first.value.objects.keys()]).toEqual(['ns/a']);
    expect(reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/b']);
    controller.abort();
    await iterator.return?.();
  });

  it('[k8s_reflector: LIST pages as bytes] an expired continue token (410) restarts as one unpaged LIST, read from its bytes; only its items are kept', async () => {
    const { client, reflector, stream } = openReflector(
      { listPageSize: 2 },
      (c) =>
        c.queueList(
          { items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' },
          apiError(410, { code: 410, reason: 'Expired', message: 'The provided continue parameter is too old' }),
          { items: [pod('a', '1'), pod('c', '12')], resourceVersion: '12' },
        ),
      new BytesListClient(),
    );
    await settle();
    expect(client.lists.map((r) => [r.limit, r.continue])).toEqual([
      [2, undefined],
      [2, 't1'],
      [undefined, undefined],
    ]);
    expect(client.reads).toEqual(['read', 'read']);
    expect([...replaceOf(stream.events).keys()]).toEqual(['ns/a', 'ns/c']);
    expect(reflector.resourceVersion).toBe('12');
    expect(reflector.stats).toMatchObject({ lists: 1, listRestarts: 1, listFailures: 0 });
  });

  it('[k8s_reflector: LIST pages as bytes] a page that never comes is cut at listTimeoutMs (counted, retried after the backoff); an abort while it hangs ends the stream', async () => {
    const { client, clock, reflector, stream } = openReflector(
      { listPageSize: 2, listTimeoutMs: 5_000 },
      (c) =>
        c.queueList({ items: [pod('a', '1'), pod('b', '2')], resourceVersion: '10', continue: 't1' }, 'hang', {
          items: [pod('z', '20')],
          resourceVersion: '20',
        }),
      new BytesListClient(),
    );
    await advance(clock, 4_999);
    expect(stream.events).toHaveLength(0);
    await advance(clock, 1);
    expect(reflector.stats).toMatchObject({ listFailures: 1, listTimeouts: 1 });
    expect(reflector.health().lastError).toBeInstanceOf(ListTimeoutError);
    await advance(clock, 1_000);
    expect([...replaceOf(stream.events).keys()]).toEqual(['ns/z']);

    const hung = openReflector({ listPageSize: 2 }, (c) => c.queueList('hang'), new BytesListClient());
    await settle();
    hung.controller.abort();
    await hung.stream.done;
    expect(hung.stream.events).toHaveLength(0);
    expect(hung.stream.error).toBeUndefined();
  });
});

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A `KubeApiClient` over a node:http server answering every LIST with `body`. */
async function servedBy(body: string): Promise<{ client: KubeApiClient; requests: string[] }> {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    client: new KubeApiClient(
      new KubeClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, rateLimit: false }),
      podResource,
    ),
    requests,
  };
}

describe('[k8s_reflector: LIST pages as bytes] KubeApiClient.listPage over HTTP', () => {
  it("[k8s_reflector: LIST pages as bytes] the reader's page when it reads one; otherwise the same bytes read by kube-client's exact path, its errors mapped as list maps them", async () => {
    const good = JSON.stringify({ metadata: { resourceVersion: '5', continue: 'next' }, items: [pod('a', '1')] });
    const served = await servedBy(good);
    const signal = AbortSignal.timeout(5_000);
    const read = await served.client.listPage({ signal, limit: 1 }, (body) => ({ length: body.byteLength }));
    expect(read).toEqual({ kind: 'read', page: { length: Buffer.byteLength(good) } });
    const exact = await served.client.listPage({ signal }, () => undefined);
    expect(exact).toEqual({ kind: 'exact', list: await served.client.list({ signal }) });
    expect(served.requests).toEqual(['/api/v1/pods?limit=1', '/api/v1/pods', '/api/v1/pods']);

    // An empty resourceVersion: the byte reader reads it, the reflector refuses it, the exact path rejects the page.
    const empty = await servedBy('{"metadata":{"resourceVersion":""},"items":[]}');
    const failure = await empty.client.listPage({ signal }, () => undefined).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(KubeProtocolError);
    expect(failure).toEqual(await empty.client.list({ signal }).catch((error: unknown) => error));
    const { reflector, controller } = (() => {
      const controller = new AbortController();
      const reflector = new Reflector<Pod>({
        client: empty.client,
        schema: podSchema,
        random: () => 0,
        retry: { initialMs: 60_000, maxMs: 60_000 },
      });
      void (async () => {
        for await (const _ of reflector.open(controller.signal));
      })();
      return { reflector, controller };
    })();
    await expect.poll(() => reflector.stats.listFailures).toBe(1);
    expect(reflector.health().lastError).toBeInstanceOf(KubeProtocolError);
    expect(empty.requests).toHaveLength(3);
    controller.abort();
  });
});

/** The string path over the same client: `list` only, as a client without `listPage`. */
function withoutListPage(client: ListWatchClient): ListWatchClient {
  return { list: (request) => client.list(request), watch: (request) => client.watch(request) };
}

describe('[k8s_reflector: LIST pages as bytes] over the embedded apiserver', () => {
  afterEach(runCleanups);

  it('[k8s_reflector: LIST pages as bytes] a paged LIST over real HTTP read through the bytes path builds the store the string path builds (same keys, deep equal)', async () => {
    const s = await server();
    for (let i = 0; i < 7; i++) {
      s.createPod({
        metadata: {
          name: `engine-${i}`,
          namespace: i % 2 ? 'pool-a' : 'pool-b',
          labels: { pool: 'engines', idx: String(i) },
          annotations: { note: `quote " backslash \\ café 😀 ${i}` },
        },
        spec: {
          containers: [
            {
              name: 'main',
              image: `img:${i}`,
              ports: [{ containerPort: 8000 + i, protocol: 'TCP' }],
              env: [{ name: 'I', value: String(i) }],
            },
          ],
        },
      });
    }
    s.kubelet.bind('pool-a', 'engine-1', 'node-1');
    const kubeClient = new KubeApiClient(kubeConfigFor(s), podResource);
    const reads: string[] = [];
    const counted: ListWatchClient = {
      list: (request) => kubeClient.list(request),
      listPage: async (request, read) => {
        const page = await kubeClient.listPage(request, read);
        reads.push(page.kind);
        return page;
      },
      watch: (request) => kubeClient.watch(request),
    };
    const options = { schema: podSchema, clock: fastClock, random: () => 0, listPageSize: 3, labelSelector: 'pool' } as const;
    const bytes = tapOf<Pod>(new Reflector<Pod>({ ...options, client: counted }));
    const strings = tapOf<Pod>(new Reflector<Pod>({ ...options, client: withoutListPage(kubeClient) }));
    const [byBytes, byStrings] = [
      await bytes.tap.next('the bytes path listing'),
      await strings.tap.next('the string path listing'),
    ];
    expect(reads).toEqual(['read', 'read', 'read']);
    if (byBytes.type !== 'replace' || byStrings.type !== 'replace') throw new Error('expected two replaces');
    expect([...byBytes.objects.keys()].sort()).toEqual([
      'pool-a/engine-1',
      'pool-a/engine-3',
      'pool-a/engine-5',
      'pool-b/engine-0',
      'pool-b/engine-2',
      'pool-b/engine-4',
      'pool-b/engine-6',
    ]);
    expect([...byBytes.objects.keys()].sort()).toEqual([...byStrings.objects.keys()].sort());
    expect(new Map([...byBytes.objects].sort())).toEqual(new Map([...byStrings.objects].sort()));
    expect(byBytes.objects.get('pool-a/engine-1')?.spec.nodeName).toBe('node-1');
    await expectStoreEqualsFreshList(bytes.tap, s, podResource, { labelSelector: 'pool' });
  });
});
