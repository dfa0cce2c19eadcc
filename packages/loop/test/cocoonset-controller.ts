import { objectSchema, podResource, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import {
  createIfAbsent,
  deleteIfPresent,
  EventRecorder,
  KubeClient,
  patchStatus,
  type KubeApiError,
  type KubeConfigAuth,
} from '@reconcile-loop/kube-client';
import { isNotFound } from '@reconcile-loop/kube-client/errors';
import { kubeReflector, podReflector } from '@reconcile-loop/reflector';
import { ReconcileLoop, TerminalError, generationChanged, type Clock } from '@reconcile-loop/loop';
import { z } from 'zod';

/** The custom resource: `example.com/v1` `CocoonSet`, a set of `spec.replicas` identical pods. */
export const cocoonSetResource = { group: 'example.com', version: 'v1', plural: 'cocoonsets', kind: 'CocoonSet' };
const statusSchema = z.object({
  replicas: z.number().int(),
  readyReplicas: z.number().int(),
  observedGeneration: z.number().int(),
});
export const cocoonSetSchema = objectSchema({
  spec: z.object({ replicas: z.number().int() }),
  status: statusSchema.partial().optional(),
});
export type CocoonSet = z.output<typeof cocoonSetSchema>;
type Status = z.output<typeof statusSchema>;

const isReady = (pod: Pod) => pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
const sameStatus = (a: CocoonSet['status'], b: Status) =>
  a?.replicas === b.replicas && a?.readyReplicas === b.readyReplicas && a?.observedGeneration === b.observedGeneration;

/**
 * One loop, two sources: the CocoonSets (`For`) and the pods they own (`Owns`). `kubeConfig` is a
 * client-node `KubeConfig` (1.x or 2.x). Stop both: `await loop.stop(); await events.close()`.
 */
export function cocoonSetController(kubeConfig: KubeConfigAuth, namespace: string, clock?: Clock) {
  // One HTTP client for both reflectors' LIST/WATCH and every write (writes: 5 QPS, burst 10).
  const client = new KubeClient({ kubeConfig });
  const sets = client.resource(cocoonSetResource, cocoonSetSchema).inNamespace(namespace);
  const pods = client.resource(podResource, podSchema).inNamespace(namespace);
  const events = new EventRecorder({ client, reportingController: 'example.com/cocoonset-controller' });
  const timing = clock === undefined ? {} : { clock, random: () => 0 };
  const loop = new ReconcileLoop({
    source: kubeReflector({
      name: 'cocoonsets',
      kubeClient: client,
      namespace,
      resource: cocoonSetResource,
      schema: cocoonSetSchema,
      ...timing,
    }),
    keyMap: (_set, key) => key, // a parent is its own object: key `namespace/name`
    updateFilter: generationChanged, // our own status writes do not re-drive the parent
    secondary: {
      pods: {
        source: podReflector({ name: 'pods', kubeClient: client, namespace, ...timing }),
        owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' }, // by controller reference
      },
    },
    controller: { concurrency: 4 },
    retry: { budget: { delaysMs: [0, 1_000, 5_000, 30_000] } }, // then dead-letter until the spec changes
    reconcile: async (key, { parent, owned, expect, signal }) => {
      const mine = [...owned('pods').values()];
      // Deleted (or being deleted in the foreground): its pods still map to it; the garbage collector
      // removes them. Never create pods for a parent on its way out.
      if (parent === undefined || parent.metadata.deletionTimestamp !== undefined) return;
      const { name, uid, generation } = parent.metadata;
      if (parent.spec.replicas < 0)
        throw new TerminalError(`${key}: spec.replicas is ${parent.spec.replicas}; retrying cannot fix that`);
      const regarding = { apiVersion: 'example.com/v1', kind: 'CocoonSet', name, namespace, uid };
      const live = mine.filter((pod) => pod.metadata.deletionTimestamp === undefined);
      const taken = new Set(mine.map((pod) => pod.metadata.name)); // a terminating pod holds its name until it is gone
      for (let i = 0, missing = parent.spec.replicas - live.length; missing > 0; i++) {
        const podName = `${name}-${i}`;
        if (taken.has(podName)) continue;
        // AlreadyExists is success (an earlier run or process created it); a pod that is not ours holds the name: skip it.
        const { created, object } = await createIfAbsent(
          pods,
          {
            metadata: {
              name: podName,
              labels: { cocoonset: name },
              ownerReferences: [
                { apiVersion: 'example.com/v1', kind: 'CocoonSet', name, uid: uid!, controller: true, blockOwnerDeletion: true },
              ],
            },
            spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
          },
          { signal },
        );
        if (!object.metadata.ownerReferences.some((ref) => ref.uid === uid && ref.controller === true)) continue;
        missing -= 1;
        // Read your writes: this parent is not reconciled again until the pod cache holds the pod
        // (kube-controller-manager's ExpectCreations), so a stale run cannot count it missing.
        expect('pods').creations(`${namespace}/${podName}`);
        if (created)
          events.event(regarding, {
            type: 'Normal',
            reason: 'SuccessfulCreate',
            action: 'CreatePod',
            note: `Created pod: ${podName}`,
          });
      }
      const extra = live
        .sort((a, b) => b.metadata.name.localeCompare(a.metadata.name))
        .slice(0, Math.max(0, live.length - parent.spec.replicas));
      for (const pod of extra) {
        // Pinned to the UID we saw: a newer pod that took the name since is left alone. NotFound is success.
        const { outcome } = await deleteIfPresent(pods, pod.metadata.name, { preconditions: { uid: pod.metadata.uid }, signal });
        if (outcome === 'precondition-failed') continue;
        expect('pods').deletions(`${namespace}/${pod.metadata.name}`);
        if (outcome === 'deleted')
          events.event(regarding, {
            type: 'Normal',
            reason: 'SuccessfulDelete',
            action: 'DeletePod',
            note: `Deleted pod: ${pod.metadata.name}`,
          });
      }
      // Status from what the caches hold, with client-go's RetryOnConflict: each attempt GETs the
      // CocoonSet and compares with the live status, never the cached one (it may predate our last
      // write), and writes only a difference, optimistically locked by the resourceVersion it read.
      const status: Status = {
        replicas: live.length,
        readyReplicas: live.filter(isReady).length,
        observedGeneration: generation ?? 0,
      };
      await patchStatus(sets, name, (current) => (sameStatus(current.status, status) ? undefined : status), { signal }).catch(
        (error: unknown) => {
          // Its GET found nothing: deleted meanwhile, no status to report. A 404 on the write itself
          // (a CRD without the status subresource) is a failure, retried and then dead-lettered.
          if (!isNotFound(error) || (error as KubeApiError).verb !== 'get') throw error;
        },
      );
    },
  });
  return { loop, events };
}
