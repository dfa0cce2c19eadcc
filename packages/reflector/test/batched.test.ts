import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import type { WatchRequest } from '../src/index.js';
import { advance, bookmark, errorFrame, FakeClient, line, openReflector, pod } from './helpers.js';

/** A client that hands over frames in batches: each value pushed to its watches is one batch (an array of frames). */
class BatchedClient extends FakeClient {
  watchBatches(request: WatchRequest): AsyncIterable<readonly unknown[]> {
    return this.watch(request) as AsyncIterable<readonly unknown[]>;
  }
}

function openBatched(options: Parameters<typeof openReflector>[0] = {}) {
  return openReflector(options, () => {}, new BatchedClient());
}

const summary = (events: readonly { type: string; key?: string }[]) =>
  events.map((e) => (e.type === 'replace' ? 'replace' : `${e.type} ${e.key}`));

describe('[k8s_reflector: deviation, batched frames] a client handing over one socket read at a time', () => {
  it('[k8s_reflector: deviation, batched frames] every frame of a batch is applied in order, one event each; bookmarks and the cursor as unbatched', async () => {
    const { client, reflector, stream } = openBatched();
    await settle();
    expect(client).toBeInstanceOf(BatchedClient);
    client.watch0.push(
      [line('ADDED', pod('a', '2')), line('MODIFIED', pod('b', '3')), bookmark('4')],
      [line('DELETED', pod('a', '5'))],
    );
    await settle();
    expect(summary(stream.events)).toEqual(['replace', 'upsert ns/a', 'upsert ns/b', 'delete ns/a']);
    expect(reflector.resourceVersion).toBe('5');
    expect(reflector.stats.bookmarks).toBe(1);
  });

  it('[k8s_reflector: deviation, batched frames] an unreadable frame inside a batch is skipped (heal scheduled), the frames after it applied', async () => {
    const { client, reflector, stream } = openBatched();
    await settle();
    client.watch0.push([line('ADDED', pod('a', '2')), '{"type":"ADDED","object":', line('ADDED', pod('c', '4'))]);
    await settle();
    expect(summary(stream.events)).toEqual(['replace', 'upsert ns/a', 'upsert ns/c']);
    expect(reflector.stats.skippedFrames).toBe(1);
    expect(reflector.resourceVersion).toBe('4');
  });

  it('[k8s_reflector: deviation, batched frames] an ERROR 410 inside a batch ends the watch there: the frames after it are not applied, and the reflector relists', async () => {
    const { client, stream, clock } = openBatched();
    await settle();
    client.watch0.push([
      line('ADDED', pod('a', '2')),
      errorFrame({ code: 410, reason: 'Expired' }),
      line('ADDED', pod('z', '9')),
    ]);
    await settle();
    expect(summary(stream.events)).toEqual(['replace', 'upsert ns/a']);
    expect(client.watch0.returned).toBe(true);
    await advance(clock, 10_000);
    expect(client.lists).toHaveLength(2);
    expect(summary(stream.events)).toEqual(['replace', 'upsert ns/a', 'replace']);
  });

  it('[k8s_reflector: deviation, batched frames] a watch-list whose initial-events-end bookmark arrives mid-batch hands the rest of that read to the watching state on the same stream', async () => {
    const { client, reflector, stream } = openBatched({ initialList: 'watch-list' });
    await settle();
    const end = line('BOOKMARK', {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { resourceVersion: '9', annotations: { 'k8s.io/initial-events-end': 'true' } },
    });
    client.watch0.push([
      line('ADDED', pod('a', '2')),
      line('ADDED', pod('b', '3')),
      end,
      line('MODIFIED', pod('a', '10')),
      line('DELETED', pod('b', '11')),
    ]);
    await settle();
    expect(
      stream.events.map((e) =>
        e.type === 'replace' ? `replace ${[...e.objects.keys()].join(',')}` : `${e.type} ${e.type !== 'release' && e.key}`,
      ),
    ).toEqual(['replace ns/a,ns/b', 'upsert ns/a', 'delete ns/b']);
    expect(reflector.resourceVersion).toBe('11');
    expect(client.watches).toHaveLength(1);
    expect(reflector.stats).toMatchObject({ lists: 0, watchLists: 1 });
  });

  it('[k8s_reflector: deviation, batched frames] a value that is not an array is a protocol failure: the watch is retried from the cursor', async () => {
    const { client, reflector } = openBatched();
    await settle();
    client.watch0.push(line('ADDED', pod('a', '2')));
    await settle();
    expect(reflector.stats.watchFailures).toBe(1);
    expect(client.watch0.returned).toBe(true);
  });
});
