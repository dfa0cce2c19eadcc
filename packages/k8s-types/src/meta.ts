import { z } from 'zod';
import { byteReaderOf, withByteReader } from './decode/readers.js';
import { compactOutput, isCompactOutput } from './decode/compact.js';
import { intern, shareList, shareStringMap } from './decode/share.js';
import { EMPTY_LIST, EMPTY_STRING_MAP, ownerReferenceKey, parseRfc3339 } from './decode/view-parts.js';

/**
 * Shared building blocks for object views: timestamps, empty-by-default maps and lists, the
 * standard metadata view (object keys are primitives' `objectKey`).
 */

/**
 * A string field whose values repeat across objects (namespace, node name, phase, condition type,
 * owner name...): validated as a string, stored as one shared instance (see {@link intern}).
 */
export const sharedString = z.string().overwrite(intern);

function toEpochMs(value: string | Date | null, ctx: z.core.$RefinementCtx<string | Date | null>): number | undefined {
  if (value === null) return undefined;
  // Both client shapes meet here: LIST through the generated deserializer yields `Date`,
  // raw JSON yields an RFC3339 string; the view holds one number for either.
  const ms = typeof value === 'string' ? parseRfc3339(value) : value.getTime();
  if (Number.isNaN(ms)) {
    ctx.issues.push({ code: 'custom', message: `not an RFC3339 timestamp: ${String(value)}`, input: value });
    return undefined;
  }
  return ms;
}

/**
 * A Kubernetes `Time` as epoch milliseconds. Reads an RFC3339 string (raw JSON, the watch shape)
 * or a `Date` (@kubernetes/client-node class instances, the LIST shape); `null` (Go's zero `Time`)
 * and an absent field both read as `undefined`.
 */
export const timestamp = z.optional(z.union([z.string(), z.date(), z.null()]).transform(toEpochMs));

/**
 * A `map[string]string` (labels, annotations, selectors). Absent or `null` reads as a shared frozen
 * `{}`: no consumer distinguishes "absent" from "empty", and the shared empty costs no memory per object.
 * A small map equal to one read before (same keys in the same order, same values) is that one
 * shared frozen instance (see `share.ts`): pods of one owner carry the same labels.
 */
export const stringMap = z
  .record(z.string(), sharedString)
  .nullish()
  .transform((value): Readonly<Record<string, string>> => (value ? shareStringMap(value) : EMPTY_STRING_MAP));

/**
 * A list of `item`. Absent or `null` reads as a shared frozen `[]`, for the same reasons as
 * {@link stringMap}.
 */
export function listOf<T extends z.ZodType>(item: T) {
  return z
    .array(item)
    .nullish()
    .transform((value): readonly z.output<T>[] => value ?? EMPTY_LIST);
}

/**
 * An owner reference. The apiserver refuses one without `apiVersion`, `kind`, `name` or `uid`, so
 * all four are required: a controller adopting or garbage-collecting by owner matches on `uid`.
 */
export const ownerReferenceSchema = z.object({
  apiVersion: sharedString,
  kind: sharedString,
  name: sharedString,
  uid: sharedString,
  controller: z.boolean().optional(),
});

/**
 * The standard `metadata` view every object schema shares. `name` is required (it is the object
 * key); everything else the apiserver always sets is still optional, so a hand-built object (a
 * test, an in-process source) validates too. Unknown fields are dropped.
 *
 * `finalizers` and `deletionGracePeriodSeconds` (what a controller reads to finish a deletion) are
 * absent from the view when absent from the object: most objects carry neither, and a cached object
 * pays nothing for a field it does not have.
 *
 * Extend it with zod's `.extend()` and pass the result as `metadata` to {@link objectSchema}; the
 * fields above stay, yours are added:
 * `objectSchema({ metadata: objectMetaSchema.extend({ generateName: z.string().optional() }), spec })`.
 */
export const objectMetaSchema = z.object({
  name: z.string(),
  namespace: sharedString.optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  labels: stringMap,
  annotations: stringMap,
  // Every pod of one owner carries the same references: one shared frozen list (see share.ts).
  ownerReferences: listOf(ownerReferenceSchema).transform((list) => shareList('ownerReferences', list, ownerReferenceKey)),
  finalizers: z.array(sharedString).optional(),
  creationTimestamp: timestamp,
  deletionTimestamp: timestamp,
  deletionGracePeriodSeconds: z.number().int().optional(),
});

/** The metadata view (output of {@link objectMetaSchema}). */
export type ObjectMeta = z.output<typeof objectMetaSchema>;
/** Owner reference view. */
export type OwnerReference = z.output<typeof ownerReferenceSchema>;

/**
 * `apiVersion` and `kind`, for a view that wants them: spread into the shape given to
 * {@link objectSchema} (`objectSchema({ ...typeMetaShape, spec })`). Optional, because the apiserver
 * omits both on the items of a LIST of a built-in kind (pods); custom resources carry them.
 */
export const typeMetaShape = {
  apiVersion: sharedString.optional(),
  kind: sharedString.optional(),
} as const;

/** The shape {@link objectSchema} builds: yours, plus the standard `metadata` unless you gave one. */
export type ObjectShape<Shape extends z.core.$ZodLooseShape> = Shape extends { metadata: z.core.SomeType }
  ? Shape
  : Shape & { metadata: typeof objectMetaSchema };

/**
 * Builds an object schema with the standard metadata view plus the fields you name, e.g.
 * `objectSchema({ spec: z.object({ replicas: z.number() }), status: z.object({}).optional() })`
 * for a custom resource. Top-level fields the shape does not name are dropped, `apiVersion` and
 * `kind` included (add {@link typeMetaShape} to keep them). A `metadata` you pass is used as given,
 * never replaced: build it with `objectMetaSchema.extend({...})` to keep the standard fields.
 */
export function objectSchema<const Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
): z.ZodObject<ObjectShape<Shape>, z.core.$strip> {
  return z.object({ metadata: objectMetaSchema, ...shape }) as unknown as z.ZodObject<ObjectShape<Shape>, z.core.$strip>;
}

/**
 * Returns `schema` with zod's ahead-of-time compiled fast path installed (`z.compile`): valid input
 * takes generated straight-line code, invalid input falls back to the regular parser, so results
 * and errors are identical. A schema zod cannot compile comes back unchanged. The reflector applies
 * this to whatever object schema it is given; the bundled schemas are compiled already.
 */
export function compileSchema<T extends z.ZodType>(schema: T): T {
  const compiled = z.compile(schema);
  if (compiled === schema) return schema;
  const reader = byteReaderOf(schema);
  if (reader !== undefined) withByteReader(compiled, reader);
  return isCompactOutput(schema) ? compactOutput(compiled) : compiled;
}

/** Any zod schema producing `T`: what the reflector validates objects with. */
export type ObjectSchema<T> = z.ZodType<T>;

/** The least an object view must carry for the reflector and primitives' `objectKey`. */
export interface KubernetesObjectView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly resourceVersion?: string | undefined;
  };
}
