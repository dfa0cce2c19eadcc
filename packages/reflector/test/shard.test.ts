import type { Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore, type ReplaceEvent } from '@reconcile-loop/object-store';
import { inShardRanges, OptionsError, shardHash, shardSelector, type ShardRange } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { listShardInfo } from '../src/kube-api.js';
import { createHash } from 'node:crypto';
import { line, openReflector, pod as basePod } from './helpers.js';

const LOWER: readonly ShardRange[] = [{ start: '0x0000000000000000', end: '0x8000000000000000' }];
const UPPER: readonly ShardRange[] = [{ start: '0x8000000000000000', end: '0x10000000000000000' }];
const NAMES = Array.from({ length: 16 }, (_, i) => `p${i}`);
/**
 * A UUID-shaped uid derived from the name: FNV-1a's top bits barely depend on a string's last
 * characters, so `uid-p0`…`uid-p15` would all fall on one side of the split; real uids are random.
 */
const uidOf = (name: string): string => {
  const h = createHash('sha1').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const pod = (name: string, resourceVersion: string): Record<string, unknown> => {
  const p = basePod(name, resourceVersion);
  return { ...p, metadata: { ...(p['metadata'] as object), uid: uidOf(name) } };
};
/** Whether pod `name` is in `ranges`. */
const owned = (name: string, ranges: readonly ShardRange[]): boolean => inShardRanges(shardHash(uidOf(name)), ranges);
const lowerNames = NAMES.filter((n) => owned(n, LOWER));
const upperNames = NAMES.filter((n) => owned(n, UPPER));
const keysOf = (event: unknown): string[] => [...(event as ReplaceEvent<Pod>).objects.keys()].sort();
const nsKeys = (names: readonly string[]): string[] => names.map((n) => `ns/${n}`).sort();

describe('Reflector: sharded sources', () => {
  it('[reflector: Sharded source] the fixed sample has pods on both sides of the split, so every case below can fail', () => {
    expect(lowerNames.length).toBeGreaterThan(2);
    expect(upperNames.length).toBeGreaterThan(2);
  });

  it('[reflector: Sharded source] sends shardSelector on every LIST page and WATCH; a LIST that echoes it in shardInfo is taken as the server filtered it', async () => {
    const selector = shardSelector('uid', LOWER);
    const { client, reflector, stream, controller, logger } = openReflector(
      { shard: { field: 'uid', ranges: LOWER }, listPageSize: 0 },
      (c) => c.queueList({ items: lowerNames.map((n) => pod(n, '5')), resourceVersion: '10', shardInfo: { selector } }),
    );
    await settle();
    expect(client.lists[0]?.shardSelector).toBe(selector);
    expect(client.watch0.request.shardSelector).toBe(selector);
    expect(keysOf(stream.events[0])).toEqual(nsKeys(lowerNames));
    expect(reflector.health().shard).toMatchObject({
      field: 'uid',
      ranges: LOWER,
      selector,
      filter: 'server',
      reshards: 0,
      dropped: 0,
    });
    expect(logger.entries.filter((r) => r.level === 'warn')).toEqual([]);
    controller.abort();
    await stream.done;
  });

  it('[reflector: Shard fallback] a LIST without shardInfo (gate off, older server) is filtered on the client with the same hash, warned once, and watch frames outside the ranges are dropped', async () => {
    const { client, reflector, stream, controller, logger } = openReflector({ shard: { field: 'uid', ranges: LOWER } }, (c) =>
      c.queueList({ items: NAMES.map((n) => pod(n, '5')), resourceVersion: '10' }),
    );
    await settle();
    expect(keysOf(stream.events[0])).toEqual(nsKeys(lowerNames));
    const shard = reflector.health().shard;
    expect(shard?.filter).toBe('client');
    expect(shard?.dropped).toBe(upperNames.length);
    client.watch0.push(line('ADDED', pod(upperNames[0]!, '11')), line('ADDED', pod(lowerNames[0]!, '12')));
    await settle();
    expect(stream.events.slice(1).map((e) => (e.type === 'upsert' ? e.key : e.type))).toEqual([`ns/${lowerNames[0]}`]);
    expect(reflector.health().shard?.dropped).toBe(upperNames.length + 1);
    expect(logger.entries.filter((r) => r.level === 'warn' && /ignored shardSelector/.test(r.message))).toHaveLength(1);
    controller.abort();
    await stream.done;
  });

  it('[reflector: Shard on watch-list] a watch-list has no list metadata: every initial object is checked on the client, the filter stays unverified while none is foreign', async () => {
    const { client, reflector, stream, controller } = openReflector({
      shard: { field: 'uid', ranges: LOWER },
      initialList: 'watch-list',
    });
    await settle();
    expect(client.watch0.request).toMatchObject({ sendInitialEvents: true, shardSelector: shardSelector('uid', LOWER) });
    client.watch0.push(
      ...lowerNames.map((n) => line('ADDED', pod(n, '5'))),
      line('BOOKMARK', {
        kind: 'Pod',
        apiVersion: 'v1',
        metadata: { resourceVersion: '9', annotations: { 'k8s.io/initial-events-end': 'true' } },
      }),
    );
    await settle();
    expect(keysOf(stream.events[0])).toEqual(nsKeys(lowerNames));
    expect(reflector.health().shard?.filter).toBe('unverified');
    client.watch0.push(line('ADDED', pod(upperNames[0]!, '11')));
    await settle();
    expect(stream.events).toHaveLength(1);
    expect(reflector.health().shard).toMatchObject({ filter: 'client', dropped: 1 });
    controller.abort();
    await stream.done;
  });

  it('[reflector: Reshard] reshard() cuts the watch, yields a release of what the new ranges do not own, then relists with the new selector; the store drops the released keys without a delete', async () => {
    const { client, reflector, stream, controller } = openReflector({ shard: { field: 'uid', ranges: LOWER } }, (c) =>
      c.queueList(
        {
          items: lowerNames.map((n) => pod(n, '5')),
          resourceVersion: '10',
          shardInfo: { selector: shardSelector('uid', LOWER) },
        },
        {
          items: upperNames.map((n) => pod(n, '5')),
          resourceVersion: '20',
          shardInfo: { selector: shardSelector('uid', UPPER) },
        },
      ),
    );
    await settle();
    const store = new ObjectStore<Pod, string>({ keyMap: (_, key) => key });
    store.apply(stream.events[0]!);
    expect(store.keys().sort()).toEqual(nsKeys(lowerNames));
    const firstWatch = client.watch0;
    reflector.reshard(UPPER);
    await settle();
    expect(firstWatch.returned || firstWatch.request.signal.aborted).toBe(true);
    const [release, replace] = stream.events.slice(1);
    expect(release?.type).toBe('release');
    const released = store.apply(release!);
    expect([...released].sort()).toEqual(nsKeys(lowerNames));
    expect(store.size).toBe(0);
    expect(client.lists[1]?.shardSelector).toBe(shardSelector('uid', UPPER));
    expect(keysOf(replace)).toEqual(nsKeys(upperNames));
    expect(client.watch0.request.shardSelector).toBe(shardSelector('uid', UPPER));
    expect(reflector.stats.reshardRelists).toBe(1);
    expect(reflector.health().shard).toMatchObject({ ranges: UPPER, filter: 'server', reshards: 1 });
    controller.abort();
    await stream.done;
  });

  it('[reflector: Reshard] reshard() refuses malformed ranges and a reflector without shard, changing nothing', () => {
    const { reflector, controller } = openReflector({ shard: { field: 'uid', ranges: LOWER } });
    expect(() => reflector.reshard([{ start: '0x8000000000000000', end: '0x0000000000000000' }])).toThrow(OptionsError);
    expect(reflector.health().shard?.ranges).toEqual(LOWER);
    controller.abort();
    const plain = openReflector();
    expect(() => plain.reflector.reshard(LOWER)).toThrow(OptionsError);
    plain.controller.abort();
  });

  it('[reflector: Sharded source] listShardInfo reads metadata.shardInfo.selector from a LIST body before its items, and nothing from an item', () => {
    const selector = shardSelector('uid', LOWER);
    const body = (metadata: unknown, items: unknown[]) =>
      Buffer.from(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata, items }));
    expect(listShardInfo(body({ resourceVersion: '1', shardInfo: { selector } }, []))).toEqual({ selector });
    expect(
      listShardInfo(body({ resourceVersion: '1' }, [{ metadata: { name: 'x', annotations: { shardInfo: 'no' } } }])),
    ).toBeUndefined();
    expect(listShardInfo(body({ resourceVersion: '1' }, [{ shardInfo: { selector: 'item' } }]))).toBeUndefined();
  });
});
