import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { PODS, call, watch } from './helpers.js';

const OBJECT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

let server: ApiServer;
afterEach(async () => {
  await server.close();
});

/** What a PartialObjectMetadata carries: the representation's type and the object's whole metadata, nothing else. */
function expectPartial(o: Record<string, unknown>, name: string): void {
  expect(o).toEqual({
    kind: 'PartialObjectMetadata',
    apiVersion: 'meta.k8s.io/v1',
    metadata: expect.objectContaining({ name, namespace: 'default', uid: expect.any(String) }),
  });
}

describe('PartialObjectMetadata (metadata-only reads)', () => {
  it('[testing: PartialObjectMetadata] a LIST asking for PartialObjectMetadataList gets one, paged, with the list cursor; without the header the full objects', async () => {
    server = await startApiServer({ bookmarkIntervalMs: 20 });
    server.seedPods(3);
    const page = await call(server, 'GET', `${PODS}?limit=2`, { headers: { Accept: LIST } });
    expect(page.status).toBe(200);
    expect(page.json.kind).toBe('PartialObjectMetadataList');
    expect(page.json.apiVersion).toBe('meta.k8s.io/v1');
    expect(page.json.metadata.resourceVersion).toBe(String(server.revision));
    expect(page.json.metadata.continue).toBeTypeOf('string');
    expect(page.json.items).toHaveLength(2);
    expectPartial(page.json.items[0], 'pod-0');
    const full = await call(server, 'GET', `${PODS}?limit=2`);
    expect(full.json.kind).toBe('PodList');
    expect(full.json.items[0].spec).toBeDefined();
  });

  it('[testing: PartialObjectMetadata] a GET asking for PartialObjectMetadata gets the object as one', async () => {
    server = await startApiServer();
    server.seedPods(1);
    const a = await call(server, 'GET', `${PODS}/pod-0`, { headers: { Accept: OBJECT } });
    expect(a.status).toBe(200);
    expectPartial(a.json, 'pod-0');
  });

  it('[testing: PartialObjectMetadata] a WATCH asking for PartialObjectMetadata carries it in ADDED, MODIFIED, DELETED and BOOKMARK frames; an ERROR frame stays a Status', async () => {
    server = await startApiServer({ bookmarkIntervalMs: 20, deletionEvents: 'immediate' });
    server.seedPods(1);
    const w = await watch(server, `${PODS}?watch=true&allowWatchBookmarks=true`, { Accept: OBJECT });
    const added = await w.next();
    expect(added.frame.type).toBe('ADDED');
    expectPartial(added.frame.object, 'pod-0');
    server.updatePod('default', 'pod-0', (p) => {
      p.metadata.labels = { changed: 'yes' };
    });
    let frame = await w.next();
    while (frame.frame.type === 'BOOKMARK') frame = await w.next();
    expect(frame.frame.type).toBe('MODIFIED');
    expect(frame.frame.object.metadata.labels).toEqual({ changed: 'yes' });
    expectPartial(frame.frame.object, 'pod-0');
    server.deletePod('default', 'pod-0', { gracePeriodSeconds: 0 });
    frame = await w.next();
    while (frame.frame.type === 'BOOKMARK') frame = await w.next();
    expect(frame.frame.type).toBe('DELETED');
    expectPartial(frame.frame.object, 'pod-0');
    frame = await w.next();
    while (frame.frame.type !== 'BOOKMARK') frame = await w.next();
    expect(frame.frame.object).toEqual({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: String(server.revision) },
    });
    w.close();

    server.compact();
    const expired = await watch(server, `${PODS}?watch=true&resourceVersion=1`, { Accept: OBJECT });
    const error = await expired.next();
    expect(error.frame.type).toBe('ERROR');
    expect(error.frame.object).toMatchObject({ kind: 'Status', code: 410 });
    expired.close();
  });
});
