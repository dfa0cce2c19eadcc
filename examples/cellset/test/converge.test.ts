/**
 * The CellSet controller against the embedded apiserver over loopback HTTP: the finalizer, the
 * missing pods (deterministic slot names, controller owner references, the template hash), status,
 * scale down, the finalizer cleanup on delete, the Events and the metrics.
 */
import { describe, expect, it } from 'vitest';
import { FINALIZER, TEMPLATE_HASH_ANNOTATION } from '../src/api.js';
import { startKubelet } from '../demo/kubelet.js';
import { NS, cellSet, harness, onCleanup, ref, until } from './helpers.js';

describe('CellSet controller: converging (embedded apiserver)', () => {
  it('[cellset: create missing] adds the finalizer first, creates one pod per slot with a controller owner reference and the template hash, and writes status', async () => {
    const h = await harness();
    const kubelet = startKubelet({ server: h.server, namespace: NS });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 3));
    await h.controller.loop.start();
    await until('three ready pods and a Ready status', () => {
      const status = h.get('web')?.status;
      return status?.['readyReplicas'] === 3 && status['replicas'] === 3;
    });

    const set = h.get('web')!;
    expect(set.metadata.finalizers).toEqual([FINALIZER]);
    expect(h.podNames('web')).toEqual(['web-0', 'web-1', 'web-2']);
    const pod = h.server.getPod(NS, 'web-0')!;
    expect(pod.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'CellSet',
        name: 'web',
        controller: true,
        blockOwnerDeletion: true,
        uid: (h.server.getObject(ref, NS, 'web')!.metadata as { uid: string }).uid,
      }),
    ]);
    expect((pod.metadata.annotations as Record<string, string>)[TEMPLATE_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{10}$/);
    expect(set.status).toMatchObject({ observedGeneration: 1, replicas: 3, readyReplicas: 3 });
    expect((set.status!['conditions'] as Array<{ type: string; status: string }>).map((c) => [c.type, c.status])).toEqual([
      ['Ready', 'True'],
      ['SlotsDeadLettered', 'False'],
    ]);
    // The finalizer decision came before the first create.
    const reasons = h.decisions.map((d) => d.reason);
    expect(reasons.indexOf('FinalizerAdded')).toBeLessThan(reasons.indexOf('CreatedPod'));
    expect(
      h
        .decided('CreatedPod')
        .map((d) => d.pod)
        .sort(),
    ).toEqual(['web-0', 'web-1', 'web-2']);
    expect(h.controller.loop.health().reconciles.failed).toBe(0);
  });

  it("[cellset: update filter] the controller's own status and annotation writes do not re-trigger its reconcile; a spec edit does", async () => {
    const h = await harness();
    h.server.createObject(ref, cellSet('web', 1));
    await h.controller.loop.start();
    const quiet = () => {
      const health = h.controller.loop.health();
      return health.inFlight.length === 0 && health.queueDepth === 0 && health.retriesPending === 0;
    };
    await until('status written and the loop quiet', () => h.get('web')?.status?.['replicas'] === 1 && quiet());
    const runs = h.controller.loop.health().reconciles.succeeded;
    const writes = h.server.requestCounts().update + h.server.requestCounts().patch;
    h.server.updateObject(
      ref,
      NS,
      'web',
      (o) => void ((o['metadata'] as { labels?: Record<string, string> }).labels = { team: 'a' }),
    ); // metadata only
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(h.controller.loop.health().reconciles.succeeded).toBe(runs);
    expect(h.server.requestCounts().update + h.server.requestCounts().patch).toBe(writes);
    h.server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 2));
    await until(
      'a reconcile for generation 2, settled',
      () => h.get('web')?.status?.['observedGeneration'] === 2 && h.controller.loop.health().reconciles.succeeded > runs,
    );
  });

  it('[cellset: create missing] a deleted pod is recreated under its slot name; a scale-down deletes the slots the spec no longer names', async () => {
    const h = await harness();
    h.server.createObject(ref, cellSet('web', 3));
    await h.controller.loop.start();
    await until('three pods', () => h.podNames('web').length === 3);
    const uid = h.server.getPod(NS, 'web-1')!.metadata.uid;
    h.server.deletePod(NS, 'web-1');
    await until(
      'web-1 recreated',
      () => h.server.getPod(NS, 'web-1') !== undefined && h.server.getPod(NS, 'web-1')!.metadata.uid !== uid,
    );

    h.server.updateObject(ref, NS, 'web', (o) => void ((o['spec'] as { replicas: number }).replicas = 1));
    await until(
      'one pod left and status replicas 1 at generation 2',
      () =>
        h.podNames('web').length === 1 &&
        h.get('web')?.status?.['observedGeneration'] === 2 &&
        h.get('web')?.status?.['replicas'] === 1,
    );
    expect(h.podNames('web')).toEqual(['web-0']);
    expect(
      h
        .decided('ScaledDown')
        .map((d) => d.pod)
        .sort(),
    ).toEqual(['web-1', 'web-2']);
  });

  it('[cellset: finalizer cleanup] deleting the CellSet deletes its pods (graceful ones finished by the kubelet) and only then removes the finalizer: nothing is left', async () => {
    const h = await harness();
    const kubelet = startKubelet({ server: h.server, namespace: NS, finishDeleteMs: 100 });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 2));
    await h.controller.loop.start();
    await until('two ready pods', () => h.get('web')?.status?.['readyReplicas'] === 2);

    h.server.deleteObject(ref, NS, 'web'); // the finalizer holds it: deletionTimestamp set
    await until('pods terminating', () => h.pods('web').every((p) => p.metadata.deletionTimestamp !== undefined));
    // Bound pods terminate gracefully: the set keeps its finalizer while any pod remains.
    expect(h.get('web')?.metadata.finalizers).toEqual([FINALIZER]);
    await until('the set gone', () => h.get('web') === undefined);
    expect(h.pods('web')).toEqual([]);
    await until('the removal recorded', () => h.decided('FinalizerRemoved').length === 1); // the set goes before the response arrives
    const reasons = h.decisions.map((d) => d.reason);
    expect(reasons).toContain('DeletingPods');
    expect(reasons.at(-1)).toBe('FinalizerRemoved');
    expect(h.podNames('web')).toEqual([]);
  });
});
