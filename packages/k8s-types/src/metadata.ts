import { z } from 'zod';
import { compactOutput } from './decode/compact.js';
import { readPartialObjectMetadata } from './decode/metadata-reader.js';
import { withByteReader } from './decode/readers.js';
import { compileSchema, objectMetaSchema, typeMetaShape } from './meta.js';

/**
 * The metadata-only view: what the apiserver sends for `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`
 * (`kind: PartialObjectMetadata`, `apiVersion: meta.k8s.io/v1`) and what a controller reads of a
 * kind it only owns or watches: `name`, `namespace`, `uid`, `resourceVersion`, `generation`,
 * `labels`, `annotations`, `ownerReferences`, `finalizers`, `creationTimestamp`,
 * `deletionTimestamp` (the standard {@link objectMetaSchema}). No `spec`, no `status`: an owned pod
 * held this way costs its metadata only (BENCHMARKS.md, *Owned pods, metadata only*).
 *
 * `apiVersion` and `kind` are kept as sent; they name the representation
 * (`meta.k8s.io/v1` / `PartialObjectMetadata`), not the object's own kind, which the resource you
 * watch already says.
 *
 * Marked `compactOutput`, as `podSchema` is: the cached copy of each object is rebuilt at its exact
 * size (zod builds objects one property at a time, which leaves V8 slack in every one). Like
 * `podSchema`, it has a byte reader (`decode/metadata-reader.ts`): the reflector reads watch frames
 * and LIST pages of it from their bytes, into the same view, without parsing what the view drops.
 */
export const partialObjectMetadataSchema = withByteReader(
  compactOutput(compileSchema(z.object({ ...typeMetaShape, metadata: objectMetaSchema }))),
  readPartialObjectMetadata,
);

/** A metadata-only object (output of {@link partialObjectMetadataSchema}). */
export type PartialObjectMetadata = z.output<typeof partialObjectMetadataSchema>;
