import { afterEach, describe, expect, it, vi } from 'vitest';
import { customResource } from '../src/kinds/resource.js';
import { POD_RESOURCE } from '../src/kinds/pod.js';
import { startApiServer, type ApiServer } from '../src/index.js';
import type { ApiServerObject } from '../src/types.js';
import { listBody, listJson } from '../src/verbs/query.js';
import { PODS, WIDGET, call, watch } from './helpers.js';

let server: ApiServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

/** Counts `JSON.stringify` calls that serialize a pod (alone, in a frame or in a list). */
function countPodSerializations(): () => number {
  const spy = vi.spyOn(JSON, 'stringify');
  return () =>
    spy.mock.calls.filter(([v]) => {
      const o = v as { kind?: string; metadata?: { name?: string }; object?: { kind?: string }; items?: unknown[] } | null;
      return (
        typeof o === 'object' &&
        o !== null &&
        (o.metadata?.name?.startsWith('pod-') === true || o.object?.kind === 'Pod' || (o.items?.length ?? 0) > 0)
      );
    }).length;
}

describe('serialized once', () => {
  it('[testing: serialized once] a LIST assembled from cached item bytes is byte for byte JSON.stringify of the list body (UTF-8)', () => {
    const frozen = (o: ApiServerObject): ApiServerObject => Object.freeze(o);
    const pods = [
      frozen({
        kind: 'Pod',
        apiVersion: 'v1',
        metadata: { name: 'a', namespace: 'default', resourceVersion: '2' },
        spec: { containers: [] },
      }),
      frozen({
        kind: 'Pod',
        apiVersion: 'v1',
        metadata: { name: 'b\u00e9\u2028"q"', namespace: 'default', resourceVersion: '3' },
        status: { phase: 'Running' },
      }),
      // Not frozen: serialized on the spot, never cached.
      { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'c', namespace: 'default', resourceVersion: '4' } },
    ];
    const widgets = customResource(WIDGET);
    const cases: Array<[Parameters<typeof listJson>[0], ApiServerObject[], string | undefined, number | undefined]> = [
      [POD_RESOURCE, pods, undefined, undefined],
      [POD_RESOURCE, pods, 'eyJydiI6M30', 7],
      [POD_RESOURCE, [], undefined, undefined],
      [
        widgets,
        [frozen({ kind: 'Widget', apiVersion: 'example.com/v1', metadata: { name: 'w' }, spec: { n: 1 } })],
        undefined,
        0,
      ],
    ];
    for (const [r, items, cont, remaining] of cases) {
      // Twice: the second answer comes from the cache.
      const expected = JSON.stringify(listBody(r, items, '9', cont, remaining));
      for (let i = 0; i < 2; i++)
        expect(Buffer.concat(listJson(r, items, '9', cont, remaining)).equals(Buffer.from(expected))).toBe(true);
    }
  });

  it('[testing: serialized once] later watchers and LISTs serialize no stored pod again; a write is served fresh', async () => {
    server = await startApiServer();
    const s = server;
    s.seedPods(20);
    const first = await watch(s, `${PODS}?watch=true`);
    for (let i = 0; i < 20; i++) await first.next();
    const list1 = await call(s, 'GET', PODS);
    const counted = countPodSerializations();
    // Two more initial-state watches and a LIST: every pod's JSON is already cached.
    const more = [await watch(s, `${PODS}?watch=true`), await watch(s, `${PODS}?watch=true`)];
    for (const w of more) for (let i = 0; i < 20; i++) expect((await w.next()).frame.type).toBe('ADDED');
    const list2 = await call(s, 'GET', PODS);
    expect(list2.text).toBe(list1.text);
    expect(counted()).toBe(0);
    // A write is a new stored object: its frame and the next LIST carry the new state.
    s.updatePod('default', 'pod-3', (p) => {
      p.metadata.labels = { changed: 'yes' };
    });
    for (const w of [first, ...more]) {
      const f = await w.next();
      expect(f.frame.type).toBe('MODIFIED');
      expect(f.frame.object.metadata.labels).toEqual({ changed: 'yes' });
    }
    const list3 = await call(s, 'GET', PODS);
    expect(list3.json.items.find((p: { metadata: { name: string } }) => p.metadata.name === 'pod-3').metadata.labels).toEqual({
      changed: 'yes',
    });
    expect(list3.text).toBe(JSON.stringify(list3.json));
    for (const w of [first, ...more]) w.close();
  });
});
