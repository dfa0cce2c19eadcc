import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { MvccStore } from '../src/engine/store.js';
import { POD_RESOURCE } from '../src/kinds/pod.js';
import { PODS, WIDGET, call } from './helpers.js';

let server: ApiServer;

beforeEach(async () => {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 20 });
});
afterEach(async () => {
  await server.close();
});

describe('LIST resourceVersion semantics', () => {
  it('[testing: list rv ""] reads the newest state and stamps the list with the global revision', async () => {
    server.seedPods(3);
    const a = await call(server, 'GET', PODS);
    expect(a.status).toBe(200);
    expect(a.json.kind).toBe('PodList');
    expect(a.json.apiVersion).toBe('v1');
    expect(a.json.metadata.resourceVersion).toBe(String(server.revision));
    expect(a.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-0', 'pod-1', 'pod-2']);
  });

  it('[testing: list items] built-in list items carry no kind/apiVersion; custom resources do', async () => {
    server.seedPods(1);
    const ref = server.registerResource(WIDGET);
    server.createObject(ref, { metadata: { name: 'w', namespace: 'default' }, spec: { size: 1 } });
    const pods = await call(server, 'GET', PODS);
    expect(pods.json.items[0].kind).toBeUndefined();
    expect(pods.json.items[0].apiVersion).toBeUndefined();
    const widgets = await call(server, 'GET', '/apis/example.com/v1/namespaces/default/widgets');
    expect(widgets.json.kind).toBe('WidgetList');
    expect(widgets.json.items[0]).toMatchObject({ kind: 'Widget', apiVersion: 'example.com/v1' });
  });

  it('[testing: list rv "0"] serves the newest state (any version) without a 410 even after compaction', async () => {
    server.seedPods(2);
    server.compact();
    const a = await call(server, 'GET', `${PODS}?resourceVersion=0`);
    expect(a.status).toBe(200);
    expect(a.json.items).toHaveLength(2);
    expect(a.json.metadata.resourceVersion).toBe(String(server.revision));
  });

  it('[testing: list NotOlderThan] a past version reads the newest state, never the old one', async () => {
    server.seedPods(1);
    const old = server.revision;
    server.createPod({ metadata: { name: 'later' } });
    for (const q of [`resourceVersion=${old}`, `resourceVersion=${old}&resourceVersionMatch=NotOlderThan`]) {
      const a = await call(server, 'GET', `${PODS}?${q}`);
      expect(a.status).toBe(200);
      expect(a.json.items).toHaveLength(2);
      expect(a.json.metadata.resourceVersion).toBe(String(server.revision));
    }
  });

  it('[testing: list Exact] reads the collection as it stood at that revision', async () => {
    server.seedPods(2);
    const at = server.revision;
    server.createPod({ metadata: { name: 'later' } });
    server.deletePod('default', 'pod-0');
    server.updatePod('default', 'pod-1', (p) => {
      p.metadata.labels = { changed: 'yes' };
    });
    const a = await call(server, 'GET', `${PODS}?resourceVersion=${at}&resourceVersionMatch=Exact`);
    expect(a.status).toBe(200);
    expect(a.json.metadata.resourceVersion).toBe(String(at));
    expect(a.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-0', 'pod-1']);
    expect(a.json.items[1].metadata.labels).toEqual({});
  });

  it('[testing: list legacy exact] a bare version with limit is served exactly (410 once compacted)', async () => {
    server.seedPods(3);
    const at = server.revision;
    server.createPod({ metadata: { name: 'later' } });
    const a = await call(server, 'GET', `${PODS}?resourceVersion=${at}&limit=10`);
    expect(a.json.metadata.resourceVersion).toBe(String(at));
    expect(a.json.items).toHaveLength(3);
    server.compact();
    const b = await call(server, 'GET', `${PODS}?resourceVersion=${at}&limit=10`);
    expect(b.status).toBe(410);
  });

  it('[testing: list Exact 410] an Exact list at a compacted revision is 410 Expired with etcd3 wording', async () => {
    server.seedPods(2);
    const at = server.revision - 1;
    server.compact();
    const a = await call(server, 'GET', `${PODS}?resourceVersion=${at}&resourceVersionMatch=Exact`);
    expect(a.status).toBe(410);
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'The resourceVersion for the provided list is too old.',
      reason: 'Expired',
      code: 410,
    });
  });

  it('[testing: list 504 too large] a future version waits, then answers 504 Timeout with the ResourceVersionTooLarge cause', async () => {
    server.seedPods(1);
    const future = server.revision + 5;
    const a = await call(server, 'GET', `${PODS}?resourceVersion=${future}`);
    expect(a.status).toBe(504);
    expect(a.headers.get('retry-after')).toBe('1');
    expect(a.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Timeout: Too large resource version: ${future}, current: ${server.revision}`,
      reason: 'Timeout',
      details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
      code: 504,
    });
  });

  it('[testing: list 504 too large] a future version that arrives within the wait is served', async () => {
    const slow = await startApiServer({ tooLargeResourceVersionWaitMs: 2_000 });
    try {
      const want = slow.revision + 1;
      const pending = call(slow, 'GET', `${PODS}?resourceVersion=${want}`);
      await slow.waitForRequests('list', 1);
      slow.createPod({ metadata: { name: 'arrives' } });
      const a = await pending;
      expect(a.status).toBe(200);
      expect(a.json.items).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });

  it('[testing: list option validation] resourceVersionMatch misuse is 422 Invalid on ListOptions', async () => {
    const a = await call(server, 'GET', `${PODS}?resourceVersionMatch=Exact`);
    expect(a.status).toBe(422);
    expect(a.json.reason).toBe('Invalid');
    expect(a.json.message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
    );
    expect(a.json.details).toEqual({
      group: 'meta.k8s.io',
      kind: 'ListOptions',
      causes: [
        {
          reason: 'FieldValueForbidden',
          message: 'Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
          field: 'resourceVersionMatch',
        },
      ],
    });
    const b = await call(server, 'GET', `${PODS}?resourceVersion=0&resourceVersionMatch=Exact`);
    expect(b.status).toBe(422);
    expect(b.json.message).toContain('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
    const c = await call(server, 'GET', `${PODS}?resourceVersion=1&resourceVersionMatch=Sometimes`);
    expect(c.status).toBe(422);
    expect(c.json.details.causes[0].reason).toBe('FieldValueNotSupported');
  });
});

describe('pagination', () => {
  it('[testing: continue tokens] pages are consistent at the first page revision and carry remainingItemCount', async () => {
    server.seedPods(5);
    const first = await call(server, 'GET', `${PODS}?limit=2`);
    const rv = first.json.metadata.resourceVersion;
    expect(first.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-0', 'pod-1']);
    expect(first.json.metadata.remainingItemCount).toBe(3);
    const token = JSON.parse(Buffer.from(first.json.metadata.continue, 'base64url').toString('utf8'));
    expect(token).toEqual({ v: 'meta.k8s.io/v1', rv: Number(rv), start: 'pod-1\u0000' });
    // Writes after the first page are invisible to the rest of this list.
    server.createPod({ metadata: { name: 'pod-9' } });
    server.deletePod('default', 'pod-3');
    const second = await call(server, 'GET', `${PODS}?limit=2&continue=${first.json.metadata.continue}`);
    expect(second.json.metadata.resourceVersion).toBe(rv);
    expect(second.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-2', 'pod-3']);
    const third = await call(server, 'GET', `${PODS}?limit=2&continue=${second.json.metadata.continue}`);
    expect(third.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-4']);
    expect(third.json.metadata.continue).toBeUndefined();
  });

  it('[testing: continue tokens] cluster-wide pages key by namespace/name', async () => {
    server.seedPods(2, { namespace: 'b' });
    server.seedPods(2, { namespace: 'a' });
    const first = await call(server, 'GET', '/api/v1/pods?limit=3');
    expect(
      first.json.items.map(
        (p: { metadata: { namespace: string; name: string } }) => `${p.metadata.namespace}/${p.metadata.name}`,
      ),
    ).toEqual(['a/pod-0', 'a/pod-1', 'b/pod-0']);
    const second = await call(server, 'GET', `/api/v1/pods?limit=3&continue=${first.json.metadata.continue}`);
    expect(second.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-1']);
  });

  it('[testing: continue 410] a token whose revision was compacted is 410 with a fresh inconsistent token', async () => {
    server.seedPods(4);
    const first = await call(server, 'GET', `${PODS}?limit=2`);
    server.createPod({ metadata: { name: 'pod-5' } });
    server.compact();
    const expiredPage = await call(server, 'GET', `${PODS}?limit=2&continue=${first.json.metadata.continue}`);
    expect(expiredPage.status).toBe(410);
    expect(expiredPage.json.reason).toBe('Expired');
    expect(expiredPage.json.message).toMatch(/^The provided continue parameter is too old to display a consistent list result\./);
    const fresh = expiredPage.json.metadata.continue;
    expect(JSON.parse(Buffer.from(fresh, 'base64url').toString('utf8')).rv).toBe(-1);
    const rest = await call(server, 'GET', `${PODS}?limit=10&continue=${fresh}`);
    expect(rest.status).toBe(200);
    expect(rest.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['pod-2', 'pod-3', 'pod-5']);
  });

  it('[testing: list rv "0" with limit] the watch cache (default personality) serves it whole, ignoring limit, at the newest state', async () => {
    server.seedPods(3);
    const a = await call(server, 'GET', `${PODS}?resourceVersion=0&limit=2`);
    expect(a.json.items).toHaveLength(3);
    expect(a.json.metadata.resourceVersion).toBe(String(server.revision));
    expect(a.json.metadata.continue).toBeUndefined();
  });

  it('[testing: continue validation] a version with continue is 400; a garbage token is 400', async () => {
    server.seedPods(3);
    const first = await call(server, 'GET', `${PODS}?limit=1`);
    const a = await call(server, 'GET', `${PODS}?limit=1&resourceVersion=5&continue=${first.json.metadata.continue}`);
    expect(a.status).toBe(400);
    expect(a.json.message).toBe('specifying resource version is not allowed when using continue');
    const b = await call(server, 'GET', `${PODS}?limit=1&continue=not-a-token`);
    expect(b.status).toBe(400);
    expect(b.json.reason).toBe('BadRequest');
  });

  it('[testing: paged snapshot] pages read one revision while writes go on between them, each page from a shared sorted snapshot', async () => {
    server.seedPods(60);
    const want = (await call(server, 'GET', PODS)).json.items.map((p: { metadata: { name: string } }) => p.metadata.name);
    const names: string[] = [];
    let token: string | undefined;
    let page = 0;
    do {
      const q = token === undefined ? `${PODS}?limit=7` : `${PODS}?limit=7&continue=${token}`;
      const res = await call(server, 'GET', q);
      expect(res.status).toBe(200);
      names.push(...res.json.items.map((p: { metadata: { name: string } }) => p.metadata.name));
      token = res.json.metadata.continue;
      if (token !== undefined) expect(res.json.metadata.remainingItemCount).toBe(60 - names.length);
      // Writes between pages, on both sides of the cursor (keys sort as strings), and a new name sorting first.
      server.deletePod('default', `pod-${page * 2}`);
      server.updatePod('default', `pod-${page * 6 + 1}`, (p) => {
        p.metadata.labels = { touched: String(page) };
      });
      server.createPod({ metadata: { name: `aaa-${page}` } });
      page++;
    } while (token !== undefined);
    expect(names).toEqual(want);
    expect(page).toBe(9);
  });

  it('[testing: paged snapshot] the store rewinds and sorts a revision once, and lets it go when compacted', () => {
    const store = new MvccStore(1_000);
    for (let i = 0; i < 5; i++)
      store.commit(POD_RESOURCE, `default/p${i}`, 'ADDED', { metadata: { name: `p${i}`, namespace: 'default' } });
    const at = store.revision;
    store.commit(POD_RESOURCE, 'default/p0', 'DELETED', { metadata: { name: 'p0', namespace: 'default' } });
    store.commit(POD_RESOURCE, 'default/a', 'ADDED', { metadata: { name: 'a', namespace: 'default' } });
    const first = store.listAt(POD_RESOURCE, 'default', at);
    expect(first.map(([k]) => k)).toEqual(['default/p0', 'default/p1', 'default/p2', 'default/p3', 'default/p4']);
    expect(Object.isFrozen(first)).toBe(true);
    store.commit(POD_RESOURCE, 'default/p1', 'DELETED', { metadata: { name: 'p1', namespace: 'default' } });
    expect(store.listAt(POD_RESOURCE, 'default', at)).toBe(first);
    expect(store.listAt(POD_RESOURCE, 'other', at)).toEqual([]);
    expect(store.listAt(POD_RESOURCE, undefined, store.revision).map(([k]) => k)).toEqual([
      'default/a',
      'default/p2',
      'default/p3',
      'default/p4',
    ]);
    store.compact();
    // Past compaction the old snapshot is dropped, not served: reading `at` again rewinds nothing it could.
    expect(store.listAt(POD_RESOURCE, 'default', store.revision)).not.toBe(first);
    expect(store.listAt(POD_RESOURCE, 'default', at)).not.toBe(first);
  });

  it('[testing: pagination with selectors] limit counts matching items; remainingItemCount is omitted', async () => {
    server.seedPods(3, { labels: { app: 'a' }, namePrefix: 'a' });
    server.seedPods(3, { labels: { app: 'b' }, namePrefix: 'b' });
    const first = await call(server, 'GET', `${PODS}?limit=2&labelSelector=app%3Db`);
    expect(first.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['b-0', 'b-1']);
    expect(first.json.metadata.remainingItemCount).toBeUndefined();
    const second = await call(server, 'GET', `${PODS}?limit=2&labelSelector=app%3Db&continue=${first.json.metadata.continue}`);
    expect(second.json.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['b-2']);
  });
});

describe('selectors', () => {
  beforeEach(() => {
    server.createPod({ metadata: { name: 'web-1', labels: { app: 'web', tier: 'front' } } });
    server.createPod({ metadata: { name: 'web-2', labels: { app: 'web', tier: 'back' } } });
    server.createPod({ metadata: { name: 'db-1', labels: { app: 'db' } } });
    server.createPod({ metadata: { name: 'bare' } });
  });
  const names = async (q: string): Promise<string[]> => {
    const a = await call(server, 'GET', `${PODS}?${q}`);
    expect(a.status).toBe(200);
    return a.json.items.map((p: { metadata: { name: string } }) => p.metadata.name);
  };
  it.each([
    ['app=web', ['web-1', 'web-2']],
    ['app==db', ['db-1']],
    ['app!=web', ['bare', 'db-1']],
    ['app in (db, web),tier', ['web-1', 'web-2']],
    ['tier notin (front)', ['bare', 'db-1', 'web-2']],
    ['tier', ['web-1', 'web-2']],
    ['!tier', ['bare', 'db-1']],
    ['app=web,tier=back', ['web-2']],
  ])('[testing: label selectors] %s', async (sel, want) => {
    expect(await names(`labelSelector=${encodeURIComponent(sel)}`)).toEqual(want);
  });

  it('[testing: field selectors] metadata.name, metadata.namespace, != and spec.nodeName', async () => {
    server.kubelet.bind('default', 'db-1', 'node-a');
    expect(await names(`fieldSelector=${encodeURIComponent('metadata.name=web-2')}`)).toEqual(['web-2']);
    expect(await names(`fieldSelector=${encodeURIComponent('metadata.namespace=default,metadata.name!=bare')}`)).toEqual([
      'db-1',
      'web-1',
      'web-2',
    ]);
    expect(await names(`fieldSelector=${encodeURIComponent('spec.nodeName=node-a')}`)).toEqual(['db-1']);
  });

  it('[testing: bad selector 400] malformed label and unknown field selectors are 400 BadRequest Status', async () => {
    const a = await call(server, 'GET', `${PODS}?labelSelector=${encodeURIComponent('app in web')}`);
    expect(a.status).toBe(400);
    expect(a.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
    expect(a.json.message).toContain('unable to parse requirement');
    const b = await call(server, 'GET', `${PODS}?fieldSelector=${encodeURIComponent('spec.color=red')}`);
    expect(b.status).toBe(400);
    expect(b.json.message).toBe('field label not supported: spec.color');
    const ref = server.registerResource(WIDGET);
    expect(ref.plural).toBe('widgets');
    const c = await call(
      server,
      'GET',
      `/apis/example.com/v1/namespaces/default/widgets?fieldSelector=${encodeURIComponent('spec.x=1')}`,
    );
    expect(c.status).toBe(400);
    expect(c.json.message).toBe('"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"');
  });
});
