import { z } from 'zod';
import { compileSchema, listOf, objectSchema, sharedString, timestamp } from './meta.js';
import { compactOutput } from './decode/compact.js';
import { readPodObject } from './decode/pod-reader.js';
import { withByteReader } from './decode/readers.js';
import { shareList } from './decode/share.js';
import { conditionKey, reuseRecentIP, sharedCondition } from './decode/view-parts.js';

/** The container state fields a pool tracker reads (at most one of the three is set). */
export const containerStateSchema = z.object({
  waiting: z.object({ reason: sharedString.optional() }).optional(),
  running: z.object({ startedAt: timestamp }).optional(),
  terminated: z
    .object({
      exitCode: z.number().int(),
      reason: sharedString.optional(),
      startedAt: timestamp,
      finishedAt: timestamp,
    })
    .optional(),
});

/** One entry of `status.containerStatuses`. */
export const containerStatusSchema = z.object({
  name: sharedString,
  ready: z.boolean(),
  started: z.boolean().optional(),
  restartCount: z.number().int(),
  state: containerStateSchema.optional(),
});

/**
 * One entry of `status.conditions` (`Ready`, `PodScheduled`, ...); `status` is `True` / `False` /
 * `Unknown`. The view holds only type and status, so equal conditions are one shared frozen object
 * (a handful of distinct values across every pod in the cache).
 */
export const podConditionSchema = z
  .object({ type: sharedString, status: sharedString })
  .transform((condition) => sharedCondition(condition.type, condition.status));

/** The `spec` fields a pool tracker reads. */
export const podSpecSchema = z.object({
  nodeName: sharedString.optional(),
  // Pods of one template list the same containers: one shared frozen list (see share.ts).
  containers: listOf(z.object({ name: sharedString })).transform((list) =>
    shareList('containers', list, (container) => container.name),
  ),
});

const ipString = z.string().overwrite(reuseRecentIP);

/** The `status` fields a pool tracker reads. */
export const podStatusSchema = z.object({
  phase: sharedString.optional(),
  podIP: ipString.optional(),
  podIPs: listOf(z.object({ ip: ipString })),
  hostIP: sharedString.optional(),
  startTime: timestamp,
  // Most pods carry the same few conditions, all True: one shared frozen list (see share.ts).
  conditions: listOf(podConditionSchema).transform((list) => shareList('conditions', list, conditionKey)),
  containerStatuses: listOf(containerStatusSchema),
});

/**
 * The partial core/v1 `Pod` view: only what a pool tracker reads; every other field is dropped, so
 * the cache holds only this. Reads both client shapes (class instances with `Date`, raw JSON with
 * strings). An absent `spec` / `status` reads as an empty one. Marked {@link compactOutput}: the
 * reflector caches exact-size copies of its output (see `compact.ts`).
 */
export const podSchema = withByteReader(
  compactOutput(
    compileSchema(
      objectSchema({
        spec: podSpecSchema.prefault({}),
        status: podStatusSchema.prefault({}),
      }),
    ),
  ),
  readPodObject,
);

/** A validated pod view. */
export type Pod = z.output<typeof podSchema>;
/** The pod `status` view. */
export type PodStatus = z.output<typeof podStatusSchema>;
/** One container status view. */
export type ContainerStatus = z.output<typeof containerStatusSchema>;
/** One container state view. */
export type ContainerState = z.output<typeof containerStateSchema>;
/** One pod condition view. */
export type PodCondition = z.output<typeof podConditionSchema>;

/**
 * Where a kind lives in the API. `group: ''` is the core group (`/api/v1/...`); anything else is
 * served under `/apis/{group}/{version}/...`.
 */
export interface ApiResource {
  readonly group: string;
  readonly version: string;
  /** The lower-case plural resource name, as in the URL (`pods`, `trainercells`). */
  readonly plural: string;
}

/** Where pods live in the API: core group, `v1`, `pods`. */
export const podResource: ApiResource = Object.freeze({ group: '', version: 'v1', plural: 'pods' });
