/**
 * Metadata-only reflectors over real loopback HTTP against the embedded apiserver, which serves
 * `PartialObjectMetadata` as kube-apiserver does (the conformance suite compares the two): every
 * path a reflector takes — a paged LIST, a WATCH, a 410 relist, bookmarks, watch-list — carries
 * `apiVersion`, `kind` and `metadata` only, and the store holds exactly that.
 */
import { podResource, type PartialObjectMetadata } from '@reconcile-loop/k8s-types';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { afterEach, describe, expect, it } from 'vitest';
import { metadataReflector } from '../src/index.js';
import { expectStoreEqualsFreshList, fastClock, kubeConfigFor, runCleanups, server, tapOf, WAIT_MS } from './embedded-helpers.js';

const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };
const OWNER = { apiVersion: 'miles.io/v1', kind: 'CellSet', name: 'cells', uid: 'uid-cells', controller: true };

afterEach(runCleanups);

const isReplace = (e: SourceEvent<PartialObjectMetadata>): boolean => e.type === 'replace';

/** Every cached object is the metadata representation, and nothing but it. */
function expectMetadataOnly(objects: Iterable<PartialObjectMetadata>): void {
  for (const o of objects) {
    expect(o.kind).toBe('PartialObjectMetadata');
    expect(o.apiVersion).toBe('meta.k8s.io/v1');
    expect(Object.keys(o).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
  }
}

async function seeded(options: Parameters<typeof server>[0] = {}) {
  const s = await server(options);
  s.seedPods(5, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
  for (let i = 0; i < 5; i++)
    s.updatePod(NS, `engine-${i}`, (p) => {
      p.metadata.ownerReferences = [OWNER];
      // One finalizer, on a pod no test deletes (a finalizer holds a delete back).
      if (i === 0) p.metadata.finalizers = ['miles.io/cleanup'];
    });
  return s;
}

describe('metadata-only reflector over real HTTP (embedded apiserver)', () => {
  it('[k8s_reflector: Metadata-only] a paged LIST then a WATCH carry PartialObjectMetadata only: the listing, an update and a delete reach the store as metadata (owner references, finalizers, labels, generation kept)', async () => {
    const s = await seeded();
    const reflector = metadataReflector({
      kubeConfig: kubeConfigFor(s),
      resource: podResource,
      ...SCOPE,
      listPageSize: 2,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<PartialObjectMetadata>(reflector);
    const listing = await tap.next('the listing');
    expect(listing.type).toBe('replace');
    expect(reflector.stats.listPages).toBe(3);
    expectMetadataOnly(tap.store.snapshot().values());
    const first = tap.store.snapshot().get('pool-a/engine-0')!;
    expect(first.metadata).toMatchObject({
      name: 'engine-0',
      namespace: NS,
      labels: { pool: 'engines' },
      ownerReferences: [OWNER],
      finalizers: ['miles.io/cleanup'],
    });
    expect(first.metadata.uid).toBeTypeOf('string');
    expect(first.metadata.creationTimestamp).toBeTypeOf('number');

    await s.waitForWatches(1, WAIT_MS);
    s.updatePod(NS, 'engine-1', (p) => {
      p.metadata.labels = { ...p.metadata.labels, phase: 'draining' };
    });
    const update = await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-1', 'the update');
    expect(update.type === 'upsert' ? update.object.metadata.labels : {}).toMatchObject({ phase: 'draining' });
    s.deletePod(NS, 'engine-2', { gracePeriodSeconds: 0 });
    await tap.until((e) => e.type === 'delete' && e.key === 'pool-a/engine-2', 'the delete');
    expectMetadataOnly(tap.store.snapshot().values());
    expect(s.requestCounts()).toMatchObject({ list: 3 });
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: Metadata-only] a WATCH answered 410 after a compaction relists as metadata; the missed delete is synthesised; bookmarks advance the cursor', async () => {
    const s = await seeded({ bookmarkIntervalMs: 100 });
    const reflector = metadataReflector({
      kubeConfig: kubeConfigFor(s),
      resource: podResource,
      ...SCOPE,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<PartialObjectMetadata>(reflector);
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    // A bookmark: an unrelated write moves the revision, the bookmark carries it to the cursor.
    s.createPod({ metadata: { name: 'other', namespace: NS } });
    const revision = String(s.revision);
    await expect.poll(() => reflector.resourceVersion, { timeout: WAIT_MS }).toBe(revision);
    expect(reflector.stats.bookmarks).toBeGreaterThan(0);

    s.stallWatches(); // the DELETED is held back, then compacted away: the reopen gets a 410
    s.deletePod(NS, 'engine-3', { gracePeriodSeconds: 0 });
    s.compact();
    s.dropWatches();
    const relist = await tap.until(isReplace, 'the relist after the 410');
    expect(relist.type === 'replace' ? relist.objects.has('pool-a/engine-3') : true).toBe(false);
    expect(reflector.stats.relists).toBe(1);
    expect(tap.store.has('pool-a/engine-3')).toBe(false);
    expectMetadataOnly(tap.store.snapshot().values());
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it("[k8s_reflector: Metadata-only] initialList 'watch-list' streams the listing as PartialObjectMetadata, ends it at the initial-events-end bookmark and goes on watching on the same stream", async () => {
    const s = await seeded();
    const reflector = metadataReflector({
      kubeConfig: kubeConfigFor(s),
      resource: podResource,
      ...SCOPE,
      initialList: 'watch-list',
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<PartialObjectMetadata>(reflector);
    const listing = await tap.next('the streamed listing');
    expect(listing.type === 'replace' ? listing.objects.size : 0).toBe(5);
    expectMetadataOnly(tap.store.snapshot().values());
    s.updatePod(NS, 'engine-4', (p) => {
      p.metadata.annotations = { note: 'x' };
    });
    const update = await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-4', 'the update');
    expect(update.type === 'upsert' ? update.object.metadata.annotations : {}).toEqual({ note: 'x' });
    expect(s.requestCounts()).toMatchObject({ list: 0, watch: 1 });
    expect(reflector.stats).toMatchObject({ watchLists: 1, lists: 0, watchListFallbacks: 0 });
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });
});
