import type { z } from 'zod';
import { BACKSLASH, CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE, scanValue, skipWhitespace } from './json-scan.js';

/**
 * Cutting what the view drops out of a watch line before `JSON.parse` sees it.
 *
 * `metadata.managedFields` is a third to a half of a pod's bytes and, being hundreds of tiny
 * objects, 25–40 % of `JSON.parse`'s work on a frame; the bundled views never read it. So a line is
 * walked (strictly, with {@link scanValue}) from its start through `object.metadata`, every
 * metadata member whose key the view does not read is cut out, and the walk stops there: the rest
 * of the line goes to `JSON.parse` untouched. Used by `parseWatchLine(..., { cutUnread: true })`
 * only: on Node 26 the scan costs about what it saves on a typical pod frame (BENCHMARKS.md (15)).
 *
 * Invariants the cut keeps, so `readWatchFrame(JSON.parse(cut))` equals `readWatchFrame(JSON.parse(line))`:
 * - Only members the view never reads are removed, and only from an `ADDED` / `MODIFIED` /
 *   `DELETED` frame's object (a `BOOKMARK` or `ERROR` object is left whole).
 * - Everything walked is validated by the strict scanner and everything not walked by `JSON.parse`,
 *   and a cut member was itself valid JSON: the cut line parses exactly when the line does.
 * - Whenever the walk meets something it cannot prove (a key with an escape, a second `type`,
 *   `object` before `type`, whitespace where the apiserver writes none, any malformed token), it
 *   gives up and the caller parses the whole line as before.
 * Duplicate keys need no care: a cut member was never read, and every kept member stays in its
 * place, so `JSON.parse`'s last-one-wins picks the same values.
 */

/** The metadata fields every frame reader needs whatever the view: the object key and the cursor. */
const ALWAYS_READ = ['name', 'namespace', 'resourceVersion'] as const;

type Def = { type?: string; shape?: Record<string, unknown>; catchall?: unknown; innerType?: unknown; in?: unknown };

function def(schema: unknown): Def | undefined {
  return (schema as { _zod?: { def?: Def } } | null)?._zod?.def;
}

/** Wrappers that pass their input to the inner schema unchanged (so they read what it reads). */
const TRANSPARENT = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch']);

/** The object schema that reads `schema`'s input, through wrappers and a pipe's input side; `undefined` when not provable. */
function readingObject(schema: unknown): Def | undefined {
  let d = def(schema);
  for (let hops = 0; d !== undefined && hops < 16; hops++) {
    if (d.type === 'object') return d;
    if (d.type !== undefined && TRANSPARENT.has(d.type)) d = def(d.innerType);
    // A pipe's input side reads the raw value; a preprocess (transform first) reads anything.
    else if (d.type === 'pipe' && def(d.in)?.type !== 'transform') d = def(d.in);
    else return undefined;
  }
  return undefined;
}

const keysReadCache = new WeakMap<object, ReadonlySet<string> | null>();

/**
 * The `metadata` keys `view` reads, derived from the view itself: the declared keys of its
 * `metadata` object schema, plus the name, namespace and `resourceVersion` every frame reader needs.
 * `undefined` when the view might read other keys (a `looseObject` / `strictObject` / `catchall`,
 * a `record`, a preprocess, a union, anything not a plain zod object): then nothing is cut.
 *
 * This is how a user keeps a field the bundled views drop: declare it in their view's metadata
 * (`objectMetaSchema.extend({ managedFields: z.array(z.unknown()) })`) and it is read, so never cut.
 */
export function metadataKeysRead(view: z.ZodType<unknown>): ReadonlySet<string> | undefined {
  const cached = keysReadCache.get(view);
  if (cached !== undefined) return cached ?? undefined;
  const keys = computeKeysRead(view);
  keysReadCache.set(view, keys ?? null);
  return keys;
}

function computeKeysRead(view: unknown): ReadonlySet<string> | undefined {
  const top = readingObject(view);
  if (top === undefined || top.catchall !== undefined || top.shape === undefined) return undefined;
  const keys = new Set<string>(ALWAYS_READ);
  if (!Object.hasOwn(top.shape, 'metadata')) return keys;
  const meta = readingObject(top.shape['metadata']);
  if (meta === undefined || meta.catchall !== undefined || meta.shape === undefined) return undefined;
  for (const key of Object.keys(meta.shape)) keys.add(key);
  return keys;
}

/** A key at `i` (a `"`) with no escape and no control character: the index past it, or -1 (then give up). */
function plainKeyEnd(text: string, i: number): number {
  for (let j = i + 1; ; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) return j + 1;
    // NaN (past the end) fails `c >= 0x20` too.
    if (c === BACKSLASH || !(c >= 0x20)) return -1;
  }
}

/** Walks one object's members from `i` (past `{`); calls `member` per member; returns the index past `}`, or -1. */
function walkMembers(text: string, i: number, member: (keyStart: number, keyEnd: number, valueStart: number) => number): number {
  if (text.charCodeAt(i) === CLOSE_BRACE) return i + 1;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return -1;
    const keyEnd = plainKeyEnd(text, i);
    if (keyEnd < 0 || text.charCodeAt(keyEnd) !== COLON) return -1;
    const valueEnd = member(i, keyEnd, keyEnd + 1);
    if (valueEnd < 0) return -1;
    const c = text.charCodeAt(valueEnd);
    if (c === CLOSE_BRACE) return valueEnd + 1;
    if (c !== COMMA) return -1;
    i = valueEnd + 1;
  }
}

function keyIs(text: string, keyStart: number, keyEnd: number, name: string): boolean {
  return keyEnd - keyStart === name.length + 2 && text.startsWith(name, keyStart + 1);
}

/** A cut line, and the frame type read before the cut (checked against the parsed frame's). */
export interface CutLine {
  readonly text: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
}

const OBJECT_TYPES = ['ADDED', 'MODIFIED', 'DELETED'] as const;

/**
 * Cuts from `line` (one watch frame, as the apiserver writes it: compact JSON, `type` before
 * `object`) every member of `object.metadata` whose key is not in `keep`. Returns the shorter line
 * and the frame type it was cut for, or `undefined` when there is nothing to cut or the cut cannot
 * be proven (the caller then parses `line` as is).
 *
 * The walk stops once the metadata is cut, so a second `type` member later in the envelope is not
 * seen: the caller must check that the parsed frame's `type` is still {@link CutLine.type} (JSON
 * keeps the last duplicate) and parse `line` whole when it is not.
 */
export function cutWatchLine(line: string, keep: ReadonlySet<string>): CutLine | undefined {
  if (line.charCodeAt(0) !== OPEN_BRACE || skipWhitespace(line, 1) !== 1) return undefined;
  let type: CutLine['type'] | null | undefined; // undefined until read; null: not an object frame
  let result: { text: string; end: number; from: number } | undefined;
  // Each walk returns -1 both on failure and on purpose once the metadata is cut (nothing after it
  // needs reading): what counts is whether `result` was set.
  walkMembers(line, 1, (keyStart, keyEnd, valueStart) => {
    if (keyIs(line, keyStart, keyEnd, 'type')) {
      if (type !== undefined) return -1; // a second `type` before the object: give up
      const end = scanValue(line, valueStart);
      type = OBJECT_TYPES.find((name) => keyIs(line, valueStart, end, name)) ?? null;
      return end;
    }
    if (!keyIs(line, keyStart, keyEnd, 'object')) return scanValue(line, valueStart);
    if (type === undefined || type === null || line.charCodeAt(valueStart) !== OPEN_BRACE) return -1;
    walkMembers(line, valueStart + 1, (k0, k1, v0) => {
      if (!keyIs(line, k0, k1, 'metadata')) return scanValue(line, v0);
      if (line.charCodeAt(v0) === OPEN_BRACE) {
        const cut = cutMembers(line, v0 + 1, keep);
        if (cut !== undefined) result = { ...cut, from: v0 + 1 };
      }
      return -1;
    });
    return -1;
  });
  if (result === undefined || type === undefined || type === null) return undefined;
  return { text: line.slice(0, result.from) + result.text + line.slice(result.end), type };
}

/**
 * The members of one object (from `i`, past its `{`) with every member whose key is not in `keep`
 * removed, commas repaired, up to and including its `}`; `end` is the index past that `}` in the
 * source. `undefined` when a member cannot be proven or nothing was removed.
 */
function cutMembers(text: string, i: number, keep: ReadonlySet<string>): { text: string; end: number } | undefined {
  let out = '';
  let removed = false;
  let kept = 0;
  const end = walkMembers(text, i, (keyStart, keyEnd, valueStart) => {
    const valueEnd = scanValue(text, valueStart);
    if (valueEnd < 0) return -1;
    if (keep.has(text.slice(keyStart + 1, keyEnd - 1))) {
      out += kept++ === 0 ? text.slice(keyStart, valueEnd) : `,${text.slice(keyStart, valueEnd)}`;
    } else removed = true;
    return valueEnd;
  });
  if (end < 0 || !removed) return undefined;
  return { text: `${out}}`, end };
}
