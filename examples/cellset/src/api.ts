/**
 * The `CellSet` custom resource: `cells.reconcile-loop.dev/v1`, a set of `spec.replicas` pods made
 * from `spec.template`, one per numbered slot (`<name>-0`, `<name>-1`, …). This module holds the
 * resource's names, its zod view, the CRD manifest, and the pure helpers every other module shares
 * (slot names, the template hash, owner references, the pod a slot is built from).
 */
import { createHash } from 'node:crypto';
import { objectSchema, typeMetaShape, type Pod } from '@reconcile-loop/k8s-types';
import { z } from 'zod';

/** The API group of the CellSet kind. */
export const GROUP = 'cells.reconcile-loop.dev';
/** The one served (and stored) version. */
export const VERSION = 'v1';
/** `apiVersion` of a CellSet. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** The kind. */
export const KIND = 'CellSet';
/** The URL plural. */
export const PLURAL = 'cellsets';
/** Where the kind lives in the API, for kube-client handles and the reflector. */
export const cellSetResource = Object.freeze({ group: GROUP, version: VERSION, plural: PLURAL, kind: KIND });

/** The finalizer the controller puts on every CellSet: it deletes the set's pods before the set goes. */
export const FINALIZER = `${GROUP}/pods`;
/** Pod label naming the owning CellSet (the pod reflector's label selector). */
export const CELLSET_LABEL = `${GROUP}/cellset`;
/** Pod label naming the slot number. */
export const SLOT_LABEL = `${GROUP}/slot`;
/** Pod annotation: the hash of the template the pod was built from (drift = a different hash). */
export const TEMPLATE_HASH_ANNOTATION = `${GROUP}/template-hash`;
/** CellSet annotation: the rebuild history per slot, JSON (kept on the object so a restarted controller resumes it). */
export const REBUILD_HISTORY_ANNOTATION = `${GROUP}/rebuild-history`;

/** The pod template: labels and annotations for the pod's metadata, and its spec, kept whole. */
const templateSchema = z.object({
  metadata: z
    .object({ labels: z.record(z.string(), z.string()).optional(), annotations: z.record(z.string(), z.string()).optional() })
    .optional(),
  spec: z.record(z.string(), z.unknown()),
});

/** One `metav1.Condition`. */
export const conditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().optional(),
  lastTransitionTime: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
/** A `metav1.Condition` as the CellSet's status carries it. */
export type Condition = z.output<typeof conditionSchema>;

/**
 * The controller's view of a CellSet. `spec.template.spec` is kept whole (it becomes the pod's spec);
 * `status` is optional because a fresh object has none.
 */
export const cellSetSchema = objectSchema({
  ...typeMetaShape,
  spec: z.object({ replicas: z.number().int().min(0), template: templateSchema }),
  status: z
    .object({
      replicas: z.number().int().optional(),
      readyReplicas: z.number().int().optional(),
      observedGeneration: z.number().int().optional(),
      conditions: z.array(conditionSchema).optional(),
    })
    .optional(),
});
/** A validated CellSet view. */
export type CellSet = z.output<typeof cellSetSchema>;
/** `spec.template`. */
export type PodTemplate = CellSet['spec']['template'];

/** The pod name of slot `slot` of CellSet `name` (deterministic: a retried create is a 409, never a twin). */
export function slotName(name: string, slot: number): string {
  return `${name}-${slot}`;
}

/** The slot a pod of this controller occupies, from its label; `undefined` for a pod without one. */
export function slotOf(pod: Pod): number | undefined {
  const text = pod.metadata.labels[SLOT_LABEL];
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** JSON with object keys sorted, so equal templates hash equally whatever order their keys came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A short hash of the template (the ReplicaSet controller's `pod-template-hash`, here an annotation). */
export function templateHash(template: PodTemplate): string {
  return createHash('sha256').update(canonical(template)).digest('hex').slice(0, 10);
}

/** The controller owner reference a CellSet puts on its pods (what the pod source maps them back by). */
export function ownerReference(set: CellSet) {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: set.metadata.name,
    uid: set.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The pod of one slot, as the controller creates it: the template plus labels, the hash and the owner. */
export function podForSlot(set: CellSet, slot: number) {
  const { template } = set.spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: slotName(set.metadata.name, slot),
      namespace: set.metadata.namespace,
      labels: { ...template.metadata?.labels, [CELLSET_LABEL]: set.metadata.name, [SLOT_LABEL]: String(slot) },
      annotations: { ...template.metadata?.annotations, [TEMPLATE_HASH_ANNOTATION]: templateHash(template) },
      ownerReferences: [ownerReference(set)],
    },
    spec: structuredClone(template.spec),
  };
}

/** A pod the kubelet is done with: `Failed` or `Succeeded` never runs again, so the slot needs a new pod. */
export function isTerminal(pod: Pod): boolean {
  return pod.status.phase === 'Failed' || pod.status.phase === 'Succeeded';
}

/** Running with the `Ready` condition true. */
export function isReady(pod: Pod): boolean {
  return pod.status.phase === 'Running' && pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Built from another template than the CellSet's current one. */
export function isDrifted(pod: Pod, set: CellSet): boolean {
  return pod.metadata.annotations[TEMPLATE_HASH_ANNOTATION] !== templateHash(set.spec.template);
}

/**
 * The CustomResourceDefinition, as `kubectl apply -f deploy/crd.yaml` installs it (the controller
 * installs this object itself when its identity may). `status` is a subresource, so status writes
 * never bump `metadata.generation` and spec writes never touch status.
 */
export function cellSetCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'cellset' },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['replicas', 'template'],
                  properties: {
                    replicas: { type: 'integer', minimum: 0 },
                    template: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  },
                },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  };
}
