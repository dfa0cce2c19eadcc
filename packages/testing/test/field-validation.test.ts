import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { call, WIDGET } from './helpers.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const cm = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c' },
  data: { a: 'b' },
  ...extra,
});

describe('fieldValidation on writes', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await startApiServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('[testing: fieldValidation] Strict refuses an unknown top-level field of a built-in kind with 400 and writes nothing', async () => {
    const r = await call(server, 'POST', `${CMS}?fieldValidation=Strict`, { body: cm({ foo: 1, bar: 2 }) });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      kind: 'Status',
      reason: 'BadRequest',
      message:
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo", unknown field "bar"',
    });
    expect((await call(server, 'GET', `${CMS}/c`)).status).toBe(404);
    expect((await call(server, 'POST', `${CMS}?fieldValidation=Strict`, { body: cm() })).status).toBe(201);
    for (const [contentType, body] of [
      ['application/merge-patch+json', { foo: 1 }],
      ['application/strategic-merge-patch+json', { foo: 1 }],
      ['application/apply-patch+yaml', cm({ foo: 1 })],
    ] as const) {
      const p = await call(server, 'PATCH', `${CMS}/c?fieldValidation=Strict&fieldManager=t`, { body, contentType });
      expect(p.status, contentType).toBe(400);
    }
    const put = await call(server, 'PUT', `${CMS}/c?fieldValidation=Strict`, { body: cm({ foo: 1 }) });
    expect(put.status).toBe(400);
    expect((await call(server, 'GET', `${CMS}/c`)).json.foo).toBeUndefined();
    // A strategic merge directive is not a field; a JSON patch names paths and is not checked.
    expect(
      (
        await call(server, 'PATCH', `${CMS}/c?fieldValidation=Strict`, {
          body: { $patch: 'merge', data: { x: 'y' } },
          contentType: 'application/strategic-merge-patch+json',
        })
      ).status,
    ).toBe(200);
  });

  it('[testing: fieldValidation] Warn (and unset) answers a Warning header per unknown field; Ignore says nothing', async () => {
    const warned = await call(server, 'POST', `${CMS}?fieldValidation=Warn`, { body: cm({ foo: 1 }) });
    expect(warned.status).toBe(201);
    expect(warned.headers.get('warning')).toBe('299 - "unknown field \\"foo\\""');
    const other = await call(server, 'POST', CMS, { body: { ...cm({ foo: 1, bar: 2 }), metadata: { name: 'd' } } });
    expect(other.status).toBe(201);
    expect(other.headers.get('warning')).toBe('299 - "unknown field \\"foo\\"", 299 - "unknown field \\"bar\\""');
    const ignored = await call(server, 'POST', `${CMS}?fieldValidation=Ignore`, {
      body: { ...cm({ foo: 1 }), metadata: { name: 'e' } },
    });
    expect(ignored.status).toBe(201);
    expect(ignored.headers.get('warning')).toBeNull();
  });

  it('[testing: fieldValidation] custom resources pass any field (their schemas are not consulted); a bad directive is 422 on the options', async () => {
    server.registerResource(WIDGET);
    const w = await call(server, 'POST', '/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict', {
      body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, anything: 1 },
    });
    expect(w.status).toBe(201);
    expect(w.headers.get('warning')).toBeNull();
    const bad = await call(server, 'POST', `${CMS}?fieldValidation=strict`, { body: cm() });
    expect(bad.status).toBe(422);
    expect(bad.json.message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"',
    );
    expect((await call(server, 'GET', `${CMS}/c`)).status).toBe(404);
  });
});
