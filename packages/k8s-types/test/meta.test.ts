import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { objectMetaSchema, objectSchema, podSchema, typeMetaShape } from './all.js';
import { rawPod } from './fixtures.js';

describe('[k8s_types: controller metadata]', () => {
  it('[k8s_types: controller metadata] finalizers and deletionGracePeriodSeconds are read when set and absent from the view when absent', () => {
    const raw = rawPod();
    const deleting = {
      ...raw,
      metadata: {
        ...(raw.metadata as object),
        finalizers: ['miles.io/drain', 'kubernetes.io/pvc-protection'],
        deletionTimestamp: '2024-05-01T10:20:00Z',
        deletionGracePeriodSeconds: 30,
      },
    };
    const pod = podSchema.parse(deleting);
    expect(pod.metadata.finalizers).toEqual(['miles.io/drain', 'kubernetes.io/pvc-protection']);
    expect(pod.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(pod.metadata.deletionTimestamp).toBe(Date.UTC(2024, 4, 1, 10, 20, 0));

    // A pod without them carries no key at all: the cached view pays nothing for them.
    const plain = podSchema.parse(rawPod());
    expect(Object.keys(plain.metadata)).not.toContain('finalizers');
    expect(Object.keys(plain.metadata)).not.toContain('deletionGracePeriodSeconds');
  });

  it('[k8s_types: controller metadata] bad finalizers or grace periods are validation errors with their path', () => {
    const bad = (metadata: Record<string, unknown>) => podSchema.safeParse({ metadata: { name: 'p', ...metadata } });
    const finalizers = bad({ finalizers: ['ok', 7] });
    expect(finalizers.success).toBe(false);
    expect(finalizers.error?.issues[0]?.path).toEqual(['metadata', 'finalizers', 1]);
    const grace = bad({ deletionGracePeriodSeconds: 1.5 });
    expect(grace.success).toBe(false);
    expect(grace.error?.issues[0]?.path).toEqual(['metadata', 'deletionGracePeriodSeconds']);
  });

  it('[k8s_types: controller metadata] an owner reference without uid is rejected (the apiserver always sets it)', () => {
    const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' };
    const missing = objectMetaSchema.safeParse({ name: 'p', ownerReferences: [owner] });
    expect(missing.success).toBe(false);
    expect(missing.error?.issues[0]?.path).toEqual(['ownerReferences', 0, 'uid']);
    const meta = objectMetaSchema.parse({ name: 'p', ownerReferences: [{ ...owner, uid: 'u-1', controller: true }] });
    expect(meta.ownerReferences).toEqual([{ ...owner, uid: 'u-1', controller: true }]);
  });

  it('[k8s_types: controller metadata] apiVersion and kind are kept on a view that asks for them (typeMetaShape), dropped otherwise', () => {
    const cell = { apiVersion: 'miles.io/v1', kind: 'TrainerCell', metadata: { name: 'c' }, spec: { replicas: 2 } };
    const spec = z.object({ replicas: z.number().int() });
    expect(objectSchema({ ...typeMetaShape, spec }).parse(cell)).toMatchObject({
      apiVersion: 'miles.io/v1',
      kind: 'TrainerCell',
    });
    expect(objectSchema({ spec }).parse(cell)).not.toHaveProperty('kind');
    // LIST items of a built-in kind carry neither; the view still validates.
    expect(objectSchema({ ...typeMetaShape, spec }).parse({ metadata: { name: 'c' }, spec: { replicas: 1 } })).not.toHaveProperty(
      'kind',
    );
  });
});

describe('[k8s_types: extending metadata]', () => {
  it('[k8s_types: extending metadata] a metadata schema passed to objectSchema is used, not replaced; objectMetaSchema.extend keeps the defaults', () => {
    const schema = objectSchema({
      metadata: objectMetaSchema.extend({
        generateName: z.string().optional(),
        managedFields: z.array(z.object({ manager: z.string() })).optional(),
      }),
      spec: z.object({ replicas: z.number().int() }),
    });
    const cell = schema.parse({
      metadata: {
        name: 'c-1',
        namespace: 'ns',
        generateName: 'c-',
        managedFields: [{ manager: 'kubectl', operation: 'Apply' }],
        finalizers: ['f'],
        labels: null,
      },
      spec: { replicas: 3 },
    });
    expect(cell.metadata).toEqual({
      name: 'c-1',
      namespace: 'ns',
      generateName: 'c-',
      managedFields: [{ manager: 'kubectl' }],
      finalizers: ['f'],
      labels: {},
      annotations: {},
      ownerReferences: [],
    });
    // The standard rules still hold inside the extension: name is required.
    expect(schema.safeParse({ metadata: { generateName: 'c-' }, spec: { replicas: 1 } }).success).toBe(false);
  });

  it('[k8s_types: extending metadata] without a metadata entry the standard view is added', () => {
    const schema = objectSchema({ spec: z.object({}).optional() });
    expect(schema.shape.metadata).toBe(objectMetaSchema);
  });
});
