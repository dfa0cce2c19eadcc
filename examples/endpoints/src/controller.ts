/**
 * The wiring: Services (primary), the pods they select (controller-runtime's
 * `Watches(&Pod{}, EnqueueRequestsFromMapFunc(...))`) and the ConfigMaps they own (`Owns`), on a
 * manager's shared sources.
 *
 * No reconcile and no map scans a cache. Both directions are index queries on `ns/key=value`:
 * - a pod event costs O(labels of the pod × Services selecting on one of its pairs) for the map
 *   (run on the old and the new pod), and enqueues only the Services that select it;
 * - a Service's reconcile reads the pods carrying its selector's first pair in its namespace,
 *   O(those pods × pairs of the selector), and writes only when the ConfigMap's data differs.
 */
import { isDeepStrictEqual } from 'node:util';
import { isControlledBy, kinds, labelSelectorMatcher, type Pod } from '@reconcile-loop/k8s-types';
import { apply, deleteIfPresent } from '@reconcile-loop/kube-client';
import type { ReconcileLoop, ReconcileLoopOptions } from '@reconcile-loop/loop';
import type { Manager } from '@reconcile-loop/manager';
import {
  configMapName,
  desiredConfigMap,
  endpointsData,
  MANAGED_BY,
  MANAGER_NAME,
  namespacedPairs,
  podEndpoint,
  type ConfigMap,
  type Service,
} from './endpoints.js';

export interface EndpointsOptions {
  /** Watch one namespace; default every namespace. */
  readonly namespace?: string | undefined;
  /** The loop's metrics observer, e.g. `controllerMetrics({ registry })`. */
  readonly observer?: ReconcileLoopOptions<Service, string>['observer'];
}

export type EndpointsLoop = ReconcileLoop<Service, string, { pods: Pod; configmaps: ConfigMap }>;

export function endpointsController(manager: Manager, { namespace, observer }: EndpointsOptions = {}): EndpointsLoop {
  const configMaps = manager.client.resource(kinds.ConfigMap.resource);
  return manager.controller({
    controller: { name: 'endpoints' },
    source: manager.source({ ...kinds.Service, namespace }),
    keyMap: (_service, key) => key,
    // Services by each pair of their selector: "who may select a pod labelled app=web in ns".
    indexers: { selects: (s) => namespacedPairs(s.metadata.namespace, s.spec.selector) },
    secondary: {
      pods: {
        source: manager.source({ ...kinds.Pod, namespace }),
        // Run at event time on the new and the old pod against the Services' cache as it is then.
        keyMap: (pod, _key, { store }) => {
          const candidates = new Set(
            namespacedPairs(pod.metadata.namespace, pod.metadata.labels).flatMap((p) => store.indexKeys('selects', p)),
          );
          return [...candidates].filter((k) => selects(store.get(k), pod));
        },
        indexers: { label: (pod) => namespacedPairs(pod.metadata.namespace, pod.metadata.labels) },
        // A kubelet status write that keeps the pod's address changes nothing (a relabel that moves it always passes).
        updateFilter: (old, pod) => podEndpoint(old) !== podEndpoint(pod),
      },
      configmaps: {
        source: manager.source({ ...kinds.ConfigMap, namespace, labelSelector: `${MANAGED_BY}=${MANAGER_NAME}` }),
        owner: { kind: 'Service', apiVersion: 'v1' },
      },
    },
    observer,
    reconcile: async (_key, ctx) => {
      const service = ctx.parent;
      if (service === undefined) return; // deleted: its ConfigMap goes with it (owner reference, garbage collector)
      const ns = service.metadata.namespace ?? '';
      const [pair] = namespacedPairs(ns, service.spec.selector);
      const ours = [...ctx.owned('configmaps').values()].find((cm) => cm.metadata.name === configMapName(service));
      const handle = configMaps.inNamespace(ns);
      if (pair === undefined) {
        // The selector was removed: the Service selects nothing and wants no ConfigMap.
        if (ours !== undefined)
          await deleteIfPresent(handle, ours.metadata.name, { preconditions: { uid: ours.metadata.uid }, signal: ctx.signal });
        return;
      }
      const data = endpointsData(service, ctx.stores.pods.byIndex('label', pair).values())!;
      if (ours !== undefined && isControlledBy(ours, service) && isDeepStrictEqual(ours.data, data)) return;
      const applied = await apply(handle, desiredConfigMap(service, data), {
        fieldManager: MANAGER_NAME,
        force: true,
        signal: ctx.signal,
      });
      // A create the cache has not seen yet: hold this Service's next reconcile until it has (or the
      // expectations TTL passes), so an event in between does not apply the same ConfigMap twice.
      if (ours === undefined) ctx.expect('configmaps').creations(applied);
    },
  });
}

const selects = (service: Service | undefined, pod: Pod): boolean =>
  service?.spec.selector !== undefined &&
  service.metadata.namespace === pod.metadata.namespace &&
  labelSelectorMatcher({ matchLabels: service.spec.selector })(pod.metadata.labels);
