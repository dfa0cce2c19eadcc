import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import {
  KubeClient,
  type KubeConfigAuth,
  type Transport,
  type TransportResponse,
  KubeApiError,
  KubeProtocolError,
  WatchFrameTooLargeError,
  isKubeApiError,
  DEFAULT_MAX_FRAME_BYTES,
} from '@reconcile-loop/kube-client';
import { collectionPath, splitLines } from '@reconcile-loop/kube-client/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { KubeApiClient, kubeReflector, KubeClientConfigError, podReflector, Reflector, watchVerdict } from '../src/index.js';
import { advance, bookmark, consume, line, pod } from './helpers.js';

const TOKEN = 'sup3r-s3cret-t0ken';

// Compile-time proof that client-node's KubeConfig satisfies the structural interface.
const _assignable: KubeConfigAuth = new KubeConfig();
void _assignable;

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void | Promise<void>;

const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function serve(handler: Handler): Promise<{ base: string; requests: { url: URL; headers: http.IncomingHttpHeaders }[] }> {
  const requests: { url: URL; headers: http.IncomingHttpHeaders }[] = [];
  const server = http.createServer((request, response) => {
    requests.push({ url: new URL(request.url ?? '/', 'http://x'), headers: request.headers });
    void handler(request, response);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** A KubeConfig loaded from a string, the way a user's kubeconfig file is. */
function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(`
apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: ${server}
      insecure-skip-tls-verify: true
users:
  - name: tester
    user:
      token: ${TOKEN}
contexts:
  - name: test
    context:
      cluster: test
      user: tester
current-context: test
`);
  return kc;
}

function json(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

async function* chunks(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part;
}

describe('the client-node boundary', () => {
  it('[k8s_api: the only module importing the client] deviation: no module imports @kubernetes/client-node at runtime, only its KubeConfig type shape', () => {
    const dir = fileURLToPath(new URL('../src/', import.meta.url));
    const runtimeImport = /^\s*import\s+(?!type\b)[^;]*from\s+['"]@kubernetes\/client-node['"]/m;
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(3);
    for (const file of files) expect(readFileSync(`${dir}${file}`, 'utf8')).not.toMatch(runtimeImport);
    expect(runtimeImport.test("import { KubeConfig } from '@kubernetes/client-node';")).toBe(true); // the check itself can fire
  });
});

describe("kube-client's collectionPath (what the reflector requests)", () => {
  it('[k8s_api: deviation, generic resource path] core and group paths, namespaced and across namespaces', () => {
    expect(collectionPath(podResource, 'pool-a')).toBe('/api/v1/namespaces/pool-a/pods');
    expect(collectionPath(podResource)).toBe('/api/v1/pods');
    const cells = { group: 'miles.io', version: 'v1alpha1', plural: 'trainercells' };
    expect(collectionPath(cells, 'pool-a')).toBe('/apis/miles.io/v1alpha1/namespaces/pool-a/trainercells');
    expect(collectionPath(cells)).toBe('/apis/miles.io/v1alpha1/trainercells');
  });
});

describe("kube-client's splitLines (what the reflector reads a watch with)", () => {
  it('[k8s_api: LIST/WATCH calls] joins a frame split across chunks, splits several frames in one chunk, drops blank lines', async () => {
    const a = line('ADDED', pod('a', '1'));
    const b = line('ADDED', pod('b', '2'));
    expect(
      await collect(
        splitLines(chunks(a.slice(0, 10), a.slice(10, 30), `${a.slice(30)}\n${b}\n`, '\n', '\r\n'), DEFAULT_MAX_FRAME_BYTES),
      ),
    ).toEqual([a, b]);
  });

  it('[k8s_reflector: Frame size cap] a line with no newline is refused once it passes the cap, long before it is buffered whole', async () => {
    let pulled = 0;
    async function* endless(): AsyncGenerator<string> {
      const megabyte = 'x'.repeat(1024 * 1024);
      yield '{"type":"ADDED","object":';
      for (let i = 0; i < 50; i++) {
        pulled++;
        yield megabyte; // a 50 MB frame with no newline
      }
      yield '}\n';
    }
    const error = await collect(splitLines(endless(), 4 * 1024 * 1024)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WatchFrameTooLargeError);
    expect(error).toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE', maxFrameBytes: 4 * 1024 * 1024 });
    expect(pulled).toBe(4); // refused at the chunk that crossed 4 MB: nothing past it was read
    // A line split across chunks is measured whole; one exactly at the cap passes.
    expect(await collect(splitLines(chunks('ab', 'cd\n', 'efg'.padEnd(5, '-'), '\n'), 5))).toEqual(['abcd', 'efg--']);
    await expect(collect(splitLines(chunks('abc', 'def\n'), 5))).rejects.toBeInstanceOf(WatchFrameTooLargeError);
    await expect(collect(splitLines(chunks('abcdef\n'), 5))).rejects.toBeInstanceOf(WatchFrameTooLargeError);
  });

  it("[k8s_reflector: Frame size cap] the cap counts bytes of the UTF-8 line (kube-client's splitter), and its error is kube-client's", async () => {
    expect(await collect(splitLines(chunks('éa\n'), 3))).toEqual(['éa']); // 2 characters, 3 bytes
    const error = await collect(splitLines(chunks('éé\n'), 3)).catch((e: unknown) => e); // 2 characters, 4 bytes
    expect(error).toBeInstanceOf(WatchFrameTooLargeError);
    expect(error).toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE', maxFrameBytes: 3 });
  });

  it('[k8s_api: LIST/WATCH calls] a body that ends mid-frame is a protocol error, not a frame', async () => {
    await expect(collect(splitLines(chunks(`${bookmark('1')}\n{"type":"ADD`), DEFAULT_MAX_FRAME_BYTES))).rejects.toBeInstanceOf(
      KubeProtocolError,
    );
  });
});

describe('KubeApiClient over HTTP', () => {
  it("[k8s_reflector: LIST pagination] one LIST (one page) reads the raw JSON body (strings, not Dates) from the scoped path, with no cursor; limit and continue are sent only when asked, and a page's continue comes back", async () => {
    const { base, requests } = await serve((_, response) =>
      json(response, 200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '42', continue: 'next-page' },
        items: [
          pod('a', '40', {
            metadata: { name: 'a', namespace: 'ns', resourceVersion: '40', creationTimestamp: '2024-05-01T10:11:12Z' },
          }),
        ],
      }),
    );
    const client = new KubeApiClient(kubeConfig(`${base}/k8s/clusters/c-1/`), podResource);
    const result = await client.list({
      namespace: 'ns',
      labelSelector: 'app=engine',
      fieldSelector: 'status.phase!=Failed',
      signal: new AbortController().signal,
    });
    expect(result.resourceVersion).toBe('42');
    expect((result.items[0] as { metadata: { creationTimestamp: unknown } }).metadata.creationTimestamp).toBe(
      '2024-05-01T10:11:12Z',
    );
    const { url, headers } = requests[0]!;
    expect(url.pathname).toBe('/k8s/clusters/c-1/api/v1/namespaces/ns/pods');
    expect(Object.fromEntries(url.searchParams)).toEqual({ labelSelector: 'app=engine', fieldSelector: 'status.phase!=Failed' });
    expect(headers.accept).toBe('application/json');
    expect(result.continue).toBe('next-page');
    await client.list({ namespace: 'ns', limit: 500, continue: 'next-page', signal: new AbortController().signal });
    expect(Object.fromEntries(requests[1]!.url.searchParams)).toEqual({ limit: '500', continue: 'next-page' });
  });

  it('[k8s_api: deviation, auth from the KubeConfig] a token from a KubeConfig loaded from a string reaches the server as a Bearer header', async () => {
    const { base, requests } = await serve((_, response) =>
      json(response, 200, { metadata: { resourceVersion: '1' }, items: null }),
    );
    const result = await new KubeApiClient(kubeConfig(base), podResource).list({ signal: new AbortController().signal });
    expect(result.items).toEqual([]);
    expect(requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(requests[0]?.url.pathname).toBe('/api/v1/pods');
  });

  it('[k8s_api: LIST/WATCH calls] WATCH streams one line per frame, with a frame and a UTF-8 character split across chunks', async () => {
    const first = line(
      'ADDED',
      pod('a', '11', { metadata: { name: 'a', namespace: 'ns', resourceVersion: '11', annotations: { note: 'café' } } }),
    );
    const second = bookmark('12');
    const firstBytes = Buffer.from(`${first}\n`, 'utf8');
    const split = firstBytes.indexOf(Buffer.from('é', 'utf8')) + 1; // between the two bytes of é
    const { base, requests } = await serve(async (_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(firstBytes.subarray(0, split));
      for (let i = 0; i < 20; i++) await tick(); // let the first part reach the client as its own chunk
      response.write(firstBytes.subarray(split));
      response.write(`${second}\n`);
      response.end();
    });
    const client = new KubeApiClient(kubeConfig(base), podResource);
    const lines = await collect(
      client.watch({
        namespace: 'ns',
        resourceVersion: '10',
        timeoutSeconds: 312,
        allowWatchBookmarks: true,
        signal: new AbortController().signal,
      }),
    );
    expect(lines).toEqual([first, second]);
    expect(JSON.parse(lines[0]!).object.metadata.annotations.note).toBe('café');
    const { url, headers } = requests[0]!;
    expect(url.pathname).toBe('/api/v1/namespaces/ns/pods');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      watch: 'true',
      resourceVersion: '10',
      timeoutSeconds: '312',
      allowWatchBookmarks: 'true',
    });
    expect(headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("[k8s_reflector: ApiException shape] a 410 response is kube-client's KubeApiError with the numeric status and the Status body", async () => {
    const { base } = await serve((_, response) =>
      json(response, 410, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'too old resource version: 1 (50)',
        reason: 'Expired',
        code: 410,
      }),
    );
    const client = new KubeApiClient(kubeConfig(base), podResource);
    const error = await collect(
      client.watch({
        resourceVersion: '1',
        timeoutSeconds: 300,
        allowWatchBookmarks: true,
        signal: new AbortController().signal,
      }),
    ).catch((e: unknown) => e);
    expect(isKubeApiError(error)).toBe(true);
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error).toMatchObject({
      statusCode: 410,
      status: { code: 410, reason: 'Expired', message: 'too old resource version: 1 (50)' },
    });
  });

  it('[k8s_reflector: deviation, prompt stop] aborting a request that is still waiting for the server rejects at once', async () => {
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const { base } = await serve(() => arrived()); // never answers
    const controller = new AbortController();
    const pending = new KubeApiClient(kubeConfig(base), podResource).list({ signal: controller.signal });
    await reached;
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('[k8s_reflector: Permanent vs transient failures] a failure carries the request (verb, URL without credentials) and the Retry-After header', async () => {
    const { base } = await serve((_, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      response.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' }));
    });
    const withUser = base.replace('http://', 'http://someone:pa55word@');
    const error = await new KubeApiClient(kubeConfig(withUser), podResource)
      .list({ namespace: 'ns', labelSelector: 'a=b', signal: new AbortController().signal })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'RL_KUBE_API_ERROR',
      statusCode: 429,
      retryAfterSeconds: 7,
      verb: 'list',
      path: '/api/v1/namespaces/ns/pods?labelSelector=a%3Db',
    });
    expect(inspect(error, { depth: 5 })).not.toContain('pa55word');
    expect((error as Error).message).toContain('list /api/v1/namespaces/ns/pods');
  });

  it('[k8s_reflector: Permanent vs transient failures] a KubeConfig that cannot address a server is a permanent KubeClientConfigError, for LIST and WATCH', async () => {
    const noCluster: KubeConfigAuth = { getCurrentCluster: () => null, applyToHTTPSOptions: async () => {} };
    const ftp: KubeConfigAuth = { getCurrentCluster: () => ({ server: 'ftp://example' }), applyToHTTPSOptions: async () => {} };
    const garbage: KubeConfigAuth = { getCurrentCluster: () => ({ server: 'not a url' }), applyToHTTPSOptions: async () => {} };
    for (const config of [noCluster, ftp, garbage]) {
      const client = new KubeApiClient(config, podResource);
      const listed = await client.list({ signal: new AbortController().signal }).catch((e: unknown) => e);
      expect(listed).toBeInstanceOf(KubeClientConfigError);
      expect(listed).toMatchObject({ code: 'RL_REFLECTOR_CLIENT_CONFIG', permanent: true });
      expect(() =>
        client.watch({
          resourceVersion: '1',
          timeoutSeconds: 1,
          allowWatchBookmarks: true,
          signal: new AbortController().signal,
        }),
      ).toThrow(KubeClientConfigError);
    }
    expect(() => new KubeApiClient(noCluster, podResource, { maxFrameBytes: 0 })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
  });

  it('[k8s_api: LIST/WATCH calls] a LIST body without a cursor is a protocol error', async () => {
    const { base } = await serve((_, response) => json(response, 200, { items: [] }));
    await expect(
      new KubeApiClient(kubeConfig(base), podResource).list({ signal: new AbortController().signal }),
    ).rejects.toBeInstanceOf(KubeProtocolError);
  });
});

/** A response from a fake transport: `status`, JSON `body`, optional headers. */
function answer(status: number, body: string, headers: Record<string, string> = {}): TransportResponse {
  return {
    status,
    header: (name) => headers[name.toLowerCase()],
    body: (async function* () {
      yield body;
    })(),
    close: () => {},
  };
}

describe('KubeApiClient over a shared KubeClient', () => {
  it("[k8s_api: reflector on kube-client] the LIST is governed by the reflector (listTimeoutMs), not by the KubeClient's requestTimeoutMs", async () => {
    const clock = new ManualClock();
    let respond!: (response: TransportResponse) => void;
    const requests: URL[] = [];
    const transport: Transport = (request) => {
      requests.push(request.url);
      return new Promise((resolve, reject) => {
        respond = resolve;
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }); // a transport honours its signal
      });
    };
    const shared = new KubeClient({ server: 'http://127.0.0.1:1', transport, clock, requestTimeoutMs: 50 });
    const client = new KubeApiClient(shared, podResource);
    expect(client.kubeClient).toBe(shared);
    const pending = client.list({ namespace: 'ns', signal: new AbortController().signal });
    await settle(5);
    await advance(clock, 1_000); // far past the client's 50 ms deadline
    respond(answer(200, JSON.stringify({ metadata: { resourceVersion: '7' }, items: [pod('a', '7'), { kind: 'Pod' }] })));
    const listing = await pending;
    expect(listing.resourceVersion).toBe('7');
    expect(listing.items).toHaveLength(2); // a poison item comes back raw, for the reflector's quarantine, instead of failing the LIST
    expect(requests[0]?.pathname).toBe('/api/v1/namespaces/ns/pods');
  });

  it("[k8s_api: reflector on kube-client] errors pass through: a 504 ResourceVersionTooLarge is kube-client's KubeApiError (with its Status) and relists", async () => {
    const body = {
      kind: 'Status',
      code: 504,
      reason: 'Timeout',
      message: 'Too large resource version',
      details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
    };
    const transport: Transport = async () => answer(504, JSON.stringify(body));
    const client = new KubeApiClient(
      new KubeClient({ server: 'http://user:pw@127.0.0.1:1', transport, maxRetries: 0 }),
      podResource,
    );
    const error = await collect(
      client.watch({
        namespace: 'ns',
        resourceVersion: '99',
        timeoutSeconds: 300,
        allowWatchBookmarks: true,
        signal: new AbortController().signal,
      }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error).toMatchObject({
      code: 'RL_KUBE_API_ERROR',
      statusCode: 504,
      retryAfterSeconds: 1,
      status: { code: 504, details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } },
      verb: 'watch',
    });
    expect((error as KubeApiError).path.startsWith('/api/v1/namespaces/ns/pods?watch=true')).toBe(true);
    expect(inspect(error, { depth: 5 })).not.toContain(':pw@');
    expect(watchVerdict((error as KubeApiError).status, (error as KubeApiError).statusCode)).toBe('relist-too-large');
  });

  it('[k8s_reflector: Frame size cap] maxFrameBytes is sent with every WATCH, so it holds over a shared KubeClient with a larger cap', async () => {
    const transport: Transport = async () => answer(200, `${'x'.repeat(64)}\n`);
    const client = new KubeApiClient(new KubeClient({ server: 'http://127.0.0.1:1', transport }), podResource, {
      maxFrameBytes: 32,
    });
    const error = await collect(
      client.watch({
        resourceVersion: '1',
        timeoutSeconds: 300,
        allowWatchBookmarks: true,
        signal: new AbortController().signal,
      }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WatchFrameTooLargeError);
    expect(error).toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE', maxFrameBytes: 32 });
  });

  it('[k8s_api: reflector on kube-client] kubeReflector takes a KubeConfig or a KubeClient, exactly one', () => {
    const shared = new KubeClient({ server: 'http://127.0.0.1:1' });
    expect(kubeReflector({ kubeClient: shared, resource: podResource, schema: podSchema }).name).toBe('reflector');
    expect(() => kubeReflector({ resource: podResource, schema: podSchema })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() =>
      kubeReflector({
        kubeClient: shared,
        kubeConfig: kubeConfig('http://127.0.0.1:1'),
        resource: podResource,
        schema: podSchema,
      }),
    ).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
  });
});

describe('Reflector over KubeApiClient', () => {
  it('[k8s_reflector: Reflector] lists, watches and relists on a 410 against a real HTTP server', async () => {
    let lists = 0;
    let watches = 0;
    const { base, requests } = await serve((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      if (url.searchParams.get('watch') !== 'true') {
        lists++;
        return json(response, 200, {
          metadata: { resourceVersion: lists === 1 ? '10' : '30' },
          items: lists === 1 ? [pod('a', '10')] : [pod('b', '30')],
        });
      }
      watches++;
      if (watches === 1) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(`${line('ADDED', pod('c', '11'))}\n${line('ERROR', { kind: 'Status', code: 410, reason: 'Expired' })}\n`);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }); // stays open
      response.flushHeaders();
    });
    const clock = new ManualClock();
    const controller = new AbortController();
    const reflector = podReflector({ kubeConfig: kubeConfig(base), namespace: 'ns', clock, random: () => 0 });
    const stream = consume(reflector.open(controller.signal));
    await settle(50);
    expect(stream.events.map((e) => (e.type === 'replace' ? [...e.objects.keys()] : e.type !== 'release' && e.key))).toEqual([
      ['ns/a'],
      'ns/c',
    ]);
    await advance(clock, 1_000); // backoff before the relist
    await settle(50);
    expect(stream.events.map((e) => (e.type === 'replace' ? [...e.objects.keys()] : e.type !== 'release' && e.key))).toEqual([
      ['ns/a'],
      'ns/c',
      ['ns/b'],
    ]);
    expect(reflector.stats).toMatchObject({ lists: 2, relists: 1, watches: 2 });
    expect(
      requests.filter((r) => r.url.searchParams.get('watch') === 'true').map((r) => r.url.searchParams.get('resourceVersion')),
    ).toEqual(['10', '30']);
    controller.abort();
    await stream.done;
    expect(stream.error).toBeUndefined();
  });

  it('[k8s_api: deviation, no credentials in logs] failures are logged without the token', async () => {
    const { base } = await serve((_, response) =>
      json(response, 401, { kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' }),
    );
    const logger = recordingLogger();
    const clock = new ManualClock();
    const controller = new AbortController();
    const reflector = new Reflector<Pod>({
      client: new KubeApiClient(kubeConfig(base), podResource),
      schema: podSchema,
      clock,
      logger,
    });
    const stream = consume(reflector.open(controller.signal));
    await settle(30);
    await advance(clock, 1_000);
    await settle(30);
    controller.abort();
    await stream.done;
    expect(reflector.stats.listFailures).toBeGreaterThanOrEqual(2);
    const logged = inspect(logger.entries, { depth: 10, showHidden: true });
    expect(logged).toContain('Unauthorized');
    expect(logged).not.toContain(TOKEN);
  });
});
