import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { podResource, type Pod } from '@reconcile-loop/k8s-types';
import { KubeClient, WatchFrameTooLargeError } from '@reconcile-loop/kube-client';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { settle } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeApiClient, type WatchRequest } from '../src/index.js';
import { advance, bookmark, FakeClient, line, openReflector, pod } from './helpers.js';

/** A client handing over each socket read as one array of frame bytes, as `KubeApiClient` does: every value pushed is one batch of lines, sent as bytes. */
class BytesClient extends FakeClient {
  watchBatches(request: WatchRequest): AsyncIterable<readonly unknown[]> {
    const batches = this.watch(request) as AsyncIterable<readonly unknown[]>;
    return (async function* () {
      for await (const batch of batches) yield batch.map((frame) => (typeof frame === 'string' ? bytesOf(frame) : frame));
    })();
  }
}

/** The UTF-8 bytes of a line, as a view inside a larger buffer (as a frame of kube-client sits in its socket read). */
function bytesOf(text: string): Uint8Array {
  const encoded = Buffer.from(`x\n${text}\ny`, 'utf8');
  return new Uint8Array(encoded.buffer, encoded.byteOffset + 2, encoded.length - 4);
}

const endBookmark = (resourceVersion: string): string =>
  line('BOOKMARK', {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
  });
const summary = (event: SourceEvent<Pod>): string =>
  event.type === 'replace'
    ? `replace ${[...event.objects.keys()].join(',')}`
    : `${event.type} ${event.type !== 'release' && event.key}`;

describe('[k8s_reflector: frames as bytes] the reflector reads frames from their bytes', () => {
  it('[k8s_reflector: frames as bytes] byte frames are applied in order (multi-byte text intact); bookmarks move the cursor; an unreadable one is skipped, a poison object quarantined', async () => {
    const { client, reflector, stream } = openReflector({}, () => {}, new BytesClient());
    await settle();
    const cafe = pod('a', '2', { metadata: { name: 'a', namespace: 'ns', resourceVersion: '2', labels: { note: 'café-😀' } } });
    client.watch0.push(
      [line('ADDED', cafe), line('MODIFIED', pod('b', '3')), bookmark('4')],
      [
        '{"type":"ADDED","object":',
        line('ADDED', pod('bad', '6', { spec: { containers: 'nope' } })),
        line('DELETED', pod('b', '7')),
      ],
    );
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ', 'upsert ns/a', 'upsert ns/b', 'delete ns/b']);
    const upsert = stream.events[1]!;
    expect(upsert.type === 'upsert' && upsert.object.metadata.labels['note']).toBe('café-😀');
    expect(reflector.resourceVersion).toBe('7');
    expect(reflector.stats).toMatchObject({ bookmarks: 1, skippedFrames: 1, invalidObjects: 1 });
    expect(reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/bad']);
  });

  it("[k8s_reflector: frames as bytes] the frame cap counts a byte frame's byteLength: over it, the watch is torn down and the reflector relists", async () => {
    const { client, clock, reflector } = openReflector({ maxFrameBytes: 1_000 }, () => {}, new BytesClient());
    await settle();
    // 450 'é' are under 1 000 characters but over 1 000 bytes.
    const wide = line(
      'ADDED',
      pod('wide', '9', {
        metadata: { name: 'wide', namespace: 'ns', resourceVersion: '9', annotations: { x: 'é'.repeat(450) } },
      }),
    );
    expect(wide.length).toBeLessThan(1_000);
    const first = client.watch0;
    first.push([line('ADDED', pod('a', '2')), wide]);
    await settle();
    expect(first.returned).toBe(true);
    expect(reflector.health().lastError).toBeInstanceOf(WatchFrameTooLargeError);
    await advance(clock, 1_000);
    expect(client.lists).toHaveLength(2);
  });

  it('[k8s_reflector: frames as bytes] a watch-list over byte frames: objects validated one at a time into the temporary map, a poison one into the quarantine, a DELETED dropped, the end bookmark read from its bytes', async () => {
    const { client, reflector, stream } = openReflector({ initialList: 'watch-list' }, () => {}, new BytesClient());
    await settle();
    client.watch0.push([
      line('ADDED', pod('good', '5')),
      line('ADDED', pod('bad', '6', { spec: { containers: 'nope' } })),
      line('ADDED', pod('gone', '7')),
    ]);
    client.watch0.push([
      line('DELETED', pod('gone', '8')),
      line('ADDED', pod('nameless', '6', { metadata: { namespace: 'ns', resourceVersion: '6' } })),
      bookmark('8'),
    ]);
    await settle();
    expect(stream.events).toEqual([]);
    client.watch0.push([endBookmark('9'), line('MODIFIED', pod('good', '10'))]);
    await settle();
    expect(stream.events.map(summary)).toEqual(['replace ns/good', 'upsert ns/good']);
    expect(reflector.health().quarantined.map((q) => q.key)).toEqual(['ns/bad']);
    expect(reflector.stats).toMatchObject({ invalidObjects: 2, watchLists: 1, lists: 0 });
    expect(reflector.resourceVersion).toBe('10');
  });

  it('[k8s_reflector: frames as bytes] a watch-list whose initial frame is over the cap in bytes falls back to a LIST', async () => {
    const { client, reflector } = openReflector({ initialList: 'watch-list', maxFrameBytes: 1_000 }, () => {}, new BytesClient());
    await settle();
    client.watch0.push([
      line(
        'ADDED',
        pod('wide', '9', {
          metadata: { name: 'wide', namespace: 'ns', resourceVersion: '9', annotations: { x: 'é'.repeat(450) } },
        }),
      ),
    ]);
    await settle();
    expect(reflector.stats).toMatchObject({ watchListFallbacks: 1, lists: 1 });
  });
});

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

describe('[k8s_reflector: frames as bytes] KubeApiClient over HTTP', () => {
  it('[k8s_reflector: frames as bytes] watchBatches yields each frame as its bytes, never a string; a frame cut across reads (inside a UTF-8 character) arrives whole', async () => {
    const first = `${line('ADDED', pod('a', '11', { metadata: { name: 'a', namespace: 'ns', resourceVersion: '11', annotations: { note: 'café' } } }))}\n`;
    const bytes = Buffer.from(`${first}${bookmark('12')}\n`, 'utf8');
    const split = bytes.indexOf(Buffer.from('é')) + 1;
    const server = http.createServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(bytes.subarray(0, split));
      setTimeout(() => response.end(bytes.subarray(split)), 20);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new KubeApiClient(
      new KubeClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, rateLimit: false }),
      podResource,
    );
    const frames: unknown[] = [];
    for await (const batch of client.watchBatches({
      namespace: 'ns',
      resourceVersion: '10',
      timeoutSeconds: 60,
      allowWatchBookmarks: true,
      signal: new AbortController().signal,
    }))
      frames.push(...batch);
    expect(frames.every((frame) => frame instanceof Uint8Array)).toBe(true);
    expect(frames.map((frame) => Buffer.from(frame as Uint8Array).toString('utf8'))).toEqual([first.trimEnd(), bookmark('12')]);
  });
});
