import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema, podResource, podSchema } from '@reconcile-loop/k8s-types';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  addFinalizer,
  apply,
  applyStatus,
  createIfAbsent,
  deleteIfPresent,
  EventRecorder,
  isConflict,
  isInvalid,
  isNotFound,
  KubeClient,
  patchStatus,
  removeFinalizer,
  type KubeObject,
} from './all.js';

// The writes a reconciler needs, over real HTTP against the embedded apiserver, each raced by a
// second real client where a race is the point: both clients' mutations must survive.

const cellResource = { group: 'example.io', version: 'v1', plural: 'cellsets', kind: 'CellSet' };
const configMaps = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
const cellSchema = objectSchema({
  spec: z.object({ replicas: z.number() }),
  status: z.record(z.string(), z.number()).optional(),
});

let server: ApiServer;

beforeEach(async () => {
  server = await startApiServer();
  server.registerResource({ group: 'example.io', version: 'v1', kind: 'CellSet', plural: 'cellsets' });
  server.createNamespace('ns');
});

afterEach(async () => {
  await server.close();
});

/** A client of its own (its own connection pool and limiter), as a second process would have. */
function newClient(): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  return new KubeClient({ kubeConfig: kc, rateLimit: false });
}

/** Any-order backoff that outlasts a busy race: conflicts clear at once, so tiny steps suffice. */
const raceBackoff = { retry: { initialMs: 1, maxMs: 1, factor: 1, jitter: 1 }, attempts: 100 };

describe('[kube_client: UpdateStatus with RetryOnConflict] patchStatus raced by a second real client over HTTP', () => {
  it('two clients each bump their own status counter 15 times through patchStatus (optimistic-lock merge patch); both end at 15, and conflicts happened', async () => {
    await newClient()
      .resource(cellResource)
      .inNamespace('ns')
      .create({ metadata: { name: 'race' }, spec: { replicas: 1 } });
    const bump = (field: string) => async () => {
      const cells = newClient().resource(cellResource, cellSchema).inNamespace('ns');
      let conflicts = 0;
      for (let i = 0; i < 15; i++) {
        const result = await patchStatus(
          cells,
          'race',
          (current) => ({ [field]: (current.status?.[field] ?? 0) + 1 }),
          raceBackoff,
        );
        conflicts += result.attempts - 1;
      }
      return conflicts;
    };
    const conflicts = await Promise.all([bump('a')(), bump('b')()]);
    expect((await newClient().resource(cellResource, cellSchema).inNamespace('ns').get('race')).status).toEqual({ a: 15, b: 15 });
    expect(conflicts[0]! + conflicts[1]!).toBeGreaterThan(0);
  });
});

describe('[kube_client: controllerutil.AddFinalizer] finalizers raced by a second real client over HTTP', () => {
  it('two clients add 8 finalizers each concurrently: all 16 survive; they remove them concurrently: none is left and the held delete completes', async () => {
    const owner = newClient().resource(cellResource, cellSchema).inNamespace('ns');
    await owner.create({ metadata: { name: 'f' }, spec: { replicas: 1 } });
    const names = (who: string) => Array.from({ length: 8 }, (_, i) => `example.io/${who}-${i}`);
    let conflicts = 0;
    const each = (who: string, change: typeof addFinalizer) => async () => {
      const cells = newClient().resource(cellResource, cellSchema).inNamespace('ns');
      for (const finalizer of names(who)) {
        const result = await change(cells, 'f', finalizer, raceBackoff);
        expect(result.changed).toBe(true);
        conflicts += result.attempts - 1;
      }
    };
    await Promise.all([each('a', addFinalizer)(), each('b', addFinalizer)()]);
    expect(conflicts).toBeGreaterThan(0); // the race was real: 409s were retried
    expect([...((await owner.get('f')).metadata.finalizers ?? [])].sort()).toEqual([...names('a'), ...names('b')].sort());
    expect((await deleteIfPresent(owner, 'f')).outcome).toBe('deleted');
    await Promise.all([each('a', removeFinalizer)(), each('b', removeFinalizer)()]);
    expect(isNotFound(await owner.get('f').catch((e: unknown) => e))).toBe(true);
  });
});

describe('[kube_client: create-if-absent] raced by a second real client over HTTP', () => {
  it('ten concurrent createIfAbsent calls from two clients: exactly one creates, all return the same object', async () => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      createIfAbsent(newClient().resource(configMaps).inNamespace('ns'), {
        metadata: { name: 'anchor', labels: { by: String(i) } },
      }),
    );
    const results = await Promise.all(calls);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.object.metadata.uid)).size).toBe(1);
  });
});

describe('[kube_client: delete-if-present] resourceVersion preconditions over HTTP', () => {
  it('a delete pinned to a resourceVersion another writer moved past is precondition-failed and deletes nothing; pinned to the current one it deletes', async () => {
    const pods = newClient().resource(podResource, podSchema).inNamespace('ns');
    const seen = await pods.create({ metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    const moved = await newClient()
      .resource(podResource, podSchema)
      .inNamespace('ns')
      .patch('p', { type: 'merge', body: { metadata: { labels: { moved: 'yes' } } } });
    const stale = await deleteIfPresent(pods, 'p', { preconditions: { resourceVersion: seen.metadata.resourceVersion } });
    expect(stale.outcome).toBe('precondition-failed');
    expect(stale.outcome === 'precondition-failed' && stale.error.message).toMatch(/resourceVersion|ResourceVersion/);
    expect((await pods.get('p')).metadata.uid).toBe(seen.metadata.uid);
    expect(
      (
        await deleteIfPresent(pods, 'p', {
          preconditions: { resourceVersion: moved.metadata.resourceVersion },
          gracePeriodSeconds: 0,
        })
      ).outcome,
    ).toBe('deleted');
  });
});

describe('[kube_client: server-side apply] apply with a field manager over HTTP', () => {
  it('another manager changing an owned field without force is a 409 naming the owner; force takes it over; apply() strips a read-back object; applyStatus owns the status fields it sets', async () => {
    const client = newClient();
    const cms = client.resource(configMaps).inNamespace('ns');
    await cms.apply(
      { metadata: { name: 'ssa' }, data: { shared: 'from-a', onlyA: '1' } },
      { fieldManager: 'manager-a', force: false },
    );
    const conflict = await cms
      .apply({ metadata: { name: 'ssa' }, data: { shared: 'from-b' } }, { fieldManager: 'manager-b', force: false })
      .catch((e: unknown) => e);
    expect(isConflict(conflict)).toBe(true);
    expect((conflict as Error).message).toMatch(/manager-a/);
    const forced = await cms.apply(
      { metadata: { name: 'ssa' }, data: { shared: 'from-b' } },
      { fieldManager: 'manager-b', force: true },
    );
    expect(forced['data']).toEqual({ shared: 'from-b', onlyA: '1' });
    // manager-a applies again without `shared`: it owns nothing there any more, so nothing is removed that b owns
    const reapplied = await cms.apply(
      { metadata: { name: 'ssa' }, data: { onlyA: '2' } },
      { fieldManager: 'manager-a', force: false },
    );
    expect(reapplied['data']).toEqual({ shared: 'from-b', onlyA: '2' });
    const raw = await cms.raw.get('ssa');
    const viaHelper = await apply(
      cms,
      { ...raw, data: { shared: 'from-b', added: 'yes' } },
      { fieldManager: 'manager-b', force: true },
    );
    expect(viaHelper['data']).toEqual({ shared: 'from-b', onlyA: '2', added: 'yes' });

    const cells = client.resource(cellResource, cellSchema).inNamespace('ns');
    await cells.create({ metadata: { name: 'web' }, spec: { replicas: 2 } });
    const withStatus = await applyStatus(cells, 'web', { ready: 1 }, { fieldManager: 'cellset-controller', force: true });
    expect([withStatus.status, withStatus.spec.replicas]).toEqual([{ ready: 1 }, 2]);
  });
});

describe('[kube_client: strategic merge patch] over HTTP', () => {
  it('a strategic merge patch of pod containers merges by name; the same body as a merge patch replaces the list', async () => {
    const pods = newClient().resource(podResource).inNamespace('ns');
    await pods.create({
      metadata: { name: 'smp' },
      spec: {
        containers: [
          { name: 'a', image: 'busybox:1' },
          { name: 'b', image: 'busybox:1' },
        ],
      },
    });
    const body = { spec: { containers: [{ name: 'b', image: 'busybox:2' }] } };
    const patched = await pods.patch('smp', { type: 'strategic', body });
    expect(
      (patched['spec'] as { containers: { name: string; image: string }[] }).containers.map((c) => `${c.name}=${c.image}`),
    ).toEqual(['a=busybox:1', 'b=busybox:2']);
    // a pod's containers are immutable but for images: replacing the list is refused
    expect(isInvalid(await pods.patch('smp', { type: 'merge', body }).catch((e: unknown) => e))).toBe(true);
  });
});

describe('[kube_client: EventBroadcaster aggregation] and [kube_client: EventAggregator] Events over HTTP', () => {
  it('repeats become one Event whose series.count is written; 12 distinct similar notes become 9 Events and one combined Event', async () => {
    const client = newClient();
    const cell = await client
      .resource(cellResource)
      .inNamespace('ns')
      .create({ metadata: { name: 'evented' }, spec: { replicas: 1 } });
    const regarding = { apiVersion: 'example.io/v1', kind: 'CellSet', name: 'evented', namespace: 'ns', uid: cell.metadata.uid };
    const recorder = new EventRecorder({
      client,
      reportingController: 'example.io/cellset-controller',
      reportingInstance: 'it-0',
    });
    for (let i = 0; i < 4; i++) {
      recorder.event(regarding, { type: 'Normal', reason: 'Scaled', action: 'CreatePod', note: 'replicas 3' });
      await recorder.flush();
    }
    for (let i = 0; i < 12; i++)
      recorder.event(regarding, {
        type: 'Warning',
        reason: 'FailedCreate',
        action: 'CreatePod',
        note: `pod evented-${i}: quota exceeded`,
      });
    await recorder.close();
    const events = (
      await client.resource({ group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' }).inNamespace('ns').list()
    ).items as KubeObject[];
    const scaled = events.filter((e) => e['reason'] === 'Scaled');
    expect(scaled).toHaveLength(1);
    expect(scaled[0]).toMatchObject({
      series: { count: 4 },
      reportingController: 'example.io/cellset-controller',
      reportingInstance: 'it-0',
      regarding: { uid: cell.metadata.uid },
    });
    const failed = events
      .filter((e) => e['reason'] === 'FailedCreate')
      .map((e) => [e['note'], (e['series'] as { count: number } | undefined)?.count]);
    expect(failed).toHaveLength(10);
    expect(failed).toContainEqual(['(combined from similar events): pod evented-9: quota exceeded', 3]);
    expect(recorder.stats).toMatchObject({ recorded: 16, created: 11, combined: 3, droppedRejected: 0, droppedSpam: 0 });
  });
});
