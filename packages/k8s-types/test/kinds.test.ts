import { describe, expect, expectTypeOf, it } from 'vitest';
import { kinds, labelSelectorMatcher, podResource, podSchema, type KindView, type Pod } from '../src/index.js';

const meta = (name: string, namespace?: string) => ({
  name,
  ...(namespace !== undefined && { namespace }),
  uid: `${name}-uid`,
  resourceVersion: '7',
  creationTimestamp: '2024-05-01T10:11:12Z',
  managedFields: [{ manager: 'kubectl', operation: 'Apply' }],
});

describe('built-in kinds', () => {
  it("[k8s_types: Built-in kinds] one table: each entry is the kind's resource ref (group, version, plural, kind) and its view; Pod is the bundled podSchema", () => {
    const refs = Object.fromEntries(Object.entries(kinds).map(([k, { resource }]) => [k, resource]));
    expect(refs).toEqual({
      Pod: { group: '', version: 'v1', plural: 'pods', kind: 'Pod' },
      Service: { group: '', version: 'v1', plural: 'services', kind: 'Service' },
      ConfigMap: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' },
      Secret: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' },
      Deployment: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment' },
      Lease: { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' },
      Event: { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' },
      Namespace: { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace' },
      Node: { group: '', version: 'v1', plural: 'nodes', kind: 'Node' },
    });
    expect(kinds.Pod.schema).toBe(podSchema);
    expect({ ...kinds.Pod.resource, kind: undefined }).toEqual({ ...podResource, kind: undefined });
    expect(Object.isFrozen(kinds) && Object.isFrozen(kinds.Service) && Object.isFrozen(kinds.Service.resource)).toBe(true);
    // Built on first read and kept: one instance per kind, also through a spread.
    expect(kinds.Node.schema).toBe(kinds.Node.schema);
    expect({ ...kinds.Service }.schema).toBe(kinds.Service.schema);
    expect(Object.keys(kinds.Service)).toEqual(['resource', 'schema']);
    expectTypeOf<KindView<'Pod'>>().toEqualTypeOf<Pod>();
  });

  it('[k8s_types: Built-in kinds] Service: type, selector, clusterIP, ports; a Service without a selector reads selector undefined and so selects nothing', () => {
    const svc = kinds.Service.schema.parse({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('web', 'ml'),
      spec: {
        type: 'ClusterIP',
        selector: { app: 'web' },
        clusterIP: '10.0.0.1',
        ports: [{ port: 80, targetPort: 'http' }],
        sessionAffinity: 'None',
      },
      status: { loadBalancer: {} },
    });
    expect(svc).toEqual({
      metadata: expect.objectContaining({ name: 'web', namespace: 'ml', uid: 'web-uid', creationTimestamp: 1714558272000 }),
      spec: { type: 'ClusterIP', selector: { app: 'web' }, clusterIP: '10.0.0.1', ports: [{ port: 80, targetPort: 'http' }] },
    });
    expect(svc.metadata).not.toHaveProperty('managedFields');
    expectTypeOf(svc).toEqualTypeOf<KindView<'Service'>>();
    for (const spec of [{}, { selector: {} }, { selector: null }]) {
      const none = kinds.Service.schema.parse({ metadata: meta('ext', 'ml'), spec });
      expect(none.spec.selector).toBeUndefined();
      expect(labelSelectorMatcher(none.spec.selector && { matchLabels: none.spec.selector })({ app: 'web' })).toBe(false);
    }
    expect(labelSelectorMatcher(svc.spec.selector && { matchLabels: svc.spec.selector })({ app: 'web', x: 'y' })).toBe(true);
    expect(kinds.Service.schema.parse({ metadata: meta('bare', 'ml') }).spec.ports).toEqual([]);
  });

  it('[k8s_types: Built-in kinds] ConfigMap and Secret keep data (absent reads {}), Secret its type; binaryData and stringData are dropped', () => {
    const cm = kinds.ConfigMap.schema.parse({
      metadata: meta('cfg', 'ml'),
      data: { 'a.conf': 'x=1' },
      binaryData: { b: 'AAE=' },
    });
    expect(cm).toEqual({ metadata: expect.anything(), data: { 'a.conf': 'x=1' } });
    expect(kinds.ConfigMap.schema.parse({ metadata: meta('empty', 'ml') }).data).toEqual({});
    const secret = kinds.Secret.schema.parse({
      metadata: meta('s', 'ml'),
      type: 'Opaque',
      data: { password: 'cGFzcw==' },
      immutable: true,
    });
    expect(secret).toEqual({ metadata: expect.anything(), type: 'Opaque', data: { password: 'cGFzcw==' }, immutable: true });
  });

  it('[k8s_types: Built-in kinds] Deployment: replicas, selector (a LabelSelector for labelSelectorMatcher), rollout status and conditions; the pod template is dropped', () => {
    const d = kinds.Deployment.schema.parse({
      metadata: { ...meta('web', 'ml'), generation: 3 },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
      status: {
        observedGeneration: 3,
        replicas: 3,
        readyReplicas: 2,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'ok',
            lastUpdateTime: '2024-05-01T10:11:12Z',
          },
        ],
      },
    });
    expect(d.spec).toEqual({
      replicas: 3,
      selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] },
    });
    expect(d.status).toEqual({
      observedGeneration: 3,
      replicas: 3,
      readyReplicas: 2,
      conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' }],
    });
    expect(labelSelectorMatcher(d.spec.selector)({ app: 'web', tier: 'front' })).toBe(true);
    expect(kinds.Deployment.schema.parse({ metadata: meta('new', 'ml') })).toMatchObject({
      spec: {},
      status: { conditions: [] },
    });
  });

  it('[k8s_types: Built-in kinds] Lease, Event, Namespace and Node read what a controller reads (MicroTime as epoch ms, cluster-scoped kinds without namespace)', () => {
    const lease = kinds.Lease.schema.parse({
      metadata: meta('ctrl', 'ml'),
      spec: {
        holderIdentity: 'pod-a_1',
        leaseDurationSeconds: 15,
        renewTime: '2024-05-01T10:11:12.123456Z',
        leaseTransitions: 2,
      },
    });
    expect(lease.spec).toEqual({
      holderIdentity: 'pod-a_1',
      leaseDurationSeconds: 15,
      renewTime: 1714558272123,
      leaseTransitions: 2,
    });
    expect(
      kinds.Lease.schema.parse({ metadata: meta('free', 'ml'), spec: { holderIdentity: null } }).spec.holderIdentity,
    ).toBeUndefined();

    const event = kinds.Event.schema.parse({
      metadata: meta('web.1', 'ml'),
      regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'ml', name: 'web-0', uid: 'p1', fieldPath: 'spec' },
      reason: 'Rebuilt',
      note: 'slot 0 rebuilt',
      type: 'Normal',
      action: 'Rebuild',
      reportingController: 'cells.example.dev/controller',
      eventTime: '2024-05-01T10:11:12.000001Z',
      series: { count: 3, lastObservedTime: '2024-05-01T10:11:12Z' },
      deprecatedSource: { component: 'x' },
    });
    expect(event).toEqual({
      metadata: expect.anything(),
      regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'ml', name: 'web-0', uid: 'p1' },
      reason: 'Rebuilt',
      note: 'slot 0 rebuilt',
      type: 'Normal',
      action: 'Rebuild',
      reportingController: 'cells.example.dev/controller',
      eventTime: 1714558272000,
      series: { count: 3, lastObservedTime: 1714558272000 },
    });

    const ns = kinds.Namespace.schema.parse({
      metadata: meta('ml'),
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Terminating' },
    });
    expect(ns).toEqual({
      metadata: expect.not.objectContaining({ namespace: expect.anything() }),
      status: { phase: 'Terminating' },
    });

    const node = kinds.Node.schema.parse({
      metadata: { ...meta('node-1'), labels: { 'kubernetes.io/hostname': 'node-1' } },
      spec: { podCIDR: '10.1.0.0/24', taints: [{ key: 'gpu', effect: 'NoSchedule' }] },
      status: {
        conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2024-05-01T10:11:12Z' }],
        addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
        allocatable: { cpu: '8', memory: '32Gi' },
        images: [{ names: ['nginx'], sizeBytes: 1 }],
      },
    });
    expect(node.spec).toEqual({ taints: [{ key: 'gpu', effect: 'NoSchedule' }] });
    expect(node.status).toEqual({
      conditions: [{ type: 'Ready', status: 'True' }],
      addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
      allocatable: { cpu: '8', memory: '32Gi' },
    });
  });

  it('[k8s_types: Built-in kinds] a field of the wrong type is a validation error at the edge, as for the Pod view', () => {
    expect(kinds.Deployment.schema.safeParse({ metadata: meta('d', 'ml'), spec: { replicas: 'three' } }).success).toBe(false);
    expect(kinds.Service.schema.safeParse({ metadata: meta('s', 'ml'), spec: { ports: [{ name: 'http' }] } }).success).toBe(
      false,
    );
    expect(kinds.Node.schema.safeParse({ metadata: {} }).success).toBe(false);
  });
});
