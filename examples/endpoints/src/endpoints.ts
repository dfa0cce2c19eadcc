/**
 * What the controller wants, as pure functions of the cached objects: no client, no loop, no clock.
 * A Service with a selector gets a ConfigMap `<service>-endpoints` whose data is its Ready pods'
 * name → IP; a Service without one gets none (it selects nothing, as in Kubernetes).
 */
import {
  labelIndexValues,
  labelSelectorMatcher,
  setControllerReference,
  type KindView,
  type Pod,
} from '@reconcile-loop/k8s-types';

export type Service = KindView<'Service'>;
export type ConfigMap = KindView<'ConfigMap'>;

/** The label every ConfigMap of ours carries: the ConfigMap watch selects on it, so the cache holds ours only. */
export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGER_NAME = 'endpoints-example';

/** The ConfigMap's name for a Service. */
export const configMapName = (service: Service): string => `${service.metadata.name}-endpoints`;

/**
 * The address a pod contributes: its IP while it is Ready, has an IP and is not terminating (the
 * endpoints controller's ready addresses, without `publishNotReadyAddresses`); otherwise none.
 */
export function podEndpoint(pod: Pod): string | undefined {
  if (pod.metadata.deletionTimestamp !== undefined || pod.status.podIP === undefined) return undefined;
  return pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? pod.status.podIP : undefined;
}

/**
 * Index values of a label map, namespaced (`ns/key=value`): the same function indexes pods by their
 * labels and Services by their selector, so a pod's pair finds the Services that may select it and
 * a selector's pair finds the pods that may match, both in one namespace, without a scan.
 */
export const namespacedPairs = (namespace: string | undefined, labels: Readonly<Record<string, string>> | undefined): string[] =>
  labelIndexValues(labels).map((pair) => `${namespace ?? ''}/${pair}`);

/**
 * The ConfigMap data a Service wants from `pods` (any superset of its candidates: pods of other
 * namespaces or not selected are skipped), keys sorted; undefined for a Service without a selector.
 */
export function endpointsData(service: Service, pods: Iterable<Pod>): Record<string, string> | undefined {
  const selector = service.spec.selector;
  if (selector === undefined) return undefined;
  const selects = labelSelectorMatcher({ matchLabels: selector });
  const found: [string, string][] = [];
  for (const pod of pods) {
    if (pod.metadata.namespace !== service.metadata.namespace || !selects(pod.metadata.labels)) continue;
    const ip = podEndpoint(pod);
    if (ip !== undefined) found.push([pod.metadata.name, ip]);
  }
  return Object.fromEntries(found.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The server-side apply body: only the fields this controller owns, the Service as its controller. */
export function desiredConfigMap(service: Service, data: Record<string, string>) {
  const { name, namespace } = service.metadata;
  const labels = { [MANAGED_BY]: MANAGER_NAME, 'endpoints.example.dev/service': name };
  const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMapName(service), namespace, labels }, data };
  return setControllerReference(service, body, { apiVersion: 'v1', kind: 'Service' });
}
