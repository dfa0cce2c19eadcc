import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compactOutput, compactView, compileSchema, objectSchema, parseObject, podSchema } from './all.js';
import { rawPod } from './fixtures.js';

function podWith(labels: Record<string, string>, name = 'engine-0'): Record<string, unknown> {
  const pod = rawPod({ name });
  return { ...pod, metadata: { ...(pod['metadata'] as object), labels } };
}

describe('[k8s_types: deviation, shared values] equal sub-values are one frozen instance', () => {
  it('[k8s_types: deviation, shared values] equal label maps, container lists and condition lists are shared and frozen; different ones are not', () => {
    const a = parseObject(podSchema, podWith({ app: 'x', cell: 'c-1' }, 'a'), 'LIST');
    const b = parseObject(podSchema, podWith({ app: 'x', cell: 'c-1' }, 'b'), 'LIST');
    const c = parseObject(podSchema, podWith({ app: 'x', cell: 'c-2' }, 'c'), 'LIST');
    const reordered = parseObject(podSchema, podWith({ cell: 'c-1', app: 'x' }, 'd'), 'LIST');
    expect(a.metadata.labels).toBe(b.metadata.labels);
    expect(Object.isFrozen(a.metadata.labels)).toBe(true);
    expect(c.metadata.labels).not.toBe(a.metadata.labels);
    expect(c.metadata.labels).toEqual({ app: 'x', cell: 'c-2' });
    // Key order is part of the value (Object.keys): a reordered map is its own instance.
    expect(reordered.metadata.labels).not.toBe(a.metadata.labels);
    expect(Object.keys(reordered.metadata.labels)).toEqual(['cell', 'app']);
    expect(a.spec.containers).toBe(b.spec.containers);
    expect(Object.isFrozen(a.spec.containers[0])).toBe(true);
    expect(a.status.conditions).toBe(b.status.conditions);
  });

  it('[k8s_types: deviation, shared values] the owner references of pods of one owner are one frozen list; another owner, or another controller flag, is not', () => {
    const owned = (name: string, uid: string, controller?: boolean) => {
      const pod = rawPod({ name });
      const ref = {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        name: 'rs-1',
        uid,
        blockOwnerDeletion: true,
        ...(controller === undefined ? {} : { controller }),
      };
      return parseObject(podSchema, { ...pod, metadata: { ...(pod['metadata'] as object), ownerReferences: [ref] } }, 'LIST');
    };
    const a = owned('a', 'u-1', true);
    const b = owned('b', 'u-1', true);
    expect(a.metadata.ownerReferences).toBe(b.metadata.ownerReferences);
    expect(Object.isFrozen(a.metadata.ownerReferences[0])).toBe(true);
    expect(a.metadata.ownerReferences).toEqual([
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs-1', uid: 'u-1', controller: true },
    ]);
    expect(owned('c', 'u-2', true).metadata.ownerReferences).not.toBe(a.metadata.ownerReferences);
    const notController = owned('d', 'u-1');
    expect(notController.metadata.ownerReferences).not.toBe(a.metadata.ownerReferences);
    expect(notController.metadata.ownerReferences[0]).not.toHaveProperty('controller');
  });

  it('[k8s_types: deviation, shared values] a large map, or one holding the separator character, is kept as built', () => {
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const big1 = parseObject(podSchema, podWith(many, 'a'), 'LIST');
    const big2 = parseObject(podSchema, podWith(many, 'b'), 'LIST');
    expect(big1.metadata.labels).not.toBe(big2.metadata.labels);
    expect(big1.metadata.labels).toEqual(many);
    const odd1 = parseObject(podSchema, podWith({ 'a\u0000b': 'c' }, 'a'), 'LIST');
    const odd2 = parseObject(podSchema, podWith({ a: 'b\u0000c' }, 'b'), 'LIST');
    expect(odd1.metadata.labels).toEqual({ 'a\u0000b': 'c' });
    expect(odd2.metadata.labels).toEqual({ a: 'b\u0000c' });
  });
});

describe('[k8s_types: compact views] cached views are exact-size copies', () => {
  it('[k8s_types: compact views] compactView copies plain objects and arrays holding them, equal and unmutated; keeps frozen, Date, class and null-prototype values by identity', () => {
    const frozen = Object.freeze({ a: 1 });
    const date = new Date(0);
    const bare = Object.assign(Object.create(null) as object, { p: 1, q: 2, r: 3, s: 4, t: 5 });
    const input = { a: 1, b: 'two', c: [{ x: 1, y: 2, z: 3, w: 4, v: 5 }], d: frozen, e: date, f: bare, g: undefined };
    const inner = input.c[0];
    const out = compactView(input);
    expect(out).not.toBe(input);
    expect(out).toStrictEqual(input);
    expect(Object.keys(out)).toEqual(Object.keys(input));
    expect(out.d).toBe(frozen);
    expect(out.e).toBe(date);
    expect(out.f).toBe(bare);
    expect(input.c[0]).toBe(inner); // the input was not mutated
    expect(out.c[0]).not.toBe(inner);
    const scalars = [1, 'two', null];
    expect(compactView(scalars)).toBe(scalars); // an array of scalars has nothing to compact
    expect(compactView(frozen)).toBe(frozen);
    expect(compactView(JSON.parse('{"__proto__":1,"a":2,"b":3,"c":4,"d":5}'))).toStrictEqual(
      JSON.parse('{"__proto__":1,"a":2,"b":3,"c":4,"d":5}'),
    );
  });

  it('[k8s_types: compact views] property: the cached Pod view is deep-equal to the zod output, for arbitrary pods', () => {
    const stringMap = fc.dictionary(fc.string(), fc.string(), { maxKeys: 20 });
    fc.assert(
      fc.property(
        stringMap,
        stringMap,
        fc.option(fc.integer(), { nil: undefined }),
        fc.boolean(),
        (labels, annotations, generation, terminated) => {
          const pod = rawPod();
          const metadata = {
            ...(pod['metadata'] as object),
            labels,
            annotations,
            ...(generation === undefined ? {} : { generation }),
          };
          const status = pod['status'] as Record<string, unknown>;
          const state = terminated
            ? {
                terminated: {
                  exitCode: 1,
                  reason: 'Error',
                  startedAt: '2024-05-01T10:11:14Z',
                  finishedAt: '2024-05-01T10:11:18Z',
                },
              }
            : { waiting: { reason: 'CrashLoopBackOff' } };
          const raw = {
            ...pod,
            metadata,
            status: { ...status, containerStatuses: [{ name: 'e', ready: false, restartCount: 3, state }] },
          };
          expect(parseObject(podSchema, raw, 'LIST')).toStrictEqual(podSchema.parse(raw));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('[k8s_types: compact views] compileSchema keeps the mark; an unmarked view is returned as zod built it', () => {
    const view = objectSchema({ spec: z.object({ a: z.number(), b: z.number(), c: z.number(), d: z.number(), e: z.number() }) });
    const raw = { metadata: { name: 'n' }, spec: { a: 1, b: 2, c: 3, d: 4, e: 5 } };
    const marked = compileSchema(compactOutput(objectSchema({ spec: view.shape.spec })));
    expect(parseObject(marked, raw, 'LIST')).toStrictEqual(view.parse(raw));
    expect(parseObject(compileSchema(podSchema), rawPod(), 'LIST')).toStrictEqual(podSchema.parse(rawPod()));
  });
});
