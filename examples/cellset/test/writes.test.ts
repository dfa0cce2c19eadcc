/**
 * The CellSet controller's writes against the embedded apiserver: read-your-writes with a stale pod
 * cache (the watch stalled), the status write racing a real concurrent writer over HTTP, the Events
 * it records (events.k8s.io/v1) and the metrics it exposes.
 */
import type { Condition } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { REPORTING_CONTROLLER } from '../src/controller.js';
import { startKubelet } from '../demo/kubelet.js';
import { stopController } from '../demo/run.js';
import { NS, cellSet, harness, onCleanup, ref, until, type Harness } from './helpers.js';

describe('CellSet controller: writes (embedded apiserver)', () => {
  it('[cellset: no double-create] a reconcile triggered while the pod cache has not seen the creates does not run until it has: each slot is created once', async () => {
    let server: { stallWatches(): void } | undefined;
    // Right after the first create is answered, the watches stall: the cache cannot see the second create.
    const h = await harness({ taps: { afterPodCreate: (_pod, total) => void (total === 1 && server?.stallWatches()) } });
    server = h.server;
    h.server.createObject(ref, cellSet('web', 2));
    await h.controller.loop.start();
    await until(
      'both pods created on the server',
      () => h.podNames('web').length === 2 && h.controller.loop.health().inFlight.length === 0,
    );
    const creates = h.server.requestCounts().create;
    const runs = h.controller.loop.health().reconciles.succeeded;
    for (let i = 0; i < 3; i++) h.controller.loop.enqueue(`${NS}/web`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(h.controller.loop.stores.pods.size).toBeLessThan(2); // the cache is stale
    expect(h.controller.loop.health().reconciles.succeeded).toBe(runs); // ...so the set is not reconciled
    expect(h.server.requestCounts().create).toBe(creates);

    h.server.unstallWatches();
    await until('status written from the cache that saw both pods', () => h.get('web')?.status?.['replicas'] === 2);
    expect(h.decided('CreatedPod')).toHaveLength(2);
    expect(h.podNames('web')).toEqual(['web-0', 'web-1']);
  });

  it("[cellset: rebuild told only when made] a failed pod another writer deletes first: the controller's delete finds nothing (404), so no PodFailed Event and no rebuild counted, and the slot is rebuilt from the pod's DELETED event", async () => {
    let server: Harness['server'] | undefined;
    const h = await harness({
      taps: { beforePodDelete: (pod) => void server?.deletePod(NS, pod, { gracePeriodSeconds: 0 }) }, // someone else was faster
    });
    server = h.server;
    const failed = new Set<string>();
    const kubelet = startKubelet({
      server: h.server,
      namespace: NS,
      intervalMs: 5,
      fate: (pod) => (failed.size === 0 && failed.add(pod.metadata.uid ?? '') ? 'fail' : 'ready'), // the first pod fails
    });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 1));
    await h.controller.loop.start();
    await until('web-0 rebuilt and ready', () => {
      const pod = h.pods('web').find((p) => p.metadata.name === 'web-0');
      return pod !== undefined && !failed.has(pod.metadata.uid ?? '') && h.get('web')?.status?.['readyReplicas'] === 1;
    });
    expect(h.decided('PodFailed')).toEqual([]);
    expect(h.decided('CreatedPod')).toHaveLength(2);
    const text = await h.controller.registry.metrics();
    expect(text).not.toMatch(/cellset_pod_rebuilds_total\{[^}]*\} [1-9]/);
  });

  it("[cellset: status conflict retry] a concurrent writer changes the status between the controller's read and write: 409, re-read, re-applied; both writes survive", async () => {
    let raced = false;
    let writer: KubeClient | undefined;
    const h = await harness({
      taps: {
        // Between the controller's read and its write: another controller (a dashboard) writes its
        // own condition through the status subresource.
        beforeStatusWrite: async () => {
          if (raced || writer === undefined) return;
          raced = true;
          const conditions = [
            { type: 'Reviewed', status: 'True', reason: 'Dashboard', lastTransitionTime: '2026-01-01T00:00:00Z' },
          ];
          await writer
            .resource(ref)
            .inNamespace(NS)
            .patch('web', { type: 'merge', body: { status: { conditions } } }, { subresource: 'status' });
        },
      },
    });
    const kc = new KubeConfig();
    kc.loadFromString(h.server.kubeconfig());
    writer = new KubeClient({ kubeConfig: kc });
    const kubelet = startKubelet({ server: h.server, namespace: NS });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 1));
    await h.controller.loop.start();
    await until(
      'ready, and the write that said so settled',
      () => h.get('web')?.status?.['readyReplicas'] === 1 && h.controller.loop.health().inFlight.length === 0,
    );

    expect(raced).toBe(true);
    const types = (h.get('web')!.status!['conditions'] as Array<{ type: string }>).map((c) => c.type);
    // Keyed by type: the dashboard's condition keeps its place and ours are appended, as SetStatusCondition does.
    expect(types).toEqual(['Reviewed', 'Ready', 'SlotsDeadLettered']);
    expect(await h.controller.registry.getSingleMetricAsString('cellset_status_write_conflicts_total')).toContain(
      'cellset_status_write_conflicts_total{namespace="default",cellset="web"} 1',
    );
    expect(h.controller.loop.health().reconciles.failed).toBe(0);
  });

  it('[cellset: condition times] a condition keeps its lastTransitionTime while its status holds (a new message, a new generation) and moves when the status changes', async () => {
    let wall = Date.UTC(2026, 0, 1, 12, 0, 0);
    const h = await harness({ controller: { wallClock: () => wall } });
    const ready = () => (h.get('web')?.status?.['conditions'] as Condition[] | undefined)?.find((c) => c.type === 'Ready');
    const generation = () => h.get('web')?.status?.['observedGeneration'];
    h.server.createObject(ref, cellSet('web', 1));
    await h.controller.loop.start();
    await until('Ready False at generation 1', () => ready()?.status === 'False' && generation() === 1);
    expect(ready()?.lastTransitionTime).toBe('2026-01-01T12:00:00Z');

    wall += 60_000; // no kubelet: the pods stay Pending, Ready stays False
    h.server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 2));
    await until('status at generation 2', () => generation() === 2 && ready()?.message === '0/2 pods ready');
    expect(ready()).toMatchObject({ status: 'False', observedGeneration: 2, lastTransitionTime: '2026-01-01T12:00:00Z' });

    wall += 60_000;
    const kubelet = startKubelet({ server: h.server, namespace: NS });
    onCleanup(async () => kubelet.stop());
    await until('Ready True', () => ready()?.status === 'True');
    expect(ready()?.lastTransitionTime).toBe('2026-01-01T12:02:00Z');
  });

  it('[cellset: events] every decision is an events.k8s.io/v1 Event regarding the CellSet, related to the pod, from the controller', async () => {
    const h = await harness();
    const kubelet = startKubelet({
      server: h.server,
      namespace: NS,
      fate: (pod) => (pod.metadata.name === 'web-1' ? 'fail' : 'ready'),
    });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 2));
    await h.controller.loop.start();
    await until('web-1 rebuilt once, its second rebuild waiting', () => h.decided('RebuildBackoff', 'web-1').length === 1);
    h.server.deleteObject(ref, NS, 'web');
    await until(
      'the set gone and its removal recorded',
      () => h.get('web') === undefined && h.decided('FinalizerRemoved').length === 1,
    );
    await stopController(h.controller, { graceMs: 2_000 }); // flushes the recorder

    const events = h.server.listObjects({ group: 'events.k8s.io', version: 'v1', plural: 'events' }, NS) as unknown as Array<{
      reason: string;
      type: string;
      action: string;
      reportingController: string;
      regarding: { kind: string; name: string };
      related?: { kind: string; name: string };
    }>;
    const reasons = new Set(events.map((e) => e.reason));
    for (const reason of ['FinalizerAdded', 'CreatedPod', 'PodFailed', 'RebuildBackoff', 'DeletingPods', 'FinalizerRemoved'])
      expect(reasons, reason).toContain(reason);
    expect(
      events.every(
        (e) => e.reportingController === REPORTING_CONTROLLER && e.regarding.kind === 'CellSet' && e.regarding.name === 'web',
      ),
    ).toBe(true);
    expect(events.find((e) => e.reason === 'PodFailed')).toMatchObject({
      type: 'Normal',
      action: 'RebuildPod',
      related: { kind: 'Pod', name: 'web-1' },
    });
    expect(h.controller.events.stats.droppedRejected).toBe(0);
  });

  it('[cellset: metrics] the registry carries controller-runtime\'s series under controller="cellset" and the controller\'s own counters', async () => {
    const h = await harness();
    h.server.createObject(ref, cellSet('web', 3));
    await h.controller.loop.start();
    await until('three pods and status', () => h.get('web')?.status?.['replicas'] === 3);
    const text = await h.controller.registry.metrics();
    expect(text).toMatch(/^controller_runtime_reconcile_total\{controller="cellset",result="success"\} [1-9]\d*$/m);
    expect(text).toMatch(/^workqueue_adds_total\{.*name="cellset".*\} [1-9]\d*$/m);
    expect(text).toMatch(/^reconcile_loop_objects_cached\{controller="cellset",source="pods"\} 3$/m);
    expect(text).toContain('cellset_pods_created_total{namespace="default",cellset="web"} 3');
    expect(text).toContain('# TYPE cellset_slots_dead_lettered_total counter');
  });
});
