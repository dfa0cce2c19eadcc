import {
  V1ObjectMeta,
  V1Pod,
  V1PodStatus,
  V1ContainerStatus,
  V1ContainerState,
  V1ContainerStateRunning,
} from '@kubernetes/client-node';
// The generated deserializer is what the client's typed LIST runs on a response body.
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { intern, objectKey, objectSchema, podSchema, timestamp, type Pod } from './all.js';
import { rawPod } from './fixtures.js';

describe('podSchema', () => {
  it('[k8s_types: Generated core/v1 types] keeps only the fields a pool tracker reads and drops every other one', () => {
    const pod = podSchema.parse(rawPod());
    expect(pod).toEqual({
      metadata: {
        name: 'engine-0',
        namespace: 'pool-a',
        uid: 'uid-engine-0',
        resourceVersion: '100',
        generation: 1,
        creationTimestamp: Date.UTC(2024, 4, 1, 10, 11, 12),
        labels: { app: 'sglang-engine', 'miles.io/cell': 'cell-0' },
        annotations: { 'miles.io/role': 'engine' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'engine-rs', uid: 'rs-uid', controller: true }],
      },
      spec: { nodeName: 'gpu-node-1', containers: [{ name: 'engine' }] },
      status: {
        phase: 'Running',
        podIP: '10.0.0.7',
        podIPs: [{ ip: '10.0.0.7' }],
        hostIP: '192.168.1.10',
        startTime: Date.UTC(2024, 4, 1, 10, 11, 13),
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'PodScheduled', status: 'True' },
        ],
        containerStatuses: [
          {
            name: 'engine',
            ready: true,
            started: true,
            restartCount: 2,
            state: { running: { startedAt: Date.UTC(2024, 4, 1, 10, 11, 19) } },
          },
        ],
      },
    });
    expect(pod).not.toHaveProperty('apiVersion');
    expect(pod.metadata).not.toHaveProperty('managedFields');
  });

  it('[k8s_types: Generated core/v1 types] a field of the wrong type is a validation error at the edge, with its path', () => {
    const bad = rawPod();
    (bad.status as Record<string, unknown>).containerStatuses = [{ name: 'engine', ready: 'yes', restartCount: 0 }];
    const result = podSchema.safeParse(bad);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['status', 'containerStatuses', 0, 'ready']);
    expect(podSchema.safeParse({ metadata: { namespace: 'x' } }).success).toBe(false); // no name: no object key
  });

  it('[k8s_types: Two wire spellings of the same field] a client-node V1Pod (class instances, Date) and raw JSON (strings) validate to the same view', () => {
    const raw = rawPod();
    const instance = ObjectSerializer.deserialize(structuredClone(raw), 'V1Pod', '') as V1Pod;
    expect(instance).toBeInstanceOf(V1Pod);
    expect(instance.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(instance.status?.containerStatuses?.[0]?.state?.running?.startedAt).toBeInstanceOf(Date);

    const fromInstance = podSchema.parse(instance);
    const fromRaw = podSchema.parse(raw);
    expect(fromInstance).toEqual(fromRaw);
    expect(fromInstance.metadata.creationTimestamp).toBe(Date.parse('2024-05-01T10:11:12Z'));
  });

  it('[k8s_types: Two wire spellings of the same field] a V1Pod built by hand through the client classes validates too', () => {
    const pod = new V1Pod();
    pod.metadata = new V1ObjectMeta();
    pod.metadata.name = 'hand-made';
    pod.metadata.namespace = 'pool-a';
    pod.metadata.creationTimestamp = new Date('2024-05-01T10:11:12.000Z');
    pod.status = new V1PodStatus();
    const status = new V1ContainerStatus();
    status.name = 'engine';
    status.ready = false;
    status.restartCount = 0;
    status.image = 'sglang:v1';
    status.imageID = '';
    status.state = new V1ContainerState();
    status.state.running = new V1ContainerStateRunning();
    status.state.running.startedAt = new Date(0);
    pod.status.containerStatuses = [status];

    const view = podSchema.parse(pod);
    expect(view.metadata.creationTimestamp).toBe(Date.UTC(2024, 4, 1, 10, 11, 12));
    expect(view.status.containerStatuses[0]?.state?.running?.startedAt).toBe(0);
    expect(objectKey(view)).toBe('pool-a/hand-made');
  });

  it('[k8s_types: An unset field] null and absent labels, annotations and lists read as empty', () => {
    const fromAbsent = podSchema.parse({ metadata: { name: 'p' } });
    const fromNull = podSchema.parse({
      metadata: { name: 'p', labels: null, annotations: null, ownerReferences: null },
      spec: { containers: null },
      status: { conditions: null, containerStatuses: null, podIPs: null },
    });
    for (const pod of [fromAbsent, fromNull]) {
      expect(pod.metadata.labels).toEqual({});
      expect(pod.metadata.annotations).toEqual({});
      expect(pod.metadata.ownerReferences).toEqual([]);
      expect(pod.spec.containers).toEqual([]);
      expect(pod.status.conditions).toEqual([]);
      expect(pod.status.containerStatuses).toEqual([]);
      expect(pod.status.podIPs).toEqual([]);
    }
    // The shared empty is frozen: the cache never sees one pod's write through another pod.
    expect(Object.isFrozen(fromAbsent.metadata.labels)).toBe(true);
  });
});

describe('timestamps', () => {
  it('[k8s_types: deviation, timestamps as epoch ms] Date, RFC3339 string and fractional RFC3339 all read as epoch milliseconds', () => {
    const schema = z.object({ t: timestamp });
    expect(schema.parse({ t: '2024-02-29T23:59:59Z' }).t).toBe(Date.UTC(2024, 1, 29, 23, 59, 59));
    expect(schema.parse({ t: new Date(Date.UTC(2024, 1, 29, 23, 59, 59)) }).t).toBe(Date.UTC(2024, 1, 29, 23, 59, 59));
    expect(schema.parse({ t: '2024-02-29T23:59:59.250000Z' }).t).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 250));
    expect(schema.parse({ t: '2024-03-01T01:00:00+01:00' }).t).toBe(Date.UTC(2024, 2, 1, 0, 0, 0));
    expect(schema.parse({ t: null }).t).toBeUndefined(); // Go's zero Time
    expect(schema.parse({})).toEqual({});
  });

  it('[k8s_types: deviation, timestamps as epoch ms] a string that is not a timestamp is a validation error', () => {
    const schema = z.object({ t: timestamp });
    expect(schema.safeParse({ t: 'yesterday' }).success).toBe(false);
    expect(schema.safeParse({ t: '2024-13-01T00:00:00Z' }).success).toBe(false);
    expect(schema.safeParse({ t: 1714558272000 }).success).toBe(false);
  });
});

describe('memory sharing', () => {
  it('[k8s_types: deviation, shared values] equal conditions are one frozen instance across pods, and interning keeps values intact', () => {
    const a = podSchema.parse(rawPod({ name: 'a' }));
    const b = podSchema.parse(rawPod({ name: 'b' }));
    expect(a.status.conditions[0]).toBe(b.status.conditions[0]);
    expect(a.status.conditions[1]).not.toBe(a.status.conditions[0]);
    expect(Object.isFrozen(a.status.conditions[0])).toBe(true);
    // String identity is not observable from JS (the saving is measured on the heap, see the README);
    // what is observable is that a shared value is never a different value.
    for (const value of ['short', 'a-value-longer-than-ten', '']) expect(intern(value)).toBe(value);
  });
});

describe('objectSchema and objectKey', () => {
  it('[k8s_types: deviation, generic kinds] objectSchema adds the standard metadata view to a custom resource schema', () => {
    const cellSchema = objectSchema({
      spec: z.object({ replicas: z.number().int() }),
      status: z.object({ ready: z.number().int() }).optional(),
    });
    const cell = cellSchema.parse({
      apiVersion: 'miles.io/v1',
      kind: 'TrainerCell',
      metadata: { name: 'cell-1', namespace: 'pool-a', resourceVersion: '7', labels: null },
      spec: { replicas: 4, extra: true },
    });
    expect(cell).toEqual({
      metadata: { name: 'cell-1', namespace: 'pool-a', resourceVersion: '7', labels: {}, annotations: {}, ownerReferences: [] },
      spec: { replicas: 4 },
    });
    expect(cellSchema.safeParse({ metadata: { name: 'x' }, spec: { replicas: 'four' } }).success).toBe(false);
  });

  it('[k8s_types: deviation, generic kinds] objectKey is namespace/name, or name for a cluster-scoped object', () => {
    const pod: Pod = podSchema.parse(rawPod({ name: 'p', namespace: 'ns' }));
    expect(objectKey(pod)).toBe('ns/p');
    expect(objectKey({ metadata: { name: 'node-1' } })).toBe('node-1');
    expect(objectKey({ metadata: { name: 'node-1', namespace: '' } })).toBe('node-1');
  });
});
