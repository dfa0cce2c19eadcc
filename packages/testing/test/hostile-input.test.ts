import { request, type IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiServerStatusError, startApiServer, type ApiServer } from '../src/index.js';
import { PODS, WIDGET, call, isUpstream500, podBody } from './helpers.js';

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';
const PROTO_KEYS = ['polluted', 'x', 'kind', 'isAdmin', 'toString'];

/** Nothing a request did reached Object.prototype (or Array.prototype) of this process. */
function expectPrototypesClean(): void {
  const probe: Record<string, unknown> = {};
  for (const k of PROTO_KEYS.slice(0, 4)) {
    expect(probe[k]).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, k)).toBe(false);
    expect(Object.hasOwn(Array.prototype, k)).toBe(false);
  }
  expect(typeof ({} as { toString: unknown }).toString).toBe('function');
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PRISTINE_OBJECT_PROTO);
}
const PRISTINE_OBJECT_PROTO = Object.getOwnPropertyNames(Object.prototype).sort();

/** `{"a":{"a":…"leaf"…}}`, `depth` objects deep, as text (no recursion on this side either). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}"leaf"${'}'.repeat(depth)}`;
}

let server: ApiServer;
beforeAll(async () => {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 5 });
  server.registerResource(WIDGET);
});
afterAll(async () => {
  await server.close();
});
afterEach(() => {
  expectPrototypesClean();
});

describe('prototype keys in user JSON are data', () => {
  it('[testing: hostile proto] JSON patch on /__proto__/…, /constructor/prototype/… never touches Object.prototype; later DELETEs still work', async () => {
    server.createPod({ metadata: { name: 'target', namespace: 'default' } });
    server.createPod({ metadata: { name: 'bystander', namespace: 'default' } });
    const before = server.revision;
    for (const path of [
      '/__proto__/polluted',
      '/metadata/__proto__/polluted',
      '/constructor/prototype/polluted',
      '/spec/__proto__/isAdmin',
      '/metadata/labels/__proto__',
    ]) {
      for (const op of ['add', 'replace']) {
        const a = await call(server, 'PATCH', `${PODS}/target`, {
          body: [{ op, path, value: { polluted: 'yes' } }],
          contentType: 'application/json-patch+json',
        });
        expect(a.status, `${op} ${path}`).toBeGreaterThanOrEqual(400);
        expect(a.status, `${op} ${path}`).toBeLessThan(500);
      }
    }
    for (const from of ['/__proto__', '/constructor']) {
      const a = await call(server, 'PATCH', `${PODS}/target`, {
        body: [{ op: 'copy', from, path: '/metadata/annotations' }],
        contentType: 'application/json-patch+json',
      });
      expect(a.status).toBe(422);
    }
    expect(server.revision).toBe(before);
    expectPrototypesClean();
    // The issue's symptom: after pollution every DELETE answered 409 (a phantom precondition).
    expect((await call(server, 'DELETE', `${PODS}/bystander`)).status).toBe(200);
    expect((await call(server, 'DELETE', `${PODS}/target`)).status).toBe(200);
  });

  it('[testing: hostile proto] merge and strategic patches with __proto__/constructor keys store them as plain members', async () => {
    await call(server, 'POST', WIDGETS, {
      body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w-proto' }, spec: { size: 1 } },
    });
    const raw = '{"spec":{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"size":2}}';
    const a = await call(server, 'PATCH', `${WIDGETS}/w-proto`, { body: raw, contentType: 'application/merge-patch+json' });
    expect(a.status).toBe(200);
    expect(a.text).toContain('"__proto__":{"polluted":"yes"}');
    const stored = server.getObject({ group: 'example.com', plural: 'widgets' }, 'default', 'w-proto')!;
    const spec = stored['spec'] as Record<string, unknown>;
    expect(Object.getPrototypeOf(spec)).toBe(Object.prototype);
    expect(Object.hasOwn(spec, '__proto__')).toBe(true);
    expect(spec['size']).toBe(2);
    server.createPod({ metadata: { name: 'smp', namespace: 'default' } });
    const s = await call(server, 'PATCH', `${PODS}/smp`, {
      body: '{"metadata":{"annotations":{"__proto__":"x"}},"__proto__":{"polluted":"yes"}}',
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(s.status).toBe(200);
    expect(s.json.metadata.annotations).toEqual(JSON.parse('{"__proto__":"x"}'));
  });

  it('[testing: hostile proto] create bodies with prototype keys at every level are data; labels named __proto__ are invalid keys', async () => {
    const body = `{"apiVersion":"example.com/v1","kind":"Widget","__proto__":{"polluted":"yes"},"metadata":{"name":"w-create","__proto__":{"polluted":"yes"},"annotations":{"constructor":"c"}},"spec":{"prototype":{"polluted":"yes"}}}`;
    const a = await call(server, 'POST', WIDGETS, { body });
    expect(a.status).toBe(201);
    expect(a.json.metadata.annotations).toEqual({ constructor: 'c' });
    const bad = await call(server, 'POST', PODS, {
      body: '{"metadata":{"name":"lbl","labels":{"__proto__":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}}',
    });
    expect(bad.status).toBe(422);
    expect(bad.json.details.causes[0].field).toBe('metadata.labels');
  });

  it('[testing: hostile proto] a labelSelector on constructor/toString matches only objects that carry that label', async () => {
    const list = await call(server, 'GET', `${PODS}?labelSelector=constructor`);
    expect(list.status).toBe(200);
    expect(list.json.items).toEqual([]);
    expect((await call(server, 'GET', `${PODS}?labelSelector=toString%3Dx`)).json.items).toEqual([]);
  });
});

describe('names and namespaces are validated as the real server does', () => {
  it('[testing: hostile names] a namespace with a space or uppercase is refused on create, by HTTP and by the typed API', async () => {
    for (const ns of ['a%20b', 'UPPER', 'under_score', 'dot.ted']) {
      const before = server.revision;
      const a = await call(server, 'POST', `/api/v1/namespaces/${ns}/pods`, { body: podBody('p') });
      expect(a.status, ns).toBeGreaterThanOrEqual(400);
      expect(a.status, ns).toBeLessThan(500);
      expect(server.revision).toBe(before);
    }
    let err: unknown;
    try {
      server.createPod({ metadata: { name: 'p', namespace: 'a b' } });
    } catch (e) {
      err = e;
    }
    expect(err instanceof ApiServerStatusError).toBe(true);
  });

  it('[testing: hostile names] default%2Fevil is two path segments: never a namespace that prefix-matches default', async () => {
    const before = server.revision;
    const a = await call(server, 'POST', '/api/v1/namespaces/default%2Fevil/pods', { body: podBody('evil') });
    expect(a.status).toBe(404);
    expect(server.revision).toBe(before);
    const list = await call(server, 'GET', PODS);
    expect(list.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).not.toContain('evil');
    expect((await call(server, 'GET', '/api/v1/namespaces/default%2Fevil/pods')).status).toBe(404);
  });

  it('[testing: hostile names] object names: pods and custom resources are DNS-1123 subdomains', async () => {
    for (const name of ['Bad_Name', 'a b', '-lead', 'x'.repeat(254)]) {
      const p = await call(server, 'POST', PODS, { body: podBody(name) });
      expect(p.status, name).toBe(422);
      const w = await call(server, 'POST', WIDGETS, {
        body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name } },
      });
      expect(w.status, name).toBe(422);
      expect(w.json.details.causes[0].field).toBe('metadata.name');
    }
  });
});

describe('deeply nested bodies', () => {
  it('[testing: hostile depth] a 5,000-deep body is 400 on create, update and every patch type, and the server keeps serving', async () => {
    server.createPod({ metadata: { name: 'deep', namespace: 'default' } });
    const before = server.revision;
    const deep = nested(5_000);
    const pod = (name: string): string => JSON.stringify(podBody(name)).replace(/}$/, `,"extra":${deep}}`);
    const cases: Array<[string, string, string, string]> = [
      ['POST', PODS, pod('deep2'), 'application/json'],
      [
        'POST',
        WIDGETS,
        `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"deep"},"spec":${deep}}`,
        'application/json',
      ],
      ['PUT', `${PODS}/deep`, pod('deep'), 'application/json'],
      ['PATCH', `${PODS}/deep`, `{"metadata":{"annotations":${deep}}}`, 'application/merge-patch+json'],
      ['PATCH', `${PODS}/deep`, `{"metadata":{"annotations":${deep}}}`, 'application/strategic-merge-patch+json'],
      ['PATCH', `${PODS}/deep`, `[{"op":"add","path":"/metadata/annotations","value":${deep}}]`, 'application/json-patch+json'],
      ['DELETE', `${PODS}/deep`, `{"preconditions":${deep}}`, 'application/json'],
    ];
    for (const [method, path, body, contentType] of cases) {
      const a = await call(server, method, path, { body, contentType });
      expect(a.status, `${method} ${path} ${contentType}`).toBe(400);
      expect(a.json.message).toContain('exceeded max depth');
    }
    expect(server.revision).toBe(before);
    // Just under the bound is accepted and round-trips.
    const ok = await call(server, 'POST', WIDGETS, {
      body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"deep-ok"},"spec":${nested(990)}}`,
    });
    expect(ok.status).toBe(201);
    expect((await call(server, 'GET', `${WIDGETS}/deep-ok`)).status).toBe(200);
  });
});

describe('a watcher that never reads', () => {
  it('[testing: hostile slow watcher] is closed once its buffer passes the bound, like the cacher: what was sent, then EOF, no ERROR frame', async () => {
    await using s = await startApiServer({ maxWatchBufferBytes: 256 * 1024 });
    s.createPod({ metadata: { name: 'big', namespace: 'default' } });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${s.url}${PODS}?watch=true&resourceVersion=${s.revision}`, (r) => resolve(r));
      req.on('error', reject);
      req.end();
    });
    res.pause(); // never reads: bytes pile up in the kernel, then in the server's buffer
    await s.waitForWatches(1);
    const blob = 'x'.repeat(40 * 1024);
    for (let i = 0; i < 2_000 && s.terminatedWatchCount === 0; i++) {
      s.updatePod('default', 'big', (p) => {
        p.metadata.annotations = { blob: `${i}-${blob}` };
      });
      if (i % 50 === 49) await new Promise((r) => setImmediate(r));
    }
    expect(s.terminatedWatchCount).toBe(1);
    expect(s.openWatchCount).toBe(0);
    // The client drains what was sent, then reads a clean EOF: no ERROR frame, as from the cacher.
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      text += c;
    });
    await new Promise<void>((resolve, reject) => {
      res.on('end', resolve);
      res.on('error', reject);
      res.resume();
    });
    const frames = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((f) => f.type === 'MODIFIED')).toBe(true);
    // Writes go on, and a new watch is served.
    s.updatePod('default', 'big', (p) => {
      p.metadata.annotations = {};
    });
    expect((await call(s, 'GET', `${PODS}/big`)).status).toBe(200);
  }, 30_000);
});

describe('random requests (property)', () => {
  it('[testing: hostile fuzz] never a 500, never a crash, and a refused request changes nothing', async () => {
    await using s = await startApiServer({ tooLargeResourceVersionWaitMs: 5 });
    s.registerResource(WIDGET);
    s.seedPods(3, { labels: { app: 'a' } });
    s.kubelet.bind('default', 'pod-1', 'node-a');
    const name = fc.constantFrom('pod-0', 'pod-1', 'pod-2', 'w-0', 'new', '__proto__', 'constructor', 'Bad_Name', 'a%20b');
    const ns = fc.constantFrom('default', 'other', 'a%20b', 'default%2Fevil', '__proto__', 'kube-system');
    const path = fc.oneof(
      fc.tuple(ns, name).map(([n, x]) => `/api/v1/namespaces/${n}/pods/${x}`),
      fc.tuple(ns, name).map(([n, x]) => `/api/v1/namespaces/${n}/pods/${x}/status`),
      ns.map((n) => `/api/v1/namespaces/${n}/pods`),
      fc.tuple(ns, name).map(([n, x]) => `/apis/example.com/v1/namespaces/${n}/widgets/${x}`),
      ns.map((n) => `/apis/example.com/v1/namespaces/${n}/widgets`),
      fc.constant('/api/v1/pods'),
    );
    const selector = fc.oneof(
      fc.constantFrom('app=a', 'app!=a', 'app in (a,b)', 'constructor', '!__proto__', 'a in (', '=', 'x>1', 'toString=x'),
      fc.string({ maxLength: 10 }),
    );
    const query = fc.record(
      {
        labelSelector: selector,
        fieldSelector: fc.constantFrom(
          'metadata.name=pod-0',
          'spec.nodeName=node-a',
          'status.phase!=Running',
          'bogus=1',
          '__proto__=x',
        ),
        resourceVersion: fc.constantFrom('', '0', '1', '99999999', 'abc', '-1'),
        limit: fc.constantFrom('1', '0', '-1', 'x'),
        gracePeriodSeconds: fc.constantFrom('0', '5', '-1', 'x'),
        dryRun: fc.constantFrom('All', 'x'),
        shardSelector: fc.oneof(
          fc.constantFrom(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
            "shardRange(object.metadata.uid, '0x0', '0x1')",
            'shardRange(__proto__.constructor, 1, 2)',
            "shardRange(object.metadata.uid, '\\u0000', '\\xff') || !x",
            `${'('.repeat(400)}x${')'.repeat(400)}`,
            '',
            '   ',
          ),
          fc.string({ maxLength: 16 }),
        ),
      },
      { requiredKeys: [] },
    );
    const jsonPath = fc.constantFrom(
      '/metadata/labels/x',
      '/__proto__/polluted',
      '/constructor/prototype/x',
      '/spec/containers/0/image',
      '/metadata/name',
      '/status',
      '/metadata/finalizers',
      '/-',
      '',
    );
    const patchOp = fc.record(
      {
        op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus'),
        path: jsonPath,
        from: jsonPath,
        value: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: ['op', 'path'] },
    );
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.array(patchOp, { maxLength: 3 }).map((v) => JSON.stringify(v)),
      fc.constant(JSON.stringify(podBody('new', { app: 'a' }))),
      fc.constant('{"__proto__":{"polluted":"yes"},"metadata":{"labels":{"constructor":"x"}}}'),
      fc.constant('{"metadata":{"finalizers":["a/b"]}}'),
      fc.constant('{"spec":{"containers":[{"name":"main","$patch":"delete"}]}}'),
      fc.constant(JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w-0' }, spec: { n: 1 } })),
      fc.constant(nested(2_000)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
        path,
        query,
        fc.constantFrom(
          'application/json',
          'application/merge-patch+json',
          'application/json-patch+json',
          'application/strategic-merge-patch+json',
          'application/apply-patch+yaml',
          'text/plain',
        ),
        body,
        async (method, p, q, contentType, b) => {
          const params = new URLSearchParams(Object.entries(q) as Array<[string, string]>);
          const before = s.revision;
          const init: RequestInit = { method, headers: { 'Content-Type': contentType } };
          if (b !== undefined && method !== 'GET') init.body = b;
          const res = await fetch(`${s.url}${p}${params.size > 0 ? `?${params.toString()}` : ''}`, init);
          const text = await res.text();
          // 504 is the legitimate answer to a future resourceVersion; nothing else may be a 5xx.
          if (res.status !== 504 && !isUpstream500(res.status, text))
            expect(res.status, `${method} ${p} ${text}`).toBeLessThan(500);
          if (res.status >= 400) {
            expect(JSON.parse(text)).toMatchObject({ kind: 'Status', code: res.status });
            expect(s.revision, `${method} ${p} answered ${res.status} but wrote`).toBe(before);
          }
          expectPrototypesClean();
        },
      ),
      { numRuns: 400 },
    );
    expect((await call(s, 'GET', '/version')).status).toBe(200);
    const counts = s.requestCounts();
    for (const verb of ['list', 'get', 'create', 'update', 'patch', 'delete'] as const) expect(counts[verb]).toBeGreaterThan(0);
  }, 60_000);
});
