import { KubeApiError, WatchFrameTooLargeError } from '@reconcile-loop/kube-client';
/**
 * Fail loudly, never stall — over real loopback HTTP against the embedded apiserver and its fault
 * injection: permanent rejection, a 403 that heals, a hung LIST, a rejected cursor, a skipped frame
 * healed by a relist, an oversized frame, and a poison custom resource. Every scenario ends with
 * the consumer's store equal to a fresh LIST minus the quarantined keys.
 */
import { objectSchema, podResource, type Pod } from '@reconcile-loop/k8s-types';
import { isPermanentSourceError } from '@reconcile-loop/object-store';
import type { ApiServer } from '@reconcile-loop/testing';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { kubeReflector, ListTimeoutError, podReflector, type ReflectorOptions } from '../src/index.js';
import {
  expectStoreEqualsFreshList,
  fastClock,
  kubeConfigFor,
  runCleanups,
  server,
  tapOf,
  WAIT_MS,
  within,
} from './embedded-helpers.js';

afterEach(runCleanups);

const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };
const SEEDED = ['pool-a/engine-0', 'pool-a/engine-1', 'pool-a/engine-2'];

async function setup(options: { reflector?: Partial<ReflectorOptions<Pod>>; beforeOpen?: (s: ApiServer) => void } = {}) {
  const s = await server();
  s.seedPods(3, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
  options.beforeOpen?.(s);
  const logger = recordingLogger();
  const reflector = podReflector({
    kubeConfig: kubeConfigFor(s),
    ...SCOPE,
    clock: fastClock,
    random: () => 0,
    logger,
    ...options.reflector,
  });
  const { tap } = tapOf<Pod>(reflector);
  return { server: s, reflector, tap, logger };
}

const isReplace = (event: { type: string }): boolean => event.type === 'replace';

describe('reflector failures over real HTTP (embedded apiserver)', () => {
  it('[k8s_reflector: Permanent vs transient failures] a first LIST answered 400 (a label selector the server cannot parse) ends the stream with the Status and the request (embedded apiserver)', async () => {
    const { tap, reflector, server: s } = await setup({ reflector: { labelSelector: 'pool in (' } });
    await within(tap.done, 'the stream to end');
    expect(isPermanentSourceError(tap.error)).toBe(true);
    expect(tap.error).toMatchObject({
      code: 'RL_REFLECTOR_LIST_REJECTED',
      statusCode: 400,
      status: { code: 400, reason: 'BadRequest' },
    });
    expect((tap.error as Error).message).toContain('labelSelector=pool+in+%28');
    expect((tap.error as { status: { message: string } }).status.message).toBeTruthy();
    expect(s.requestCounts().list).toBe(1);
    expect(reflector.health()).toMatchObject({ listed: false, consecutiveFailures: 1, lastError: tap.error });

    // The injected 400 (the server's own Status body) ends it just the same.
    const injected = await setup({ beforeOpen: (srv) => srv.failNext({ verb: 'list', status: 400 }) });
    await within(injected.tap.done, 'the stream to end');
    expect(injected.tap.error).toMatchObject({
      code: 'RL_REFLECTOR_LIST_REJECTED',
      permanent: true,
      status: { code: 400, reason: 'BadRequest' },
    });
  });

  it('[k8s_reflector: Permanent vs transient failures] a LIST answered 403 three times is retried; health shows the Forbidden Status meanwhile; then it syncs (embedded apiserver)', async () => {
    const {
      tap,
      reflector,
      server: s,
      logger,
    } = await setup({
      reflector: { retry: { initialMs: 2_000, maxMs: 30_000 } },
      beforeOpen: (srv) => srv.failNext({ verb: 'list', status: 403, times: 3 }),
    });
    await vi.waitFor(() => expect(reflector.health().consecutiveFailures).toBeGreaterThanOrEqual(1), {
      timeout: WAIT_MS,
      interval: 5,
    });
    const { lastError, listed } = reflector.health();
    expect(listed).toBe(false);
    expect(lastError).toBeInstanceOf(KubeApiError);
    expect(lastError).toMatchObject({ statusCode: 403, status: { code: 403, reason: 'Forbidden' }, verb: 'list' });

    const listing = await tap.next('the listing after the 403s');
    expect([...(listing.type === 'replace' ? listing.objects.keys() : [])].sort()).toEqual(SEEDED);
    expect(s.requestCounts().list).toBe(4);
    expect(reflector.health()).toMatchObject({ listed: true, lastError: undefined, consecutiveFailures: 0 });
    expect(logger.entries.filter((e) => e.level === 'error' && e.fields['code'] === 403)).toHaveLength(1);
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: LIST timeout] a LIST that hangs is cut at listTimeoutMs, counted, retried after the backoff, and the reflector syncs (embedded apiserver)', async () => {
    const {
      tap,
      reflector,
      server: s,
    } = await setup({
      reflector: { listTimeoutMs: 4_000 }, // 200 ms here
      beforeOpen: (srv) => srv.failNext({ verb: 'list', status: 'hang' }),
    });
    await tap.next('the listing after the hung LIST');
    expect(reflector.stats).toMatchObject({ lists: 2, listTimeouts: 1, listFailures: 1 });
    expect(s.requestCounts().list).toBe(2);
    expect(reflector.health().lastError).toBeUndefined();

    // A relist that hangs too: after a 410 the relist hangs, is cut, and the retry heals the store.
    s.failNext({ verb: 'list', status: 'hang' });
    await s.waitForWatches(1, WAIT_MS);
    s.stallWatches(); // the DELETED is held back, then compacted away: the reopen gets a 410
    s.deletePod(NS, 'engine-1');
    s.compact();
    s.dropWatches();
    await tap.until(isReplace, 'the relist after the hung relist');
    expect(reflector.stats.listTimeouts).toBe(2);
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
    expect(tap.store.has('pool-a/engine-1')).toBe(false);
  });

  it('[k8s_reflector: Rejected cursor] a bookmark with resourceVersion "abc" becomes the cursor; the server answers the reopened WATCH as kube-apiserver 1.35 does (HTTP 500, "resourceVersion: Invalid value"); the reflector drops the cursor and relists (embedded apiserver)', async () => {
    const { tap, reflector, server: s, logger } = await setup();
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    s.injectWatchFrame({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: 'abc' } } });
    await vi.waitFor(() => expect(reflector.resourceVersion).toBe('abc'), { timeout: WAIT_MS, interval: 5 });
    // Changes the reflector will miss on the dead watch.
    s.stallWatches();
    s.deletePod(NS, 'engine-0');
    s.createPod({ metadata: { name: 'engine-9', namespace: NS, labels: { pool: 'engines' } } });
    s.dropWatches();

    const relisted = await tap.until(isReplace, 'the relist after the rejected cursor');
    expect([...(relisted.type === 'replace' ? relisted.objects.keys() : [])].sort()).toEqual([
      'pool-a/engine-1',
      'pool-a/engine-2',
      'pool-a/engine-9',
    ]);
    const rejected = logger.entries.find((e) => e.message.includes('cursor rejected'));
    expect(rejected?.fields).toMatchObject({ code: 500 });
    expect(String(rejected?.fields['message'])).toMatch(/^resourceVersion: Invalid value: "abc"/); // which version it cannot parse
    expect(s.requestCounts().list).toBe(2);
    expect(reflector.resourceVersion).not.toBe('abc');
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: Heal relist after a skipped frame] a skipped frame advanced the cursor past an update; the scheduled heal relist restores it within seconds (embedded apiserver)', async () => {
    const { tap, reflector, server: s } = await setup({ reflector: { retry: { initialMs: 4_000, maxMs: 30_000 } } }); // heal after 4 "s" = 200 ms
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    const next = String(s.revision + 1);
    // A frame with a readable cursor but an unreadable type: skipped, and the cursor moves to `next`.
    s.injectWatchFrame({
      type: 'Modified',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'engine-0', namespace: NS, resourceVersion: next } },
    });
    await vi.waitFor(() => expect(reflector.resourceVersion).toBe(next), { timeout: WAIT_MS, interval: 2 });
    // The real update at `next` is lost: held back on the stalled watch, which is then dropped, and
    // the reopen from `next` does not replay it. Only the heal relist can bring it back.
    s.stallWatches();
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    expect(String(s.revision)).toBe(next);
    s.dropWatches();

    await tap.until(isReplace, 'the heal relist');
    expect(reflector.stats).toMatchObject({ skippedFrames: 1, healRelists: 1 });
    expect(tap.store.get('pool-a/engine-0')?.spec.nodeName).toBe('node-a');
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: Frame size cap] a frame over maxFrameBytes tears the watch down (closed on the server) and the reflector relists (embedded apiserver)', async () => {
    const { tap, reflector, server: s, logger } = await setup({ reflector: { maxFrameBytes: 64 * 1024 } });
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    s.injectMalformedFrame(`{"type":"MODIFIED","object":{"metadata":{"annotations":{"x":"${'y'.repeat(1024 * 1024)}`); // 1 MB, never a whole frame
    s.kubelet.bind(NS, 'engine-2', 'node-b');

    await tap.until(isReplace, 'the relist after the oversized frame');
    expect(reflector.stats).toMatchObject({ relists: 1, watchFailures: 1 });
    const refused = logger.entries.find((e) => e.message.startsWith('watch frame over maxFrameBytes'));
    expect(refused?.fields['err']).toBeInstanceOf(WatchFrameTooLargeError);
    expect(refused?.level).toBe('warn');
    expect(tap.store.get('pool-a/engine-2')?.spec.nodeName).toBe('node-b');
    await s.waitForWatches((open) => open === 1, WAIT_MS); // the old connection closed, the new one open
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });

  it('[k8s_reflector: Poison objects quarantined] a custom resource the server accepts but the zod view rejects is quarantined; others keep flowing; a cached one turning poison keeps its last good version; fixed it enters, deleted it leaves (embedded apiserver)', async () => {
    const s = await server();
    const ref = s.registerResource({ group: 'miles.io', version: 'v1alpha1', kind: 'TrainerCell', plural: 'trainercells' });
    const resource = { group: 'miles.io', version: 'v1alpha1', plural: 'trainercells' };
    const cell = (name: string, replicas: unknown) => ({
      apiVersion: 'miles.io/v1alpha1',
      kind: 'TrainerCell',
      metadata: { name, namespace: NS },
      spec: { replicas },
    });
    const setReplicas = (name: string, replicas: unknown) =>
      s.updateObject(ref, NS, name, (o) => {
        (o['spec'] as { replicas: unknown }).replicas = replicas;
      });
    s.createObject(ref, cell('cell-0', 1));
    s.createObject(ref, cell('cell-bad', 'two'));
    const schema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
    const logger = recordingLogger();
    const reflector = kubeReflector({
      kubeConfig: kubeConfigFor(s),
      resource,
      schema,
      namespace: NS,
      clock: fastClock,
      random: () => 0,
      logger,
    });
    const { tap } = tapOf<z.output<typeof schema>>(reflector);
    const quarantinedKeys = () => reflector.health().quarantined.map((q) => q.key);

    const listing = await tap.next('the listing');
    expect([...(listing.type === 'replace' ? listing.objects.keys() : [])]).toEqual(['pool-a/cell-0']);
    expect(reflector.health().quarantined).toEqual([
      expect.objectContaining({
        key: 'pool-a/cell-bad',
        resourceVersion: s.getObject(ref, NS, 'cell-bad')?.metadata.resourceVersion,
        issues: [expect.stringMatching(/^spec\.replicas: /)],
      }),
    ]);
    expect(logger.entries.find((e) => e.level === 'error')?.fields).toMatchObject({
      key: 'pool-a/cell-bad',
      issues: [expect.stringMatching(/^spec\.replicas/)],
    });

    s.createObject(ref, cell('cell-1', 2)); // others keep flowing
    expect(await tap.next('cell-1')).toMatchObject({ type: 'upsert', key: 'pool-a/cell-1' });
    setReplicas('cell-0', 'many'); // a cached object turns poison: quarantined, no event, its last good version stays
    setReplicas('cell-bad', 3); // fixed: it enters (the same watch, so after cell-0's frame)
    expect(await tap.next('cell-bad entering')).toMatchObject({
      type: 'upsert',
      key: 'pool-a/cell-bad',
      object: { spec: { replicas: 3 } },
    });
    expect(quarantinedKeys()).toEqual(['pool-a/cell-0']);
    expect(tap.store.snapshot().get('pool-a/cell-0')).toMatchObject({ spec: { replicas: 1 } });
    s.deleteObject(ref, NS, 'cell-0'); // deleted while quarantined: it leaves the quarantine and the store
    expect(await tap.next('cell-0 deleted')).toEqual({ type: 'delete', key: 'pool-a/cell-0' });
    expect(quarantinedKeys()).toEqual([]);

    setReplicas('cell-1', 'x');
    s.createObject(ref, cell('cell-2', 1));
    expect(await tap.next('cell-2')).toMatchObject({ type: 'upsert', key: 'pool-a/cell-2' });
    expect(quarantinedKeys()).toEqual(['pool-a/cell-1']);
    expect(tap.store.snapshot().get('pool-a/cell-1')).toMatchObject({ spec: { replicas: 2 } }); // the last good version
    expect(reflector.stats).toMatchObject({ lists: 1, relists: 0, watches: 1, invalidObjects: 4 }); // cell-bad listed, cell-0 turned, cell-0's DELETED payload, cell-1 turned
    expect(tap.ended).toBe(false);
    await expectStoreEqualsFreshList(tap, s, resource, { namespace: NS }, quarantinedKeys());
  });

  it("[k8s_reflector: Retry-After honoured] a LIST answered 429 with Retry-After waits the server's delay, not the first backoff (embedded apiserver)", async () => {
    const {
      tap,
      reflector,
      server: s,
      logger,
    } = await setup({
      reflector: { retry: { initialMs: 1_000, maxMs: 30_000 } },
      beforeOpen: (srv) => srv.failNext({ verb: 'list', status: 429, retryAfterSeconds: 6 }),
    });
    await tap.next('the listing after the 429');
    const failure = logger.entries.find((e) => e.message.startsWith('LIST failed'));
    expect(failure?.fields).toMatchObject({ code: 429, retryDelayMs: 6_000 });
    expect(reflector.stats.listFailures).toBe(1);
    await expectStoreEqualsFreshList(tap, s, podResource, SCOPE);
  });
});
