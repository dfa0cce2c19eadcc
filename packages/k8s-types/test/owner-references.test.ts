import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReconcileLoopError } from '@reconcile-loop/primitives';
import {
  AlreadyOwnedError,
  InvalidOwnerError,
  controllerOf,
  isControlledBy,
  podSchema,
  setControllerReference,
} from '../src/index.js';

const owner = { apiVersion: 'cells.example.dev/v1', kind: 'CellSet', metadata: { name: 'web', namespace: 'ml', uid: 'u-1' } };
const child = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'ml' }, spec: { containers: [] } };

describe('owner references', () => {
  it("[k8s_types: Owner references] setControllerReference writes controller-runtime's reference (controller, blockOwnerDeletion) on a copy, keeping every other reference", () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cfg', uid: 'c-1' };
    const input = Object.freeze({
      ...child,
      metadata: Object.freeze({ ...child.metadata, ownerReferences: Object.freeze([other]) }),
    });
    const out = setControllerReference(owner, input);
    expect(out.metadata.ownerReferences).toEqual([
      other,
      {
        apiVersion: 'cells.example.dev/v1',
        kind: 'CellSet',
        name: 'web',
        uid: 'u-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(out.spec).toBe(input.spec);
    expect(input.metadata.ownerReferences).toEqual([other]); // the frozen input is untouched
    expect(setControllerReference(owner, child, { blockOwnerDeletion: false }).metadata.ownerReferences[0]).toMatchObject({
      blockOwnerDeletion: false,
    });
    // Again on its own output: the reference is replaced in place, not added twice.
    expect(setControllerReference(owner, out).metadata.ownerReferences).toEqual(out.metadata.ownerReferences);
  });

  it('[k8s_types: Owner references] a reference to the same group, kind and name is replaced (another version, a re-created owner, a non-controller reference)', () => {
    const old = { apiVersion: 'cells.example.dev/v1beta1', kind: 'CellSet', name: 'web', uid: 'u-0', controller: true };
    const out = setControllerReference(owner, { metadata: { name: 'p', namespace: 'ml', ownerReferences: [old] } });
    expect(out.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'cells.example.dev/v1',
        kind: 'CellSet',
        name: 'web',
        uid: 'u-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    const plain = { apiVersion: 'cells.example.dev/v1', kind: 'CellSet', name: 'web', uid: 'u-1' };
    expect(
      setControllerReference(owner, { metadata: { namespace: 'ml', ownerReferences: [plain] } }).metadata.ownerReferences,
    ).toHaveLength(1);
  });

  it('[k8s_types: Owner references] an object controlled by another owner throws AlreadyOwnedError (RL_TYPES_ALREADY_OWNED) naming that controller', () => {
    const theirs = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'r-1', controller: true };
    const taken = { metadata: { name: 'web-0', namespace: 'ml', ownerReferences: [theirs] } };
    let caught: unknown;
    try {
      setControllerReference(owner, taken);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AlreadyOwnedError);
    expect(caught).toBeInstanceOf(ReconcileLoopError);
    expect(caught).toMatchObject({
      code: 'RL_TYPES_ALREADY_OWNED',
      object: 'ml/web-0',
      owner: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'r-1' },
    });
    // Same name and kind in another group is another owner.
    const lookalike = { ...theirs, apiVersion: 'other.dev/v1', kind: 'CellSet', name: 'web' };
    expect(() => setControllerReference(owner, { metadata: { namespace: 'ml', ownerReferences: [lookalike] } })).toThrow(
      AlreadyOwnedError,
    );
  });

  it("[k8s_types: Owner references] controller-runtime's scope rules: a namespaced owner of a cluster-scoped object or of one in another namespace throws InvalidOwnerError; a cluster-scoped owner may own either", () => {
    expect(() => setControllerReference(owner, { metadata: { name: 'node-1' } })).toThrow(InvalidOwnerError);
    expect(() => setControllerReference(owner, { metadata: { name: 'p', namespace: 'other' } })).toThrow(/cross-namespace/);
    const cluster = { apiVersion: 'pools.example.dev/v1', kind: 'ClusterPool', metadata: { name: 'gpu', uid: 'g-1' } };
    expect(controllerOf(setControllerReference(cluster, child))?.name).toBe('gpu');
    expect(controllerOf(setControllerReference(cluster, { metadata: { name: 'node-1' } }))?.name).toBe('gpu');
    try {
      setControllerReference(owner, { metadata: { name: 'node-1' } });
    } catch (error) {
      expect((error as InvalidOwnerError).code).toBe('RL_TYPES_OWNER_INVALID');
    }
  });

  it('[k8s_types: Owner references] an owner view without apiVersion and kind (a built-in kind from a LIST) needs them in the options; an owner without uid is refused', () => {
    const deployment = { metadata: { name: 'web', namespace: 'ml', uid: 'd-1' } };
    expect(() => setControllerReference(deployment, child)).toThrow(/apiVersion and kind/);
    const out = setControllerReference(deployment, child, { apiVersion: 'apps/v1', kind: 'Deployment' });
    expect(controllerOf(out)).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment', uid: 'd-1' });
    expect(() => setControllerReference({ ...owner, metadata: { name: 'web', namespace: 'ml' } }, child)).toThrow(
      InvalidOwnerError,
    );
    expect(() => setControllerReference(owner, child, { apiVersion: 'a/b/c' })).toThrow(InvalidOwnerError);
  });

  it('[k8s_types: Owner references] controllerOf is the first controller: true reference; isControlledBy compares its uid (metav1.GetControllerOf, IsControlledBy)', () => {
    const pod = podSchema.parse({
      metadata: {
        name: 'web-0',
        namespace: 'ml',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'cfg', uid: 'c-1' },
          { apiVersion: 'cells.example.dev/v1', kind: 'CellSet', name: 'web', uid: 'u-1', controller: true },
        ],
      },
    });
    expect(controllerOf(pod)?.uid).toBe('u-1');
    expect(isControlledBy(pod, owner)).toBe(true);
    expect(isControlledBy(pod, { metadata: { uid: 'u-2' } })).toBe(false); // re-created under the same name
    expect(isControlledBy(pod, { metadata: {} })).toBe(false);
    expect(controllerOf({ metadata: {} })).toBeUndefined();
    expect(controllerOf({ metadata: { ownerReferences: null } })).toBeUndefined();
    expect(isControlledBy({}, owner)).toBe(false);
  });

  it('[k8s_types: Owner references] property: after setControllerReference the owner controls the object, exactly one reference is a controller, and no reference to another object is lost', () => {
    const ref = fc.record({
      apiVersion: fc.constantFrom('v1', 'apps/v1', 'cells.example.dev/v1', 'cells.example.dev/v2'),
      kind: fc.constantFrom('CellSet', 'ReplicaSet', 'ConfigMap'),
      name: fc.constantFrom('web', 'db', 'rs'),
      uid: fc.constantFrom('u-1', 'u-2', 'u-3'),
      controller: fc.constantFrom(undefined, false, true),
    });
    fc.assert(
      // At most one reference per group, kind and name, as on objects the apiserver holds.
      fc.property(
        fc.uniqueArray(ref, { maxLength: 4, selector: (r) => `${r.apiVersion.split('/')[0]}|${r.kind}|${r.name}` }),
        (refs) => {
          // The apiserver admits at most one controller reference.
          const first = refs.findIndex((r) => r.controller === true);
          const admitted = refs.map((r, i) => (r.controller === true && i !== first ? { ...r, controller: false } : r));
          const object = { metadata: { name: 'p', namespace: 'ml', ownerReferences: admitted } };
          const same = (r: (typeof admitted)[number]): boolean =>
            r.kind === 'CellSet' && r.name === 'web' && r.apiVersion.startsWith('cells.example.dev/');
          const current = controllerOf(object);
          if (current !== undefined && !same(current)) {
            expect(() => setControllerReference(owner, object)).toThrow(AlreadyOwnedError);
            return;
          }
          const out = setControllerReference(owner, object).metadata.ownerReferences;
          expect(isControlledBy({ metadata: { ownerReferences: out } }, owner)).toBe(true);
          expect(out.filter((r) => r.controller === true)).toHaveLength(1);
          expect(out.filter((r) => !same(r as (typeof admitted)[number]))).toEqual(admitted.filter((r) => !same(r)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
