/**
 * The `CellSet` kind (`cells.reconcile-loop.dev/v1`): `spec.replicas` pods made from `spec.template`,
 * one per numbered slot (`web-0`, `web-1`, …). Its names, its zod view, and the pod a slot is built from.
 */
import { createHash } from 'node:crypto';
import { objectSchema, typeMetaShape } from '@reconcile-loop/k8s-types';
import { z } from 'zod';

export const GROUP = 'cells.reconcile-loop.dev';
export const VERSION = 'v1';
export const PLURAL = 'cellsets';
export const KIND = 'CellSet';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const cellSetResource = Object.freeze({ group: GROUP, version: VERSION, plural: PLURAL, kind: KIND });
/** On every CellSet before its first pod: the pods are deleted before the set goes. */
export const FINALIZER = `${GROUP}/pods`;
/** Pod labels: the owning set (the pod reflector's selector) and the slot number. */
export const CELLSET_LABEL = `${GROUP}/cellset`;
export const SLOT_LABEL = `${GROUP}/slot`;
/** Pod annotation: the hash of the template the pod was built from (another hash: drifted). */
export const TEMPLATE_HASH_ANNOTATION = `${GROUP}/template-hash`;
/** CellSet annotation: the rebuild history per slot (JSON), so a restarted controller resumes the budget. */
export const REBUILD_HISTORY_ANNOTATION = `${GROUP}/rebuild-history`;

const strings = z.record(z.string(), z.string()).optional();
const object = z.record(z.string(), z.unknown());
const template = z.object({ metadata: z.object({ labels: strings, annotations: strings }).optional(), spec: object });
/** The controller's view of a CellSet: the template is kept whole (it becomes the pods'); status is written raw. */
export const cellSetSchema = objectSchema({
  ...typeMetaShape,
  spec: z.object({ replicas: z.number().int().min(0), template }),
  status: object.optional(),
});
export type CellSet = z.output<typeof cellSetSchema>;

/** The pod name of a slot: deterministic, so a create retried by a restarted process is a 409, never a twin. */
export const slotName = (set: string, slot: number): string => `${set}-${slot}`;

/** Objects with sorted keys: equal templates hash equally whatever order their keys came in. */
const sorted = (_key: string, v: unknown) =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
    : v;
/** The ReplicaSet controller's `pod-template-hash`, here an annotation. */
export const templateHash = (set: CellSet): string =>
  createHash('sha256').update(JSON.stringify(set.spec.template, sorted)).digest('hex').slice(0, 10);

/** The pod of one slot: the template plus the labels, the hash and a controller owner reference. */
export function podForSlot(set: CellSet, slot: number) {
  const { name, namespace, uid } = set.metadata;
  const { metadata: template, spec } = set.spec.template;
  const labels = { ...template?.labels, [CELLSET_LABEL]: name, [SLOT_LABEL]: String(slot) };
  const annotations = { ...template?.annotations, [TEMPLATE_HASH_ANNOTATION]: templateHash(set) };
  const owner = { apiVersion: API_VERSION, kind: KIND, name, uid: uid!, controller: true, blockOwnerDeletion: true };
  const metadata = { name: slotName(name, slot), namespace, labels, annotations, ownerReferences: [owner] };
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: structuredClone(spec) };
}
