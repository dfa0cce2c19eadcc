/**
 * Watch-list and paginated LIST over real loopback HTTP against the embedded apiserver, which
 * serves watch-list as kube-apiserver 1.35 does (proven by the conformance suite): the default
 * reflector streams its initial list and goes on watching on the same stream; a server with the
 * WatchList feature off makes it fall back to a LIST and stay there; LISTs are read in pages.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { podResource } from '@reconcile-loop/k8s-types';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { podReflector } from '../src/index.js';
import { expectStoreEqualsFreshList, fastClock, kubeConfigFor, runCleanups, server, tapOf } from './embedded-helpers.js';

const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };

afterEach(runCleanups);

describe('reflector watch-list over real HTTP (embedded apiserver)', () => {
  it("[k8s_reflector: Streaming initial list] initialList 'auto' over KubeApiClient syncs by watch-list: one WATCH, no LIST, writes flow on the same stream, the store equals a fresh LIST", async () => {
    const s = await server();
    s.seedPods(4, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    s.createPod({ metadata: { name: 'other', namespace: NS } });
    expect(podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE }).listingMode).toBe('list'); // the default
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      ...SCOPE,
      clock: fastClock,
      random: () => 0,
      initialList: 'auto',
    });
    expect(reflector.listingMode).toBe('watch-list');
    const { tap } = tapOf<Pod>(reflector);
    const listing = await tap.next('the streamed listing');
    expect(listing.type === 'replace' ? [...listing.objects.keys()].sort() : []).toEqual([
      'pool-a/engine-0',
      'pool-a/engine-1',
      'pool-a/engine-2',
      'pool-a/engine-3',
    ]);
    expect(reflector.resourceVersion).toBe(String(s.revision));
    s.createPod({ metadata: { name: 'engine-9', namespace: NS, labels: { pool: 'engines' } } });
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-0', 'the bind');
    expect(s.requestCounts()).toMatchObject({ list: 0, watch: 1 });
    expect(reflector.stats).toMatchObject({ watchLists: 1, watches: 1, lists: 0, watchListFallbacks: 0 });
    expect(reflector.health()).toMatchObject({ listed: true, streaming: true });
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: Streaming initial list fallback] a server with the WatchList feature off (422 on sendInitialEvents) gets a LIST at once, and every later listing is a LIST; the store equals a fresh LIST', async () => {
    const s = await server({ watchList: false });
    s.seedPods(3, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const logger = recordingLogger();
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      ...SCOPE,
      clock: fastClock,
      random: () => 0,
      logger,
      initialList: 'auto',
    });
    const { tap } = tapOf<Pod>(reflector);
    await tap.next('the listing');
    expect(reflector.watchListOff).toMatch(/refused by the server \(422\)/);
    expect(reflector.listingMode).toBe('list');
    expect(s.requestCounts()).toMatchObject({ list: 1 });
    expect(logger.entries.find((e) => e.level === 'warn')?.fields['message']).toMatch(
      /sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled/,
    );
    // A relist (the cursor compacted away) is a LIST too.
    s.createPod({ metadata: { name: 'engine-7', namespace: NS, labels: { pool: 'engines' } } });
    await tap.until((e) => e.type === 'upsert', 'the new pod');
    s.injectWatchFrame({
      type: 'ERROR',
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version',
      },
    });
    await tap.until((e) => e.type === 'replace', 'the relist after the in-band 410');
    expect(reflector.stats).toMatchObject({ watchLists: 1, watchListFallbacks: 1 });
    expect(s.requestCounts().list).toBe(2);
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it("[k8s_reflector: LIST pagination] a LIST is read in pages (limit + the server's continue tokens) and arrives as one replace at the first page's resourceVersion", async () => {
    const s = await server();
    s.seedPods(5, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      ...SCOPE,
      clock: fastClock,
      random: () => 0,
      initialList: 'list',
      listPageSize: 2,
    });
    const { tap } = tapOf<Pod>(reflector);
    const listing = await tap.next('the listing');
    expect(listing.type === 'replace' ? listing.objects.size : 0).toBe(5);
    expect(s.requestCounts().list).toBe(3);
    expect(reflector.stats).toMatchObject({ lists: 1, listPages: 3 });
    expect(reflector.resourceVersion).toBe(String(s.revision));
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });
});
