import type { KubernetesObjectView, OwnerReference } from '../meta.js';
import { conditionKey, EMPTY_LIST, EMPTY_STRING_MAP, ownerReferenceKey, reuseRecentIP, sharedCondition } from './view-parts.js';
import { bool, int, nextItem, openArray, sharedStr, str, stringMap, time } from './cursor.js';
import { PartsCache } from './parts-cache.js';
import { hashedStr, level, list, memberHashes, members, object, part, required, sharedList, type Draft } from './view-reader.js';

/**
 * The bundled Pod view read straight from a watch frame's bytes: the members `podSchema` keeps are
 * read, everything else (`managedFields`, most of `spec`, the envelope's `kind`) is stepped over
 * without being built, and the view comes out as `parseObject(podSchema, JSON.parse(frame).object)`
 * would build it: the same keys in the same order, the same shared instances, compacted alike.
 *
 * Invariant: {@link readPodObject} returns a view only when `podSchema` (through `parseObject`)
 * returns an equal one for the same JSON; whenever it cannot prove that (see `cursor.ts`), it ends
 * the read with `NOT_PROVEN` and the exact path reads the object (see `frames.ts`).
 * It is written against `pod.ts` and `meta.ts`: a field added to the view there must be added here,
 * and the property tests (`pod-reader.test.ts`) hold the two equal.
 */

const OWNER = level(['apiVersion', 'kind', 'name', 'uid', 'controller']);
const readOwnerField = (i: number): unknown => (i === 4 ? bool() : hashedStr(i));
/** Marks where one reference's parts end; stands for an absent `controller`. */
const ABSENT = Symbol('absent');
const ownerReference = (): OwnerReference => {
  const reference = object(OWNER, readOwnerField, 0b1111) as unknown as OwnerReference;
  // In shape order, whatever order the members came in: the parts must determine the reference.
  part(reference.apiVersion, memberHashes[0]!);
  part(reference.kind, memberHashes[1]!);
  part(reference.name, memberHashes[2]!);
  part(reference.uid, memberHashes[3]!);
  part(reference.controller ?? ABSENT, reference.controller === undefined ? 0 : reference.controller ? 1 : 2);
  return reference;
};
const ownerLists = new PartsCache<readonly OwnerReference[]>(4096);

const META = level([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]);
const META_ALWAYS = 0b1110_0000; // labels, annotations, ownerReferences: present in the view even when absent

function readMetaField(index: number): unknown {
  switch (index) {
    case 0: // name
    case 2: // uid
    case 3: // resourceVersion
      return str();
    case 1: // namespace
      return sharedStr();
    case 4: // generation
    case 11: // deletionGracePeriodSeconds
      return int();
    case 5: // labels
    case 6: // annotations
      return stringMap();
    case 7: // ownerReferences
      return sharedList('ownerReferences', ownerLists, ownerReference, ownerReferenceKey);
    case 8: {
      // finalizers: z.array(...).optional() refuses null
      const items: string[] = [];
      if (openArray()) {
        do items.push(sharedStr());
        while (nextItem());
      }
      return items;
    }
    default: // creationTimestamp, deletionTimestamp
      return time();
  }
}

/**
 * Reads the `metadata` object at the cursor as `objectMetaSchema` (`meta.ts`) would validate
 * it: the metadata of every bundled view read from bytes (the Pod view here, `PartialObjectMetadata`
 * in `metadata-reader.ts`).
 */
export function readObjectMeta(): Draft {
  const fields: unknown[] = [];
  const present = members(META.keys, readMetaField, fields);
  required(present, 0b1); // name
  // Maps and lists read as the shared empty value when absent.
  if ((present & 0b10_0000) === 0) fields[5] = EMPTY_STRING_MAP;
  if ((present & 0b100_0000) === 0) fields[6] = EMPTY_STRING_MAP;
  if ((present & 0b1000_0000) === 0) fields[7] = EMPTY_LIST;
  return META.shape.build(present | META_ALWAYS, fields);
}

const NAME = level(['name']);
const containerName = (): { name: string } => {
  const container = object(NAME, hashedStr, 0b1) as { name: string };
  part(container.name, memberHashes[0]!);
  return container;
};
const containersKey = (container: { name: string }): string => container.name;
const containerLists = new PartsCache<readonly { name: string }[]>(256);

const SPEC = level(['nodeName', 'containers']);

function spec(): Draft {
  const fields: unknown[] = [];
  const present = members(
    SPEC.keys,
    (i) => (i === 0 ? sharedStr() : sharedList('containers', containerLists, containerName, containersKey)),
    fields,
  );
  if ((present & 0b10) === 0) fields[1] = EMPTY_LIST;
  return SPEC.shape.build(present | 0b10, fields);
}

const CONDITION = level(['type', 'status']);
const conditionLists = new PartsCache<readonly Readonly<{ type: string; status: string }>[]>(256);

function condition(): Readonly<{ type: string; status: string }> {
  const fields: unknown[] = [];
  required(members(CONDITION.keys, hashedStr, fields), 0b11);
  part(fields[0], memberHashes[0]!);
  part(fields[1], memberHashes[1]!);
  return sharedCondition(fields[0] as string, fields[1] as string);
}

const IP = level(['ip']);

function podIP(): string {
  const fields: unknown[] = [];
  required(members(IP.keys, str, fields), 0b1);
  return fields[0] as string;
}

const WAITING = level(['reason']);
const RUNNING = level(['startedAt']);
const TERMINATED = level(['exitCode', 'reason', 'startedAt', 'finishedAt']);
const readTerminatedField = (i: number): unknown => (i === 0 ? int() : i === 1 ? sharedStr() : time());
const STATE = level(['waiting', 'running', 'terminated']);
const readStateField = (i: number): unknown =>
  i === 0 ? object(WAITING, sharedStr) : i === 1 ? object(RUNNING, time) : object(TERMINATED, readTerminatedField, 0b1);
const CONTAINER_STATUS = level(['name', 'ready', 'started', 'restartCount', 'state']);
const readContainerStatusField = (i: number): unknown =>
  i === 0 ? sharedStr() : i === 1 || i === 2 ? bool() : i === 3 ? int() : object(STATE, readStateField);
const containerStatus = (): Draft => object(CONTAINER_STATUS, readContainerStatusField, 0b1011);

const STATUS = level(['phase', 'podIP', 'podIPs', 'hostIP', 'startTime', 'conditions', 'containerStatuses']);

function readStatusField(index: number): unknown {
  switch (index) {
    case 0: // phase
    case 3: // hostIP
      return sharedStr();
    case 1: // podIP
      return str();
    case 2: // podIPs
      return list(podIP);
    case 4: // startTime
      return time();
    case 5: // conditions
      return sharedList('conditions', conditionLists, condition, conditionKey);
    default: // containerStatuses
      return list(containerStatus);
  }
}

function status(): Draft {
  const fields: unknown[] = [];
  const present = members(STATUS.keys, readStatusField, fields);
  // In shape order, as zod reads them: podIP first, so podIPs[0].ip can reuse its instance.
  if ((present & 0b10) !== 0) fields[1] = reuseRecentIP(fields[1] as string);
  const ips = (present & 0b100) !== 0 ? (fields[2] as string[]) : EMPTY_LIST;
  fields[2] = ips === EMPTY_LIST ? ips : ips.map((ip) => ({ ip: reuseRecentIP(ip) }));
  if ((present & 0b10_0000) === 0) fields[5] = EMPTY_LIST;
  if ((present & 0b100_0000) === 0) fields[6] = EMPTY_LIST;
  return STATUS.shape.build(present | 0b110_0100, fields);
}

const POD = level(['metadata', 'spec', 'status']);
const readPodField = (i: number): unknown => (i === 0 ? readObjectMeta() : i === 1 ? spec() : status());

/**
 * Reads the pod at the cursor as `podSchema` would validate it (see the module comment): a `Pod`,
 * typed here as the least every view carries, since `pod.ts` (where `Pod` is declared) imports this
 * reader to attach it to `podSchema`.
 */
export function readPodObject(): KubernetesObjectView {
  const fields: unknown[] = [];
  const present = members(POD.keys, readPodField, fields);
  required(present, 0b1);
  // An absent spec or status reads as the view of an empty one (`prefault({})`); a null one is refused.
  if ((present & 0b10) === 0) fields[1] = { containers: EMPTY_LIST };
  if ((present & 0b100) === 0) fields[2] = { podIPs: EMPTY_LIST, conditions: EMPTY_LIST, containerStatuses: EMPTY_LIST };
  return { metadata: fields[0], spec: fields[1], status: fields[2] } as KubernetesObjectView;
}
