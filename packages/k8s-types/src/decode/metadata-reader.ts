import type { KubernetesObjectView } from '../meta.js';
import { sharedStr } from './cursor.js';
import { readObjectMeta } from './pod-reader.js';
import { level, members, required } from './view-reader.js';

/**
 * The metadata-only view (`partialObjectMetadataSchema`, `metadata.ts`) read straight from a watch
 * frame's or a LIST item's bytes, as `pod-reader.ts` reads the Pod view: `apiVersion`, `kind` and
 * the standard metadata are read, everything else the apiserver sends in a `PartialObjectMetadata`
 * (`managedFields`, `generateName`, ...) is stepped over without being built.
 *
 * What this buys over `JSON.parse` and zod: no parse of the members the view drops (`managedFields`
 * is most of a pod's metadata), and no per-object entry in V8's string table, where `JSON.parse`
 * puts every string value of ten characters or fewer (a `resourceVersion`, one per object).
 *
 * Invariant (as `pod-reader.ts`'s): {@link readPartialObjectMetadata} returns a view only when
 * `partialObjectMetadataSchema` (through `parseObject`) returns an equal one for the same JSON (the
 * same keys in the same order, the same values, frozen and shared alike); otherwise it ends the read
 * with `NOT_PROVEN` and the exact path reads the object. `metadata-reader.test.ts` holds the two equal.
 */

const PARTIAL = level(['apiVersion', 'kind', 'metadata']);
const readPartialField = (index: number): unknown => (index === 2 ? readObjectMeta() : sharedStr());

/** Reads the object at the cursor as `partialObjectMetadataSchema` would validate it. */
export function readPartialObjectMetadata(): KubernetesObjectView {
  const fields: unknown[] = [];
  const present = members(PARTIAL.keys, readPartialField, fields);
  required(present, 0b100); // metadata
  return PARTIAL.shape.build(present, fields) as unknown as KubernetesObjectView;
}
