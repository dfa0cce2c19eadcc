import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { objectMetaSchema, objectSchema, typeMetaShape, type ObjectMeta, type OwnerReference, type Pod } from './all.js';

// Type tests (vitest --typecheck, enabled for this project in vitest.config.ts): what a user's own
// schema infers is what they wrote, with the standard metadata kept.

describe('[k8s_types: extending metadata] inferred types', () => {
  it('[k8s_types: extending metadata] an extended metadata schema infers the standard fields plus the added ones', () => {
    const cellSchema = objectSchema({
      ...typeMetaShape,
      metadata: objectMetaSchema.extend({ generateName: z.string().optional() }),
      spec: z.object({ replicas: z.number().int() }),
      status: z.object({ ready: z.number().int() }).optional(),
    });
    type Cell = z.output<typeof cellSchema>;
    expectTypeOf<Cell['metadata']['generateName']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Cell['metadata']['name']>().toEqualTypeOf<string>();
    expectTypeOf<Cell['metadata']['labels']>().toEqualTypeOf<Readonly<Record<string, string>>>();
    expectTypeOf<Cell['metadata']['finalizers']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<Cell['spec']>().toEqualTypeOf<{ replicas: number }>();
    expectTypeOf<Cell['status']>().toEqualTypeOf<{ ready: number } | undefined>();
    expectTypeOf<Cell['apiVersion']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Cell['kind']>().toEqualTypeOf<string | undefined>();
  });

  it('[k8s_types: extending metadata] without a metadata entry the standard ObjectMeta is inferred, and no apiVersion/kind', () => {
    const schema = objectSchema({ spec: z.object({ size: z.number() }) });
    type Obj = z.output<typeof schema>;
    expectTypeOf<Obj['metadata']>().toEqualTypeOf<ObjectMeta>();
    expectTypeOf<Obj>().not.toHaveProperty('kind');
  });

  it('[k8s_types: controller metadata] the Pod view types the controller fields', () => {
    expectTypeOf<Pod['metadata']['deletionGracePeriodSeconds']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Pod['metadata']['finalizers']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<Pod['metadata']['ownerReferences']>().toEqualTypeOf<readonly OwnerReference[]>();
    expectTypeOf<OwnerReference['uid']>().toEqualTypeOf<string>();
    expectTypeOf<Pod>().not.toHaveProperty('apiVersion');
  });
});
