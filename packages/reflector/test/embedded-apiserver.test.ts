/**
 * The integration layer: our reflector, with a @kubernetes/client-node 1.4 `KubeConfig`, against the
 * embedded apiserver from `@reconcile-loop/testing` over real loopback HTTP, with its fault injection.
 *
 * Real HTTP means real time. Every wait is bounded and event-driven (the reflector's next event, or
 * the server's `waitForRequests` / `waitForWatches`); nothing sleeps. The server and the reflector
 * agree that a second lasts {@link SECOND_MS} ms: the server's `timeoutSecondsScaleMs` and the
 * reflector's clock are scaled alike, so watch timeouts, idle timeouts and backoffs keep their real
 * proportions and the file finishes in a couple of seconds.
 */
import { createServer, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema, type Pod } from '@reconcile-loop/k8s-types';
import { ObjectStore, type SourceEvent } from '@reconcile-loop/object-store';
import type { ApiServer, ApiServerOptions } from '@reconcile-loop/testing';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { kubeReflector, podReflector, type ReflectorOptions } from '../src/index.js';
import { fastClock, kubeConfigFor, onCleanup, runCleanups, server, tapOf, WAIT_MS, within } from './embedded-helpers.js';

const NS = 'pool-a';

afterEach(runCleanups);

/**
 * A server seeded with three engine pods in {@link NS} (label `pool=engines`), one pod without the
 * label and one in another namespace (both out of scope), and a pod reflector on it.
 */
async function setup(
  options: { server?: ApiServerOptions; reflector?: Partial<ReflectorOptions<Pod>>; beforeOpen?: (s: ApiServer) => void } = {},
) {
  const s = await server(options.server);
  s.seedPods(3, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
  s.createPod({ metadata: { name: 'sidecar', namespace: NS, labels: { app: 'other' } } });
  s.createPod({ metadata: { name: 'engine-x', namespace: 'elsewhere', labels: { pool: 'engines' } } });
  options.beforeOpen?.(s);
  const logger = recordingLogger();
  const reflector = podReflector({
    kubeConfig: kubeConfigFor(s),
    namespace: NS,
    labelSelector: 'pool',
    clock: fastClock,
    random: () => 0,
    logger,
    ...options.reflector,
  });
  const { tap, controller } = tapOf<Pod>(reflector);
  return { server: s, reflector, tap, controller, logger };
}

function keysOf(event: SourceEvent<Pod> | undefined): string[] {
  if (event?.type !== 'replace') throw new Error(`expected a replace, got ${event?.type ?? 'nothing'}`);
  return [...event.objects.keys()].sort();
}

function summary(event: SourceEvent<Pod>): string {
  return event.type === 'replace'
    ? `replace ${[...event.objects.keys()].sort().join(',')}`
    : `${event.type} ${event.type !== 'release' && event.key}`;
}

const SEEDED = ['pool-a/engine-0', 'pool-a/engine-1', 'pool-a/engine-2'];

describe('reflector over real HTTP against the embedded apiserver', () => {
  it('[k8s_reflector: Reflector] the initial LIST is a replace of the seeded pods in scope; ADDED/MODIFIED/DELETED frames become upserts and deletes (embedded apiserver)', async () => {
    const { server: s, reflector, tap } = await setup();

    const listing = await tap.next('the listing');
    expect(keysOf(listing)).toEqual(SEEDED);
    expect(reflector.resourceVersion).toBe(String(s.revision));
    const engine0 = listing.type === 'replace' ? listing.objects.get('pool-a/engine-0') : undefined;
    expect(engine0?.metadata.labels).toEqual({ pool: 'engines' });
    expect(engine0?.metadata.uid).toBe(s.getPod(NS, 'engine-0')?.metadata.uid);

    s.createPod({ metadata: { name: 'engine-3', namespace: NS, labels: { pool: 'engines' } } }); // ADDED
    s.kubelet.bind(NS, 'engine-0', 'node-a'); // MODIFIED
    s.deletePod(NS, 'engine-1'); // unbound: MODIFIED with a deletionTimestamp (grace 0), then DELETED
    s.createPod({ metadata: { name: 'engine-y', namespace: 'elsewhere', labels: { pool: 'engines' } } }); // out of scope
    s.updatePod(NS, 'engine-2', (pod) => {
      delete pod.metadata.labels!['pool']; // leaves the selector: the server sends DELETED
    });

    const seen = [
      await tap.next('ADDED'),
      await tap.next('MODIFIED'),
      await tap.next('the terminating MODIFIED'),
      await tap.next('DELETED'),
      await tap.next('the selector exit'),
    ];
    expect(seen.map(summary)).toEqual([
      'upsert pool-a/engine-3',
      'upsert pool-a/engine-0',
      'upsert pool-a/engine-1',
      'delete pool-a/engine-1',
      'delete pool-a/engine-2',
    ]);
    const bound = seen[1];
    expect(bound?.type === 'upsert' && bound.object.spec.nodeName).toBe('node-a');
    expect(bound?.type === 'upsert' && bound.object.metadata.resourceVersion).toBe(
      s.getPod(NS, 'engine-0')?.metadata.resourceVersion,
    );
    expect(reflector.resourceVersion).toBe(String(s.revision));
    expect(s.requestCounts()).toMatchObject({ list: 1, watch: 1 });
    expect(tap.untaken).toEqual([]);
  });

  it('[k8s_reflector: Reflector] a burst of frames, many to a socket read and some spanning reads, arrives intact: each upsert carries exactly what was written (embedded apiserver)', async () => {
    const { server: s, tap } = await setup();
    await tap.next('the listing');
    const writes = 300;
    // Notes from 0 to ~40 KB: the watch's read buffer (128 KiB) holds many small frames, and a large one spans reads.
    const note = (i: number): string => `${i}:${String.fromCharCode(97 + (i % 26)).repeat((i * 7919) % 40_000)}`;
    for (let i = 0; i < writes; i++) {
      s.updatePod(NS, `engine-${i % 3}`, (pod) => {
        pod.metadata.annotations = { note: note(i) };
      });
    }
    for (let i = 0; i < writes; i++) {
      const event = await tap.next(`write ${i}`);
      expect(event.type === 'upsert' && event.key).toBe(`pool-a/engine-${i % 3}`);
      if (event.type === 'upsert' && event.object.metadata.annotations['note'] !== note(i))
        throw new Error(`write ${i} arrived as ${event.object.metadata.annotations['note']?.slice(0, 40)}…`);
    }
    expect(tap.untaken).toEqual([]);
  });

  it('[k8s_reflector: ListAndWatch → Run → LIST again] a watch the server ends at timeoutSeconds is reopened from the cursor without a LIST (embedded apiserver)', async () => {
    // timeoutSeconds=2 is 100 ms on this server: every watch ends cleanly and is reopened.
    const { server: s, reflector, tap } = await setup({ reflector: { watchTimeoutSeconds: 2 } });
    expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);

    await s.waitForRequests('watch', 3, WAIT_MS); // two reopens after the server's timeouts
    expect(s.requestCounts().list).toBe(1);
    expect(reflector.stats).toMatchObject({ lists: 1, relists: 0, watchFailures: 0 });
    // Reopened from the cursor: a watch from "" or "0" would have re-sent ADDED for every pod.
    expect(tap.untaken).toEqual([]);

    s.kubelet.bind(NS, 'engine-2', 'node-b');
    expect(summary(await tap.next('the change after the reopens'))).toBe('upsert pool-a/engine-2');
    expect(s.requestCounts().list).toBe(1);
  });

  it('[k8s_reflector: Bookmarks] bookmarks advance the cursor past writes out of scope, so a reopen after compaction needs no relist (embedded apiserver)', async () => {
    const { server: s, reflector, tap } = await setup({ server: { bookmarkIntervalMs: 20 } });
    expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);
    const listedAt = reflector.resourceVersion;

    s.createPod({ metadata: { name: 'engine-z', namespace: 'elsewhere', labels: { pool: 'engines' } } }); // no frame for us
    const target = String(s.revision);
    expect(listedAt).not.toBe(target);
    // The only signal a bookmark gives is the cursor itself: poll it, bounded.
    await vi.waitFor(() => expect(reflector.resourceVersion).toBe(target), { timeout: WAIT_MS, interval: 5 });
    expect(reflector.stats.bookmarks).toBeGreaterThanOrEqual(1);
    expect(tap.untaken).toEqual([]);

    // History up to the bookmark's revision is gone; the reopen from the bookmarked cursor still works.
    s.compact();
    s.dropWatches();
    await s.waitForRequests('watch', 2, WAIT_MS);
    await s.waitForWatches(1, WAIT_MS); // an expired cursor would get an ERROR frame, never an open watch
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    expect(summary(await tap.next('the change after the reopen'))).toBe('upsert pool-a/engine-0');
    expect(s.requestCounts().list).toBe(1);
    expect(reflector.stats.relists).toBe(0);
  });

  it('[k8s_reflector: An ERROR frame reaching the consumer] compaction plus dropped watches: the in-band 410 relists, and a pod deleted meanwhile is synthesised as a delete by the store (embedded apiserver)', async () => {
    const { server: s, reflector, tap } = await setup();
    const store = new ObjectStore<Pod, string>({ keyMap: (pod) => pod.metadata.labels['pool'] });
    const listing = await tap.next('the listing');
    store.apply(listing);
    expect(store.keys().sort()).toEqual(SEEDED);
    await s.waitForWatches(1, WAIT_MS);

    // The reflector misses the deletion: its watch is stalled (the DELETED frame is held back), then
    // history is compacted past its cursor and the watch is dropped, the buffered frame with it.
    expect(s.stallWatches()).toBe(1);
    s.deletePod(NS, 'engine-1');
    s.compact();
    expect(s.dropWatches()).toBe(1);

    const relisted = await tap.next('the relist');
    expect(keysOf(relisted)).toEqual(['pool-a/engine-0', 'pool-a/engine-2']);
    expect([...store.apply(relisted)]).toEqual(['engines']);
    expect(store.has('pool-a/engine-1')).toBe(false); // no ghost
    expect(s.requestCounts().list).toBe(2);
    expect(reflector.stats).toMatchObject({ lists: 2, relists: 1 });
    expect(reflector.resourceVersion).toBe(String(s.revision));

    s.kubelet.bind(NS, 'engine-2', 'node-b');
    const after = await tap.next('a change after the relist');
    expect(summary(after)).toBe('upsert pool-a/engine-2');
    store.apply(after);
    expect(store.get('pool-a/engine-2')?.spec.nodeName).toBe('node-b');
  });

  const watchFailures = [
    { row: 'ApiException shape', status: 410 as const, inBand: false, how: 'an HTTP 410 Expired' },
    { row: 'An ERROR frame reaching the consumer', status: 410 as const, inBand: true, how: 'an in-band 410 ERROR frame' },
    { row: 'IsTooLargeResourceVersion', status: 504 as const, inBand: false, how: 'an HTTP 504 ResourceVersionTooLarge' },
    {
      row: 'IsTooLargeResourceVersion',
      status: 504 as const,
      inBand: true,
      how: 'an in-band 504 ResourceVersionTooLarge ERROR frame',
    },
  ];
  for (const { row, status, inBand, how } of watchFailures) {
    it(`[k8s_reflector: ${row}] ${how} on the WATCH relists and the stream goes on (embedded apiserver)`, async () => {
      const { server: s, reflector, tap, logger } = await setup();
      expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);
      await s.waitForWatches(1, WAIT_MS);

      s.failNext({ verb: 'watch', status, inBand });
      s.dropWatches(); // the reopen meets the failure

      expect(keysOf(await tap.next('the relist'))).toEqual(SEEDED);
      expect(s.requestCounts()).toMatchObject({ list: 2, watch: 2 });
      expect(reflector.stats).toMatchObject({ lists: 2, relists: 1 });
      const why = logger.entries.find((e) => e.message.includes('relisting'));
      expect(why?.fields['code']).toBe(status);
      if (status === 504) expect(why?.message).toContain('cursor too large');
      else expect(why?.message).toContain('cursor expired');

      s.kubelet.bind(NS, 'engine-1', 'node-a');
      expect(summary(await tap.next('a change after the relist'))).toBe('upsert pool-a/engine-1');
    });
  }

  it('[k8s_reflector: BackoffUntil] a LIST failing with HTTP 500 is retried with a doubling backoff and the stream survives (embedded apiserver)', async () => {
    const {
      server: s,
      reflector,
      tap,
      logger,
    } = await setup({
      reflector: { retry: { initialMs: 1_000, maxMs: 8_000 } },
      beforeOpen: (srv) => srv.failNext({ verb: 'list', status: 500, times: 2 }),
    });

    expect(keysOf(await tap.next('the listing after two failures'))).toEqual(SEEDED);
    expect(s.requestCounts().list).toBe(3);
    expect(reflector.stats).toMatchObject({ lists: 3, listFailures: 2, relists: 0 });
    const failures = logger.entries.filter((e) => e.message.startsWith('LIST failed'));
    expect(failures.map((e) => [e.level, e.fields['retryDelayMs']])).toEqual([
      ['warn', 1_000],
      ['debug', 2_000], // the same failure again: not logged loudly twice
    ]);
    expect(failures[0]?.fields['err']).toMatchObject({
      code: 'RL_KUBE_API_ERROR',
      statusCode: 500,
      status: { reason: 'InternalError' },
    });

    s.kubelet.bind(NS, 'engine-0', 'node-a');
    expect(summary(await tap.next('a change on the watch'))).toBe('upsert pool-a/engine-0');
    expect(tap.ended).toBe(false);
  });

  it('[k8s_reflector: watchHandler per-event metadata failure] a malformed frame is skipped and the same watch keeps delivering (embedded apiserver)', async () => {
    const { server: s, reflector, tap, logger } = await setup();
    expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);
    await s.waitForWatches(1, WAIT_MS);

    expect(s.injectMalformedFrame()).toBe(1);
    s.kubelet.bind(NS, 'engine-0', 'node-a'); // written after the bad line, on the same connection

    expect(summary(await tap.next('the frame after the bad one'))).toBe('upsert pool-a/engine-0');
    expect(reflector.stats).toMatchObject({ skippedFrames: 1, watches: 1, lists: 1, watchFailures: 0 });
    expect(s.requestCounts()).toMatchObject({ list: 1, watch: 1 });
    expect(logger.entries.some((e) => e.message.startsWith('skipped a watch frame with an unreadable envelope'))).toBe(true);
  });

  it('[k8s_reflector: deviation, idle timeout] a stalled watch is torn down after timeoutSeconds + idleGraceMs and reopened from the cursor (embedded apiserver)', async () => {
    // 4 s timeout (200 ms here) + 1 s grace (50 ms here): the stalled watch never ends on its own.
    const { server: s, reflector, tap } = await setup({ reflector: { watchTimeoutSeconds: 4, idleGraceMs: 1_000 } });
    expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);
    await s.waitForWatches(1, WAIT_MS);

    expect(s.stallWatches()).toBe(1);
    s.kubelet.bind(NS, 'engine-1', 'node-a'); // held back by the stall; replayed by the reopened watch

    const replayed = await tap.next('the change replayed after the idle timeout');
    expect(summary(replayed)).toBe('upsert pool-a/engine-1');
    expect(replayed.type === 'upsert' && replayed.object.spec.nodeName).toBe('node-a');
    expect(reflector.stats).toMatchObject({ idleTimeouts: 1, watches: 2, lists: 1, relists: 0 });
    expect(s.requestCounts().list).toBe(1);
    await s.waitForWatches((open) => open === 1, WAIT_MS); // the stalled connection was closed by the client
  });

  it('[k8s_reflector: deviation, prompt stop] aborting with a watch open ends the stream and closes the watch on the server (embedded apiserver)', async () => {
    const { server: s, tap, controller } = await setup();
    expect(keysOf(await tap.next('the listing'))).toEqual(SEEDED);
    await s.waitForWatches(1, WAIT_MS);

    controller.abort();
    await within(tap.done, 'the stream to end after the abort', 1_000);
    expect(tap.error).toBeUndefined();
    await s.waitForWatches((open) => open === 0, WAIT_MS);
    expect(s.requestCounts()).toMatchObject({ list: 1, watch: 1 });
  });

  it('[k8s_reflector: deviation, prompt stop] aborting while the LIST is still connecting ends the stream promptly (a loopback server that accepts and never answers)', async () => {
    const sockets: Socket[] = [];
    let accepted: () => void = () => {};
    const acceptedOnce = new Promise<void>((resolve) => (accepted = resolve));
    const silent = createServer((socket) => {
      sockets.push(socket);
      accepted();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onCleanup(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    const { port } = silent.address() as { port: number };
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'silent', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'silent', cluster: 'silent', user: 'u' }],
      currentContext: 'silent',
    });
    const reflector = podReflector({ kubeConfig, namespace: NS, clock: fastClock });
    const { tap, controller } = tapOf<Pod>(reflector);

    await within(acceptedOnce, 'the LIST connection');
    const closed = new Promise<void>((resolve) => sockets[0]!.once('close', () => resolve()));
    controller.abort();
    await within(tap.done, 'the stream to end after the abort', 1_000);
    expect(tap.events).toEqual([]);
    expect(tap.error).toBeUndefined();
    await within(closed, 'the client to close the LIST connection', 1_000);
    expect(reflector.stats).toMatchObject({ lists: 1, listFailures: 0, watches: 0 });
  });

  it('[k8s_reflector: Reflector] a custom resource registered on the server streams through kubeReflector with an objectSchema schema (embedded apiserver)', async () => {
    const s = await server();
    const ref = s.registerResource({ group: 'miles.io', version: 'v1alpha1', kind: 'TrainerCell', plural: 'trainercells' });
    const cell = (name: string, replicas: number) => ({
      apiVersion: 'miles.io/v1alpha1',
      kind: 'TrainerCell',
      metadata: { name, namespace: NS, labels: { pool: 'trainers' } },
      spec: { replicas },
    });
    s.createObject(ref, cell('cell-0', 2));
    const schema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
    const reflector = kubeReflector({
      kubeConfig: kubeConfigFor(s),
      resource: { group: 'miles.io', version: 'v1alpha1', plural: 'trainercells' },
      schema,
      namespace: NS,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<z.output<typeof schema>>(reflector);

    const listing = await tap.next('the listing');
    expect(listing.type === 'replace' && [...listing.objects.entries()].map(([k, o]) => [k, o.spec.replicas])).toEqual([
      ['pool-a/cell-0', 2],
    ]);

    s.createObject(ref, cell('cell-1', 1));
    s.updateObject(ref, NS, 'cell-0', (o) => {
      (o['spec'] as { replicas: number }).replicas = 3;
    });
    s.deleteObject(ref, NS, 'cell-1');
    const added = await tap.next('ADDED');
    const modified = await tap.next('MODIFIED');
    const deleted = await tap.next('DELETED');
    expect(added.type === 'upsert' && [added.key, added.object.spec.replicas]).toEqual(['pool-a/cell-1', 1]);
    expect(
      modified.type === 'upsert' && [modified.key, modified.object.spec.replicas, modified.object.metadata.generation],
    ).toEqual(['pool-a/cell-0', 3, 2]);
    expect(deleted).toEqual({ type: 'delete', key: 'pool-a/cell-1' });
    expect(reflector.resourceVersion).toBe(String(s.revision));
    expect(s.requestCounts()).toMatchObject({ list: 1, watch: 1 });
  });
});
