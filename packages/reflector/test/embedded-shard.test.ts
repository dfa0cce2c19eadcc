/**
 * A sharded reflector against the embedded apiserver over real loopback HTTP. With the
 * `ShardedListAndWatch` gate off the server ignores `shardSelector` (as kube-apiserver does): every
 * object comes back and the LIST has no `metadata.shardInfo`, so those cases prove the client-side
 * fallback end to end, on the LIST (bytes path), the WATCH and the watch-list. With the gate on
 * (the embedded default) the server filters and the client drops nothing.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { inShardRanges, shardHash, type ShardRange } from '@reconcile-loop/primitives';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { podReflector, type InitialListMode } from '../src/index.js';
import { fastClock, kubeConfigFor, runCleanups, server, tapOf } from './embedded-helpers.js';

const NS = 'shards';
const LOWER: readonly ShardRange[] = [{ start: '0x0000000000000000', end: '0x8000000000000000' }];
const UPPER: readonly ShardRange[] = [{ start: '0x8000000000000000', end: '0x10000000000000000' }];

afterEach(runCleanups);

async function setup(initialList: InitialListMode, shardedListAndWatch = false) {
  const s = await server({ shardedListAndWatch });
  const pods = s.seedPods(24, { namespace: NS, namePrefix: 'p' });
  const logger = recordingLogger();
  const reflector = podReflector({
    kubeConfig: kubeConfigFor(s),
    namespace: NS,
    clock: fastClock,
    random: () => 0,
    logger,
    initialList,
    shard: { field: 'uid', ranges: LOWER },
  });
  const { tap } = tapOf<Pod>(reflector);
  const keysIn = (ranges: readonly ShardRange[], list = pods) =>
    list
      .filter((p) => inShardRanges(shardHash(p.metadata.uid ?? ''), ranges))
      .map((p) => `${NS}/${p.metadata.name}`)
      .sort();
  return { server: s, pods, reflector, tap, logger, keysIn };
}

describe('Reflector: sharded source against the embedded apiserver (selector ignored)', () => {
  for (const mode of ['list', 'watch-list'] as const) {
    it(`[reflector: Shard fallback] ${mode}: the store holds only the owned range, filtered on the client, warned once; a later pod outside the range never arrives`, async () => {
      const h = await setup(mode);
      expect(h.keysIn(LOWER).length).toBeGreaterThan(3); // 24 random uids: both halves are populated
      expect(h.keysIn(UPPER).length).toBeGreaterThan(3);
      await h.tap.until((e) => e.type === 'replace', 'the listing');
      expect(h.tap.store.keys().sort()).toEqual(h.keysIn(LOWER));
      const shard = h.reflector.health().shard!;
      expect(shard.filter).toBe('client');
      expect(shard.dropped).toBe(h.keysIn(UPPER).length);
      const more = Array.from({ length: 8 }, (_, i) => h.server.createPod({ metadata: { name: `q${i}`, namespace: NS } }));
      const last = more.filter((p) => inShardRanges(shardHash(p.metadata.uid ?? ''), LOWER)).at(-1);
      expect(last).toBeDefined();
      await h.tap.until((e) => e.type === 'upsert' && e.key === `${NS}/${last!.metadata.name}`, 'the last owned new pod');
      // Frames arrive in creation order and `last` is the last owned one: every owned pod is in, no other.
      expect(h.tap.store.keys().sort()).toEqual(h.keysIn(LOWER, [...h.pods, ...more]));
      expect(h.logger.entries.filter((e) => e.level === 'warn' && /filtering on the client/.test(e.message))).toHaveLength(1);
    });
  }

  for (const [mode, filter] of [
    ['list', 'server'],
    ['watch-list', 'unverified'],
  ] as const) {
    it(`[reflector: Shard fallback] gate on, ${mode}: the server filters (the LIST echoes the selector); the client drops nothing and holds the same range`, async () => {
      const h = await setup(mode, true);
      await h.tap.until((e) => e.type === 'replace', 'the listing');
      expect(h.tap.store.keys().sort()).toEqual(h.keysIn(LOWER));
      expect(h.reflector.health().shard).toMatchObject({ filter, dropped: 0 });
      expect(h.logger.entries.filter((e) => /filtering on the client/.test(e.message))).toEqual([]);
    });
  }

  it('[reflector: Reshard] reshard() against the embedded apiserver: the released keys leave through a release (no delete event), the newly owned ones arrive in the next listing', async () => {
    const h = await setup('list');
    await h.tap.until((e) => e.type === 'replace', 'the listing');
    h.reflector.reshard(UPPER);
    await h.tap.until((e) => e.type === 'release', 'the release');
    await h.tap.until((e) => e.type === 'replace', 'the listing of the new ranges');
    expect(h.tap.store.keys().sort()).toEqual(h.keysIn(UPPER));
    expect(h.tap.events.filter((e) => e.type === 'delete')).toEqual([]);
    expect(h.reflector.health().shard).toMatchObject({ ranges: UPPER, reshards: 1, filter: 'client' });
    expect(h.reflector.stats.reshardRelists).toBe(1);
  });
});
