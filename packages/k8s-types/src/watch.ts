import { z } from 'zod';
import { describeIssue, InvalidObjectError, MalformedWatchFrameError, type ValidationIssue } from './errors.js';
import { readFrame, readListPage, type ListPage } from './decode/frames.js';
import { utf8 } from './decode/cursor.js';
import { byteReaderOf, type ObjectReader } from './decode/readers.js';
import { compactFresh, isCompactOutput } from './decode/compact.js';
import { cutWatchLine, metadataKeysRead } from './decode/frame-cut.js';
import { objectKey } from '@reconcile-loop/primitives';
import { compileSchema, listOf, type KubernetesObjectView } from './meta.js';
import type { WatchFrame } from './watch-frame.js';

/** One `details.causes[]` entry of a `Status`. `reason` is the wire name of Go's `StatusCause.Type`. */
export const statusCauseSchema = z.object({
  reason: z.string().optional(),
  message: z.string().optional(),
  field: z.string().optional(),
});

/**
 * The Kubernetes `Status` object (the body of a failed request, or the payload of an `ERROR` frame):
 * the fields a reader needs to tell a dead resourceVersion from a transient failure, and to say why.
 */
export const statusSchema = z.object({
  code: z.number().int().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  details: z
    .object({
      causes: listOf(statusCauseSchema),
      /** Seconds the server asks the client to wait before retrying (429, some 504s); the header `Retry-After` says the same. */
      retryAfterSeconds: z.number().int().nonnegative().optional(),
    })
    .optional(),
});

/** The watch event types the apiserver sends. */
export const watchEventTypes = ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'] as const;
/** A watch event type. */
export type WatchEventType = (typeof watchEventTypes)[number];

const cursorCarrier = z.object({ metadata: z.object({ resourceVersion: z.string() }) });

/**
 * The envelope of one watch frame: its `type`, its cursor (`object.metadata.resourceVersion`) and,
 * for `ERROR`, the `Status`. Read from every frame; the payload is validated against an object
 * schema only for `ADDED` / `MODIFIED` / `DELETED` (a `BOOKMARK` carries a bare cursor and an
 * `ERROR` a `Status`, so validating either as an object would fail on every frame).
 */
export const watchFrameSchema = compileSchema(
  z.discriminatedUnion('type', [
    z.object({ type: z.enum(['ADDED', 'MODIFIED', 'DELETED']), object: cursorCarrier }),
    z.object({ type: z.literal('BOOKMARK'), object: cursorCarrier }),
    z.object({ type: z.literal('ERROR'), object: statusSchema }),
  ]),
);

/** The envelope view (output of {@link watchFrameSchema}). */
export type WatchFrameEnvelope = z.output<typeof watchFrameSchema>;

function flatten(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({ path: issue.path, message: issue.message }));
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function salvageResourceVersion(raw: unknown): string | undefined {
  const resourceVersion = field(field(raw, 'metadata'), 'resourceVersion');
  return typeof resourceVersion === 'string' ? resourceVersion : undefined;
}

function salvageKey(raw: unknown): string | undefined {
  const metadata = field(raw, 'metadata');
  const name = field(metadata, 'name');
  if (typeof name !== 'string') return undefined;
  const namespace = field(metadata, 'namespace');
  return objectKey({ metadata: { name, namespace: typeof namespace === 'string' ? namespace : undefined } });
}

/**
 * Validates one object against `schema`. Throws {@link InvalidObjectError} (with the object key and
 * `resourceVersion` when the metadata is readable) instead of returning a partial object.
 */
export function parseObject<T>(schema: z.ZodType<T>, raw: unknown, frameType: string): T {
  const result = schema.safeParse(raw);
  if (result.success) return isCompactOutput(schema) ? compactFresh(result.data) : result.data;
  const key = salvageKey(raw);
  const issues = flatten(result.error);
  const first = issues[0];
  const where = first ? ` at ${describeIssue(first)}` : '';
  throw new InvalidObjectError(`${frameType} object ${key ?? '<unnamed>'} does not validate${where}`, {
    objectKey: key,
    resourceVersion: salvageResourceVersion(raw),
    frameType,
    issues,
  });
}

/**
 * Reads one decoded watch frame. Throws {@link MalformedWatchFrameError} when the envelope cannot
 * be read (carrying the cursor when one is readable, so a reader can advance past the frame), and
 * {@link InvalidObjectError} when an `ADDED` / `MODIFIED` / `DELETED` payload does not validate.
 */
export function readWatchFrame<T>(raw: unknown, schema: z.ZodType<T>): WatchFrame<T> {
  // Hot path: an object or bookmark frame's envelope is a type and a cursor, read directly rather
  // than through watchFrameSchema, which would build an output nothing keeps on every frame. Any
  // frame this does not accept (ERROR, or a broken envelope) goes through the schema, whose verdict
  // on these frames is the same.
  const type = field(raw, 'type');
  const object = field(raw, 'object');
  const resourceVersion = field(field(object, 'metadata'), 'resourceVersion');
  if (typeof resourceVersion === 'string') {
    if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
      return { type, resourceVersion, object: parseObject(schema, object, type) };
    if (type === 'BOOKMARK') return { type, resourceVersion };
  }
  const envelope = watchFrameSchema.safeParse(raw);
  if (!envelope.success) {
    throw new MalformedWatchFrameError(`unreadable watch frame envelope (type ${typeof type === 'string' ? type : '<none>'})`, {
      frameType: typeof type === 'string' ? type : undefined,
      resourceVersion: typeof resourceVersion === 'string' ? resourceVersion : undefined,
      issues: flatten(envelope.error),
    });
  }
  const frame = envelope.data;
  switch (frame.type) {
    case 'BOOKMARK':
      return { type: 'BOOKMARK', resourceVersion: frame.object.metadata.resourceVersion };
    case 'ERROR':
      return { type: 'ERROR', status: frame.object };
    default:
      return {
        type: frame.type,
        resourceVersion: frame.object.metadata.resourceVersion,
        object: parseObject(schema, (raw as { object: unknown }).object, frame.type),
      };
  }
}

/** Options of {@link parseWatchLine}. */
export interface ParseWatchLineOptions {
  /**
   * Cut the `object.metadata` members the view never reads (`managedFields`, for the bundled views)
   * out of the line before `JSON.parse` (see `frame-cut.ts`). The frame read is the same either way.
   * Off by default: on Node 26 the strict scan costs more CPU than the parse it saves on a typical
   * pod frame (measured in BENCHMARKS.md (15), lever (a)); it pays only where the unread members
   * are most of the frame.
   */
  readonly cutUnread?: boolean | undefined;
}

/**
 * Reads one watch line (one JSON document). A line that is not JSON is a
 * {@link MalformedWatchFrameError}; otherwise as {@link readWatchFrame}.
 */
export function parseWatchLine<T>(line: string, schema: z.ZodType<T>, options?: ParseWatchLineOptions): WatchFrame<T> {
  if (options?.cutUnread !== true) return parseWholeLine(line, schema);
  const keep = metadataKeysRead(schema);
  const cut = keep === undefined ? undefined : cutWatchLine(line, keep);
  if (cut === undefined) return parseWholeLine(line, schema);
  let raw: unknown;
  try {
    raw = JSON.parse(cut.text);
  } catch {
    // The cut line parses exactly when the line does: the line's own error (positions included) is the one to report.
    return parseWholeLine(line, schema);
  }
  // A later duplicate `type` (the cut stops walking after the metadata) decides the frame: read the whole line.
  if (field(raw, 'type') !== cut.type) return parseWholeLine(line, schema);
  return readWatchFrame(raw, schema);
}

function parseWholeLine<T>(line: string, schema: z.ZodType<T>): WatchFrame<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (error) {
    throw new MalformedWatchFrameError(`watch line is not JSON: ${(error as Error).message}`);
  }
  return readWatchFrame(raw, schema);
}

/**
 * Reads one watch frame from its bytes (one JSON document, no trailing newline): what a reader
 * that splits the socket's bytes itself hands over, so no line is decoded to a string first. Same
 * frames and errors as {@link parseWatchLine} on the decoded line.
 */
export function parseWatchFrame<T>(bytes: Uint8Array, schema: z.ZodType<T>): WatchFrame<T> {
  // The view's byte reader when it has one (the bundled Pod view): no decoding, no JSON.parse of
  // what the view drops. It returns a frame only when this path would return an equal one.
  const reader = byteReaderOf(schema) as ObjectReader<T & KubernetesObjectView> | undefined;
  const read = reader === undefined ? undefined : readFrame(bytes, reader);
  return read ?? parseWholeLine(utf8.decode(bytes), schema);
}

/**
 * Reads one LIST page from its body's bytes with the view's byte reader (the bundled `podSchema`
 * has one): the cursor and every item, each read into the view or, when the reader cannot prove
 * it, parsed for `parseObject` to validate. `undefined` when the view has no byte reader or the
 * page is not provably what `JSON.parse` would read: then parse the body the exact way.
 */
export function parseListPage<T>(bytes: Uint8Array, schema: z.ZodType<T>): ListPage<T> | undefined {
  const reader = byteReaderOf(schema) as ObjectReader<T> | undefined;
  return reader === undefined ? undefined : readListPage(bytes, reader);
}
