import { OptionsError } from '@reconcile-loop/primitives';
import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema, podResource, podSchema } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  isAlreadyExists,
  isBadRequest,
  isConflict,
  isExpired,
  isForbidden,
  isGone,
  isInvalid,
  isKubeApiError,
  isNotFound,
  isServerTimeout,
  isTimeout,
  isTooManyRequests,
  isRequestEntityTooLarge,
  isInternalError,
  isServiceUnavailable,
  isMethodNotSupported,
  isNotAcceptable,
  isUnsupportedMediaType,
  isUnauthorized,
  KubeApiError,
  KubeClient,
  statusError,
  type KubeConfigAuth,
  type KubeClientOptions,
} from './all.js';
import { FakeTransport, statusBody } from './fake-transport.js';

// Compile-time proof that client-node's KubeConfig satisfies the structural interface.
const _assignable: KubeConfigAuth = new KubeConfig();
void _assignable;

const cellResource = { group: 'example.io', version: 'v1', plural: 'cellsets', kind: 'CellSet' };
const cellSchema = objectSchema({
  spec: z.object({ replicas: z.number().int() }),
  status: z.object({ ready: z.number().int() }).optional(),
});

function setup(options: Partial<KubeClientOptions> = {}) {
  const fake = new FakeTransport();
  const clock = new ManualClock(1_000);
  const client = new KubeClient({
    server: 'https://user:pw@k8s.test:6443/prefix',
    transport: fake.transport,
    clock,
    rateLimit: false,
    ...options,
  });
  return { fake, clock, client };
}

const cell = (name: string, rv = '5', replicas = 2) => ({
  apiVersion: 'example.io/v1',
  kind: 'CellSet',
  metadata: { name, namespace: 'ns', resourceVersion: rv, uid: `uid-${name}` },
  spec: { replicas },
});

describe('[kube_client: verbs] every verb, namespaced and cluster-scoped, typed by the caller view', () => {
  it('get / list / create / update / updateStatus build the upstream paths, methods and bodies and parse into the view', async () => {
    const { fake, client } = setup();
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    fake.next({ body: cell('a') });
    const got = await cells.get('a');
    expect(got.spec.replicas).toBe(2);
    // the view drops what it does not name
    expect((got as Record<string, unknown>)['kind']).toBeUndefined();
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets/a' });
    expect(fake.requests[0]!.headers['Accept']).toBe('application/json');

    fake.next({
      body: {
        kind: 'CellSetList',
        metadata: { resourceVersion: '9', continue: 'tok', remainingItemCount: 3 },
        items: [cell('a'), cell('b')],
      },
    });
    const page = await cells.list({ labelSelector: 'app=x', fieldSelector: 'metadata.name!=c', limit: 2 });
    expect(page.items.map((c) => c.metadata.name)).toEqual(['a', 'b']);
    expect(page).toMatchObject({ resourceVersion: '9', continue: 'tok', remainingItemCount: 3 });
    expect(Object.fromEntries(fake.requests[1]!.query)).toEqual({
      labelSelector: 'app=x',
      fieldSelector: 'metadata.name!=c',
      limit: '2',
    });

    fake.next({ status: 201, body: cell('c', '10') });
    await cells.create({ metadata: { name: 'c' }, spec: { replicas: 1 } }, { fieldManager: 'ctl', dryRun: true });
    // apiVersion/kind filled in from the resource: a custom resource body without them is a 400
    expect(fake.requests[2]).toMatchObject({
      method: 'POST',
      path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets',
      contentType: 'application/json',
      body: { apiVersion: 'example.io/v1', kind: 'CellSet', metadata: { name: 'c' }, spec: { replicas: 1 } },
    });
    expect(Object.fromEntries(fake.requests[2]!.query)).toEqual({ fieldManager: 'ctl', dryRun: 'All' });

    fake.next({ body: cell('c', '11', 3) });
    const updated = await cells.update({ metadata: { name: 'c', resourceVersion: '10' }, spec: { replicas: 3 } });
    expect(updated.metadata.resourceVersion).toBe('11');
    expect(fake.requests[3]).toMatchObject({ method: 'PUT', path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets/c' });

    fake.next({ body: { ...cell('c', '12'), status: { ready: 1 } } });
    const st = await cells.updateStatus({ metadata: { name: 'c', resourceVersion: '11' }, status: { ready: 1 } });
    expect(st.status?.ready).toBe(1);
    expect(fake.requests[4]).toMatchObject({ method: 'PUT', path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets/c/status' });
  });

  it('patch sends the merge, JSON and strategic content types; subresource patches go to /status', async () => {
    const { fake, client } = setup();
    const pods = client.resource(podResource, podSchema).inNamespace('default');
    const pod = { metadata: { name: 'p', namespace: 'default', resourceVersion: '3' }, spec: { containers: [{ name: 'c' }] } };
    fake.otherwise(() => ({ body: pod }));
    await pods.patch('p', { type: 'merge', body: { metadata: { labels: { a: 'b' } } } });
    await pods.patch('p', { type: 'json', body: [{ op: 'add', path: '/metadata/labels/a', value: 'b' }] });
    await pods.patch(
      'p',
      { type: 'strategic', body: { spec: { containers: [{ name: 'c', image: 'x' }] } } },
      { fieldManager: 'ctl' },
    );
    await pods.patch('p', { type: 'merge', body: { status: { phase: 'Running' } } }, { subresource: 'status' });
    expect(fake.requests.map((r) => [r.method, r.path, r.contentType])).toEqual([
      ['PATCH', '/prefix/api/v1/namespaces/default/pods/p', 'application/merge-patch+json'],
      ['PATCH', '/prefix/api/v1/namespaces/default/pods/p', 'application/json-patch+json'],
      ['PATCH', '/prefix/api/v1/namespaces/default/pods/p', 'application/strategic-merge-patch+json'],
      ['PATCH', '/prefix/api/v1/namespaces/default/pods/p/status', 'application/merge-patch+json'],
    ]);
    expect(fake.requests[2]!.query.get('fieldManager')).toBe('ctl');
  });

  it('apply sends application/apply-patch+yaml with a JSON body, fills apiVersion/kind, requires fieldManager and an explicit force', async () => {
    const { fake, client } = setup();
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    fake.otherwise(() => ({ body: cell('a') }));
    await cells.apply({ metadata: { name: 'a' }, spec: { replicas: 2 } }, { fieldManager: 'cellset-controller', force: false });
    await cells.apply(
      { metadata: { name: 'a' }, status: { ready: 2 } },
      { fieldManager: 'cellset-controller', force: true, subresource: 'status' },
    );
    expect(fake.requests[0]).toMatchObject({
      method: 'PATCH',
      path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets/a',
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'example.io/v1', kind: 'CellSet', metadata: { name: 'a' }, spec: { replicas: 2 } },
    });
    expect(Object.fromEntries(fake.requests[0]!.query)).toEqual({ fieldManager: 'cellset-controller', force: 'false' });
    expect(fake.requests[1]!.path).toBe('/prefix/apis/example.io/v1/namespaces/ns/cellsets/a/status');
    expect(fake.requests[1]!.query.get('force')).toBe('true');
    // misuse is a typed error before any request
    await expect(cells.apply({ metadata: { name: 'a' } }, { fieldManager: '', force: false })).rejects.toMatchObject({
      code: 'RL_INVALID_OPTIONS',
    });
    await expect(cells.apply({ metadata: { name: 'a' } }, { fieldManager: 'x' } as never)).rejects.toMatchObject({
      code: 'RL_INVALID_OPTIONS',
    });
    await expect(
      client
        .resource({ group: 'example.io', version: 'v1', plural: 'cellsets' })
        .apply({ metadata: { name: 'a' } }, { fieldManager: 'x', force: false }),
    ).rejects.toThrow(/kind/);
    expect(fake.requests).toHaveLength(2);
  });

  it('delete sends DeleteOptions (preconditions, propagationPolicy, gracePeriodSeconds) and tells an object from a Status', async () => {
    const { fake, client } = setup();
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    fake.next({ body: { ...cell('a'), metadata: { ...cell('a').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } } });
    const pending = await cells.delete('a', {
      preconditions: { uid: 'uid-a', resourceVersion: '5' },
      propagationPolicy: 'Foreground',
      gracePeriodSeconds: 0,
    });
    expect(pending.kind).toBe('object');
    expect(pending.kind === 'object' && pending.object.metadata.deletionTimestamp).toBe(Date.UTC(2026, 0, 1));
    expect(fake.requests[0]).toMatchObject({
      method: 'DELETE',
      body: {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        preconditions: { uid: 'uid-a', resourceVersion: '5' },
        propagationPolicy: 'Foreground',
        gracePeriodSeconds: 0,
      },
    });
    fake.next({
      body: { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name: 'a', kind: 'cellsets', uid: 'uid-a' } },
    });
    const gone = await cells.delete('a');
    expect(gone).toMatchObject({ kind: 'status', status: { status: 'Success', details: { name: 'a' } } });
  });

  it('deleteCollection sends the selectors and returns the deleted items', async () => {
    const { fake, client } = setup();
    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    fake.next({ body: { kind: 'CellSetList', metadata: { resourceVersion: '20' }, items: [cell('a'), cell('b')] } });
    const result = await cells.deleteCollection({ labelSelector: 'app=x', propagationPolicy: 'Background' });
    expect('items' in result && result.items.map((c) => c.metadata.name)).toEqual(['a', 'b']);
    expect(fake.requests[0]).toMatchObject({
      method: 'DELETE',
      path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets',
      body: { propagationPolicy: 'Background' },
    });
    expect(fake.requests[0]!.query.get('labelSelector')).toBe('app=x');
  });

  it('cluster-scoped and all-namespace handles have no namespace segment; a write without a handle namespace uses the body one', async () => {
    const { fake, client } = setup();
    fake.otherwise(() => ({ body: { metadata: { name: 'n1', resourceVersion: '1' } } }));
    const nodes = client.resource({ group: '', version: 'v1', plural: 'nodes', kind: 'Node' });
    await nodes.get('n1');
    await client
      .resource(cellResource)
      .list()
      .catch(() => undefined);
    await client.resource(cellResource).create({ metadata: { name: 'x', namespace: 'other' } });
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/prefix/api/v1/nodes/n1',
      '/prefix/apis/example.io/v1/cellsets',
      '/prefix/apis/example.io/v1/namespaces/other/cellsets',
    ]);
  });

  it('generic subresources: POST an eviction, GET and PUT a scale', async () => {
    const { fake, client } = setup();
    fake.otherwise(() => ({ status: 201, body: { kind: 'Status', status: 'Success' } }));
    const pods = client.resource(podResource, podSchema).inNamespace('default');
    await pods.subresource('eviction').create('p', { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' } });
    const deployments = client.resource({ group: 'apps', version: 'v1', plural: 'deployments' }).inNamespace('default');
    await deployments.subresource('scale').get('d');
    await deployments.subresource('scale').update('d', { spec: { replicas: 3 } });
    expect(fake.requests.map((r) => [r.method, r.path])).toEqual([
      ['POST', '/prefix/api/v1/namespaces/default/pods/p/eviction'],
      ['GET', '/prefix/apis/apps/v1/namespaces/default/deployments/d/scale'],
      ['PUT', '/prefix/apis/apps/v1/namespaces/default/deployments/d/scale'],
    ]);
    expect(() => pods.subresource('../x')).toThrow(OptionsError);
  });

  it('a handle without a schema reads whole JSON objects; an object that does not validate is an InvalidObjectError with its key', async () => {
    const { fake, client } = setup();
    fake.next({ body: cell('a') });
    const raw = await client.resource(cellResource).inNamespace('ns').get('a');
    expect(raw.kind).toBe('CellSet');
    fake.next({ body: { metadata: { name: 'bad', namespace: 'ns' }, spec: { replicas: 'two' } } });
    await expect(client.resource(cellResource, cellSchema).inNamespace('ns').get('bad')).rejects.toMatchObject({
      code: 'RL_TYPES_OBJECT_INVALID',
      objectKey: 'ns/bad',
    });
    fake.next({ body: 'not json' });
    await expect(client.resource(cellResource).inNamespace('ns').get('a')).rejects.toMatchObject({ code: 'RL_KUBE_PROTOCOL' });
  });
});

describe('[kube_client: StatusError] every non-2xx answer is a KubeApiError carrying the Status, and the is* helpers classify it', () => {
  const cases: [number, string, (e: unknown) => boolean][] = [
    [404, 'NotFound', isNotFound],
    [409, 'AlreadyExists', isAlreadyExists],
    [409, 'Conflict', isConflict],
    [422, 'Invalid', isInvalid],
    [403, 'Forbidden', isForbidden],
    [401, 'Unauthorized', isUnauthorized],
    [410, 'Gone', isGone],
    [410, 'Expired', isExpired],
    [429, 'TooManyRequests', isTooManyRequests],
    [504, 'Timeout', isTimeout],
    [500, 'ServerTimeout', isServerTimeout],
    [400, 'BadRequest', isBadRequest],
    [413, 'RequestEntityTooLarge', isRequestEntityTooLarge],
    [500, 'InternalError', isInternalError],
    [503, 'ServiceUnavailable', isServiceUnavailable],
    [405, 'MethodNotAllowed', isMethodNotSupported],
    [406, 'NotAcceptable', isNotAcceptable],
    [415, 'UnsupportedMediaType', isUnsupportedMediaType],
  ];
  const helpers = cases.map(([, , f]) => f);

  it.each(cases)('HTTP %i %s: exactly its own helper says yes', async (code, reason, helper) => {
    const { fake, client } = setup();
    fake.next({
      status: code,
      body: statusBody(code, reason, `it is ${reason}`, {
        name: 'a',
        kind: 'cellsets',
        causes: [{ reason: 'FieldValueInvalid', field: 'spec.x', message: 'bad' }],
      }),
    });
    const error = await client
      .resource(cellResource)
      .inNamespace('ns')
      .get('a')
      .catch((e: unknown) => e);
    expect(isKubeApiError(error)).toBe(true);
    const e = error as KubeApiError;
    expect(e).toMatchObject({
      code: 'RL_KUBE_API_ERROR',
      statusCode: code,
      reason,
      verb: 'get',
      path: '/prefix/apis/example.io/v1/namespaces/ns/cellsets/a',
    });
    expect(e.status?.details?.causes[0]).toEqual({ reason: 'FieldValueInvalid', field: 'spec.x', message: 'bad' });
    expect(helpers.filter((h) => h(e))).toEqual([helper]);
  });

  it('a body that is not a Status still classifies by the HTTP code (apimachinery NewGenericServerResponse); an unknown reason falls back to the code', async () => {
    const { fake, client } = setup();
    fake.next(
      { status: 404, body: '<html>not found</html>' },
      { status: 409, body: statusBody(409, 'SomethingNew', 'x') },
      { status: 418, body: '' },
    );
    const r = client.resource(cellResource).inNamespace('ns');
    const a = await r.get('a').catch((e: unknown) => e);
    expect(isNotFound(a)).toBe(true);
    expect((a as KubeApiError).status).toBeUndefined();
    const b = await r.get('a').catch((e: unknown) => e);
    expect([isConflict(b), isAlreadyExists(b)]).toEqual([true, false]);
    const c = await r.get('a').catch((e: unknown) => e);
    expect((c as KubeApiError).reason).toBe('Unknown');
  });

  it('IsTooManyRequests and IsRequestEntityTooLargeError decide by the code whatever the reason (apimachinery keeps their older rule); the others only for an unknown reason', () => {
    const error = (statusCode: number, reason: string) =>
      new KubeApiError({ statusCode, status: { reason }, verb: 'create', path: '/p' });
    expect(isTooManyRequests(error(429, 'Timeout'))).toBe(true);
    expect(isRequestEntityTooLarge(error(413, 'BadRequest'))).toBe(true);
    expect(isInternalError(error(500, 'ServerTimeout'))).toBe(false);
    expect(isInternalError(error(500, 'SomethingNew'))).toBe(true);
    expect(isServiceUnavailable(error(503, 'SomethingNew'))).toBe(true);
    expect(isTooManyRequests(new Error('429'))).toBe(false);
  });

  it('an in-band ERROR Status becomes the same error type (statusError)', () => {
    const e = statusError({ code: 410, reason: 'Expired', message: 'too old resource version: 1 (5)' }, 'watch', '/api/v1/pods');
    expect(isExpired(e)).toBe(true);
    expect(e.statusCode).toBe(410);
  });

  it('errors carry verb, path and query, never the token, the host or the userinfo of the server URL', async () => {
    const { fake, client } = setup({ token: 'sup3r-s3cret-t0ken' });
    fake.next({ status: 403, body: statusBody(403, 'Forbidden', 'pods is forbidden') });
    const error = (await client
      .resource(podResource)
      .inNamespace('d')
      .list({ labelSelector: 'a=b' })
      .catch((e: unknown) => e)) as KubeApiError;
    expect(error.path).toBe('/prefix/api/v1/namespaces/d/pods?labelSelector=a%3Db');
    const everything = JSON.stringify({ ...error, message: error.message, stack: error.stack });
    for (const secret of ['sup3r-s3cret-t0ken', 'k8s.test', 'user:pw']) expect(everything).not.toContain(secret);
  });

  it('transport failures are KubeTransportError with verb and path; options are checked at construction', async () => {
    const client = new KubeClient({
      server: 'https://k8s.test',
      transport: () => Promise.reject(new Error('ECONNREFUSED')),
      rateLimit: false,
    });
    await expect(client.resource(podResource).get('x')).rejects.toMatchObject({
      code: 'RL_KUBE_TRANSPORT',
      verb: 'get',
      path: '/api/v1/pods/x',
    });
    expect(() => new KubeClient({})).toThrow(OptionsError);
    expect(() => new KubeClient({ server: 'not a url' })).toThrow(OptionsError);
    expect(() => new KubeClient({ server: 'https://x', maxRetries: -1 })).toThrow(OptionsError);
    expect(() => new KubeClient({ server: 'https://x', rateLimit: { qps: 0 } })).toThrow(OptionsError);
  });
});

describe('[kube_client: rest.Config auth] auth borrowed from a KubeConfig per request, or a server and token', () => {
  it('a client-node 1.4 KubeConfig supplies server and bearer token through applyToHTTPSOptions, asked per request', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://k8s.test:6443', skipTLSVerify: true }],
      users: [{ name: 'u', token: 'tok-1' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    let applied = 0;
    const original = kc.applyToHTTPSOptions.bind(kc);
    kc.applyToHTTPSOptions = async (o) => {
      applied += 1;
      await original(o);
    };
    const seen: { url: string; token: string | undefined }[] = [];
    const client = new KubeClient({
      kubeConfig: kc,
      rateLimit: false,
      transport: async (request) => {
        // The default transport is where applyToHTTPSOptions runs; emulate it here to observe the header.
        const options: { headers?: Record<string, string> } = { headers: {} };
        await kc.applyToHTTPSOptions(options as never);
        seen.push({ url: request.url.href, token: options.headers?.['Authorization'] });
        return {
          status: 200,
          header: () => undefined,
          body: [JSON.stringify({ metadata: { name: 'x' } })],
          close: () => {},
        } as never;
      },
    });
    await client.resource(podResource).inNamespace('d').get('x');
    await client.resource(podResource).inNamespace('d').get('x');
    expect(seen).toEqual([
      { url: 'https://k8s.test:6443/api/v1/namespaces/d/pods/x', token: 'Bearer tok-1' },
      { url: 'https://k8s.test:6443/api/v1/namespaces/d/pods/x', token: 'Bearer tok-1' },
    ]);
    expect(applied).toBe(2);
  });

  it('an empty KubeConfig (no kubeconfig at all: client-node falls back to http://localhost:8080) is an OptionsError, not a transport failure; any other auth failure stays a transport failure', async () => {
    const empty = new KubeConfig();
    empty.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://localhost:8080' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const refused = await new KubeClient({ kubeConfig: empty, rateLimit: false })
      .resource(podResource)
      .inNamespace('d')
      .get('x')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OptionsError);
    expect((refused as Error).message).toMatch(/plain http, which client-node refuses without skip-tls-verify/);
    expect(((refused as Error).cause as Error).message).toMatch(/HTTP protocol is not allowed/);

    const flaky = {
      getCurrentCluster: () => ({ server: 'https://k8s.test:6443' }),
      applyToHTTPSOptions: () => Promise.reject(new Error('exec plugin failed: timeout')),
    };
    const transient = await new KubeClient({ kubeConfig: flaky, rateLimit: false, maxRetries: 0 })
      .resource(podResource)
      .inNamespace('d')
      .get('x')
      .catch((e: unknown) => e);
    expect((transient as { code?: unknown }).code).toBe('RL_KUBE_TRANSPORT');
  });

  it("currentServer() reads the current cluster's server per call (undefined without one), for a wrapper that names or checks it", () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://k8s.test:6443' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const client = new KubeClient({ kubeConfig: kc });
    expect(client.currentServer()).toBe('https://k8s.test:6443');
    kc.setCurrentContext('missing');
    expect(client.currentServer()).toBeUndefined();
    expect(new KubeClient({ server: 'http://127.0.0.1:1' }).currentServer()).toBe('http://127.0.0.1:1');
  });
});
