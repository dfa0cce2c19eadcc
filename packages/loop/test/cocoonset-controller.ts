import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { objectSchema, type Pod } from '@reconcile-loop/k8s-types';
import { kubeReflector, podReflector } from '@reconcile-loop/reflector';
import { ReconcileLoop, TerminalError, generationChanged, type Clock } from '@reconcile-loop/loop';
import { z } from 'zod';

/** The custom resource: `example.com/v1` `CocoonSet`, a set of `spec.replicas` identical pods. */
export const cocoonSetSchema = objectSchema({ spec: z.object({ replicas: z.number().int() }) });
export type CocoonSet = z.output<typeof cocoonSetSchema>;

/** Someone else (a previous process, another replica) may have written first: a create is a 409, a delete a 404. */
const unless = (status: number) => (error: unknown) => {
  if ((error as { code?: unknown }).code !== status) throw error;
};

/** One loop, two sources: the CocoonSets (`For`) and the pods they own (`Owns`). */
export function cocoonSetController(kubeConfig: KubeConfig, namespace: string, clock?: Clock) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const timing = clock === undefined ? {} : { clock, random: () => 0 };
  return new ReconcileLoop({
    source: kubeReflector({
      name: 'cocoonsets',
      kubeConfig,
      namespace,
      resource: { group: 'example.com', version: 'v1', plural: 'cocoonsets' },
      schema: cocoonSetSchema,
      ...timing,
    }),
    keyMap: (_set, key) => key, // a parent is its own object: key `namespace/name`
    updateFilter: generationChanged, // status writes to the CocoonSet change nothing we read
    secondary: {
      pods: {
        source: podReflector({ name: 'pods', kubeConfig, namespace, ...timing }),
        owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' }, // by controller reference
      },
    },
    concurrency: 4,
    retry: { budget: { delaysMs: [0, 1_000, 5_000, 30_000] } }, // then dead-letter until the spec changes
    reconcile: async (key, { parent, owned, expect }) => {
      const pods = [...owned('pods').values()];
      // Deleted (or being deleted in the foreground): its pods still map to it; the garbage collector
      // removes them. Never create pods for a parent on its way out.
      if (parent === undefined || parent.metadata.deletionTimestamp !== undefined) return;
      const { replicas } = parent.spec;
      if (replicas < 0) throw new TerminalError(`${key}: spec.replicas is ${replicas}; retrying cannot fix that`);
      const live = pods.filter((pod: Pod) => pod.metadata.deletionTimestamp === undefined);
      const names = new Set(live.map((pod) => pod.metadata.name));
      for (let i = 0, missing = replicas - live.length; missing > 0; i++) {
        const name = `${parent.metadata.name}-${i}`;
        if (names.has(name)) continue;
        missing -= 1;
        await core.createNamespacedPod({
          namespace,
          body: {
            metadata: {
              name,
              labels: { cocoonset: parent.metadata.name },
              ownerReferences: [
                { apiVersion: 'example.com/v1', kind: 'CocoonSet', name: parent.metadata.name, uid: parent.metadata.uid!, controller: true, blockOwnerDeletion: true },
              ],
            },
            spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
          },
        }).catch(unless(409));
        // Read your writes: this parent is not reconciled again until the pod cache holds the pod
        // (kube-controller-manager's ExpectCreations), so a stale run cannot count it missing.
        expect('pods').creations(`${namespace}/${name}`);
      }
      const extra = live.sort((a, b) => b.metadata.name.localeCompare(a.metadata.name)).slice(0, Math.max(0, live.length - replicas));
      for (const pod of extra) {
        await core.deleteNamespacedPod({ namespace, name: pod.metadata.name }).catch(unless(404));
        expect('pods').deletions(`${namespace}/${pod.metadata.name}`);
      }
    },
  });
}
