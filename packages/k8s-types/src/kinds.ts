/**
 * Views and resource refs of the built-in kinds controllers read most, as one table: `kinds.Service`
 * is `{ resource, schema }`, the two things a reflector or a client handle needs
 * (`kubeReflector({ kubeClient, ...kinds.Service })`, `client.resource(kinds.ConfigMap.resource,
 * kinds.ConfigMap.schema)`), and `KindView<'Service'>` names the view's type.
 *
 * Each view is as small as the Pod view and built the same way: the standard metadata view plus
 * only the fields a controller of the everyday shapes reads; every other field is dropped at the
 * edge (zod's strip, the Pod view's policy); absent maps and lists read as a shared frozen `{}` /
 * `[]`; times read as epoch ms. None has a byte reader: none is a hot path the way pods are (a
 * controller watches a few Services, Deployments or Nodes; Events it mostly writes), so the exact
 * path (`JSON.parse` + zod) reads them.
 */
import { z } from 'zod';
import { shareStringMap } from './decode/share.js';
import { EMPTY_STRING_MAP } from './decode/view-parts.js';
import { compileSchema, listOf, objectSchema, sharedString, stringMap, timestamp } from './meta.js';
import { podSchema } from './pod.js';

/**
 * A `map[string]string` whose values are data, not labels (a ConfigMap's or a Secret's `data`):
 * absent reads as the shared `{}`, values are not interned (they are large and rarely repeat).
 */
const dataMap = z
  .record(z.string(), z.string())
  .nullish()
  .transform((value): Readonly<Record<string, string>> => value ?? EMPTY_STRING_MAP);

/** A `type`/`status` condition with its `reason` (Deployment, Node). */
const conditionSchema = z.object({ type: sharedString, status: sharedString, reason: sharedString.optional() });

/** `metav1.LabelSelector`, as `labelSelectorMatcher` takes it. */
const labelSelectorSchema = z.object({
  matchLabels: stringMap,
  matchExpressions: listOf(
    z.object({
      key: sharedString,
      operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
      values: listOf(sharedString),
    }),
  ),
});

/**
 * core/v1 Service: `spec.type`, `spec.selector`, `spec.clusterIP`, `spec.ports`. A Service without a
 * selector (absent or empty: Go's `omitempty` sends neither) reads `selector: undefined`, never `{}`,
 * so `labelSelectorMatcher(service.spec.selector && { matchLabels: service.spec.selector })` selects
 * nothing for it, as Kubernetes does, where `{ matchLabels: {} }` would select every pod.
 */
const serviceSchema = objectSchema({
  spec: z
    .object({
      type: sharedString.optional(),
      selector: z
        .record(z.string(), sharedString)
        .nullish()
        .transform((value) => (value && Object.keys(value).length > 0 ? shareStringMap(value) : undefined)),
      clusterIP: z.string().optional(),
      ports: listOf(
        z.object({
          name: sharedString.optional(),
          protocol: sharedString.optional(),
          port: z.number().int(),
          targetPort: z.union([z.number().int(), z.string()]).optional(),
          nodePort: z.number().int().optional(),
        }),
      ),
    })
    .prefault({}),
});

/** core/v1 ConfigMap: `data` (absent reads `{}`) and `immutable`. `binaryData` is dropped. */
const configMapSchema = objectSchema({ data: dataMap, immutable: z.boolean().optional() });

/** core/v1 Secret: `type`, `data` (base64 values, as sent) and `immutable`. */
const secretSchema = objectSchema({ type: sharedString.optional(), data: dataMap, immutable: z.boolean().optional() });

/**
 * apps/v1 Deployment: `spec.replicas`, `spec.selector`, `spec.paused`, and the rollout status a
 * controller waits on (`observedGeneration`, the replica counts, `conditions` type/status/reason).
 * The pod template is dropped: a controller writes it whole (apply), it does not read it back.
 */
const deploymentSchema = objectSchema({
  spec: z
    .object({
      replicas: z.number().int().optional(),
      selector: labelSelectorSchema.optional(),
      paused: z.boolean().optional(),
    })
    .prefault({}),
  status: z
    .object({
      observedGeneration: z.number().int().optional(),
      replicas: z.number().int().optional(),
      updatedReplicas: z.number().int().optional(),
      readyReplicas: z.number().int().optional(),
      availableReplicas: z.number().int().optional(),
      unavailableReplicas: z.number().int().optional(),
      conditions: listOf(conditionSchema),
    })
    .prefault({}),
});

/** coordination.k8s.io/v1 Lease: the holder and its times (MicroTime, read as epoch ms). */
const leaseSchema = objectSchema({
  spec: z
    .object({
      holderIdentity: z
        .string()
        .nullish()
        .transform((value) => value ?? undefined),
      leaseDurationSeconds: z.number().int().optional(),
      acquireTime: timestamp,
      renewTime: timestamp,
      leaseTransitions: z.number().int().optional(),
    })
    .prefault({}),
});

/**
 * events.k8s.io/v1 Event (what kube-client's recorder writes): the object it is about
 * (`regarding`), `reason`, `note`, `type`, `action`, the reporter, `eventTime` and the series count.
 */
const eventSchema = objectSchema({
  regarding: z
    .object({
      apiVersion: sharedString.optional(),
      kind: sharedString.optional(),
      namespace: sharedString.optional(),
      name: sharedString.optional(),
      uid: z.string().optional(),
    })
    .optional(),
  reason: sharedString.optional(),
  note: z.string().optional(),
  type: sharedString.optional(),
  action: sharedString.optional(),
  reportingController: sharedString.optional(),
  reportingInstance: sharedString.optional(),
  eventTime: timestamp,
  series: z.object({ count: z.number().int(), lastObservedTime: timestamp }).optional(),
});

/** core/v1 Namespace (cluster-scoped): `status.phase` (`Active`, `Terminating`). */
const namespaceSchema = objectSchema({ status: z.object({ phase: sharedString.optional() }).prefault({}) });

/**
 * core/v1 Node (cluster-scoped): `spec.unschedulable`, `spec.taints`, and `status.conditions`,
 * `addresses` and `allocatable` (quantities as sent, e.g. `'8'`, `'32Gi'`).
 */
const nodeSchema = objectSchema({
  spec: z
    .object({
      unschedulable: z.boolean().optional(),
      taints: listOf(z.object({ key: sharedString, value: sharedString.optional(), effect: sharedString })),
    })
    .prefault({}),
  status: z
    .object({
      conditions: listOf(conditionSchema),
      addresses: listOf(z.object({ type: sharedString, address: z.string() })),
      allocatable: stringMap,
    })
    .prefault({}),
});

/**
 * One table entry: where the kind lives (with its `kind`, so `apply` can fill in `apiVersion` and
 * `kind`) and its view. The view is compiled on its first read and kept: compiling all eight at
 * import cost 2.3–2.5 MB of RSS and 0.3 MB of heap in every process that loads k8s-types (its dist
 * imported alone, 3 runs each: RSS 68.4–69.1 → 65.8–67.0 MB), and a controller reads one or two of
 * them, if any. (The Pod, metadata and watch-frame views, which every reflector reads, are compiled
 * at load: ≈ 11 MB of RSS and 1.4 MB of heap of the package's import, BENCHMARKS.md (32).)
 */
function kind<const K extends string, S extends z.ZodType>(
  name: K,
  group: string,
  version: string,
  plural: string,
  build: () => S,
): {
  readonly resource: { readonly group: string; readonly version: string; readonly plural: string; readonly kind: K };
  readonly schema: S;
} {
  let schema: S | undefined;
  return Object.freeze({
    resource: Object.freeze({ group, version, plural, kind: name }),
    get schema(): S {
      schema ??= build();
      return schema;
    },
  });
}

/**
 * The built-in kinds with a bundled view, by kind: `{ resource, schema }` each. The schemas are
 * compiled (`compileSchema`) on their first read, once; `kinds.Pod.schema` is `podSchema` itself
 * (with its byte reader). Spreading an entry (`{ ...kinds.Service }`) reads its schema.
 * Namespace and Node are cluster-scoped (no `inNamespace`); the rest are namespaced.
 */
export const kinds = Object.freeze({
  Pod: kind('Pod', '', 'v1', 'pods', () => podSchema),
  Service: kind('Service', '', 'v1', 'services', () => compileSchema(serviceSchema)),
  ConfigMap: kind('ConfigMap', '', 'v1', 'configmaps', () => compileSchema(configMapSchema)),
  Secret: kind('Secret', '', 'v1', 'secrets', () => compileSchema(secretSchema)),
  Deployment: kind('Deployment', 'apps', 'v1', 'deployments', () => compileSchema(deploymentSchema)),
  Lease: kind('Lease', 'coordination.k8s.io', 'v1', 'leases', () => compileSchema(leaseSchema)),
  Event: kind('Event', 'events.k8s.io', 'v1', 'events', () => compileSchema(eventSchema)),
  Namespace: kind('Namespace', '', 'v1', 'namespaces', () => compileSchema(namespaceSchema)),
  Node: kind('Node', '', 'v1', 'nodes', () => compileSchema(nodeSchema)),
});

/** The view of a bundled kind: `KindView<'Service'>` is what `kinds.Service.schema` reads an object into. */
export type KindView<K extends keyof typeof kinds> = z.output<(typeof kinds)[K]['schema']>;
