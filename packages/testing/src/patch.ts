/**
 * JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values. Every member is
 * read and written as an own data property (`json-safe.ts`), so `__proto__`, `constructor` and
 * `prototype` in a patch are data: they can never reach `Object.prototype`.
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';
import { getOwn, setOwn } from './engine/json-safe.js';

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386: objects merge key by key, `null` deletes, anything else (arrays included) replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setOwn(out, k, mergePatch((getOwn(out, k) as Json | undefined) ?? null, v));
  }
  return out;
}

/** A JSON patch document failed to decode (400) or to apply (422). */
export class JsonPatchError extends ReconcileLoopError {
  /** `RL_APISERVER_JSON_PATCH_DECODE` answers 400, `RL_APISERVER_JSON_PATCH_APPLY` 422. */
  readonly code: 'RL_APISERVER_JSON_PATCH_DECODE' | 'RL_APISERVER_JSON_PATCH_APPLY';
  constructor(code: JsonPatchError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

function decodeOps(doc: unknown): Op[] {
  if (!Array.isArray(doc))
    throw new JsonPatchError(
      'RL_APISERVER_JSON_PATCH_DECODE',
      'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
    );
  return doc.map((o: unknown) => {
    if (!isObject(o) || typeof o['op'] !== 'string' || typeof o['path'] !== 'string') {
      throw new JsonPatchError('RL_APISERVER_JSON_PATCH_DECODE', 'json: invalid patch operation');
    }
    const op: Op = { op: o['op'], path: o['path'] };
    if (typeof o['from'] === 'string') op.from = o['from'];
    if (Object.hasOwn(o, 'value')) op.value = o['value'] as Json;
    return op;
  });
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `invalid JSON pointer: ${path}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(root: { v: Json }, parts: string[], path: string): { container: Json; last: string } {
  let cur: Json = root.v;
  for (const p of parts.slice(0, -1)) {
    if (Array.isArray(cur)) {
      const i = Number(p);
      if (!/^\d+$/.test(p) || i >= cur.length)
        throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
      cur = cur[i]!;
    } else if (isObject(cur)) {
      if (!Object.hasOwn(cur, p)) throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
      cur = cur[p]!;
    } else {
      throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
    }
  }
  return { container: cur, last: parts[parts.length - 1]! };
}

function getAt(root: { v: Json }, path: string): Json {
  const parts = pointer(path);
  if (parts.length === 0) return root.v;
  const { container, last } = parentOf(root, parts, path);
  if (Array.isArray(container)) {
    const i = Number(last);
    if (!/^\d+$/.test(last) || i >= container.length)
      throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
    return container[i]!;
  }
  if (isObject(container) && Object.hasOwn(container, last)) return container[last]!;
  throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
}

function removeAt(root: { v: Json }, path: string): Json {
  const parts = pointer(path);
  if (parts.length === 0) throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', 'cannot remove the document root');
  const { container, last } = parentOf(root, parts, path);
  if (Array.isArray(container)) {
    const i = Number(last);
    if (!/^\d+$/.test(last) || i >= container.length)
      throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `Unable to remove nonexistent key: ${last}: missing value`);
    return container.splice(i, 1)[0]!;
  }
  if (isObject(container) && Object.hasOwn(container, last)) {
    const v = container[last]!;
    delete container[last];
    return v;
  }
  throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `Unable to remove nonexistent key: ${last}: missing value`);
}

function addAt(root: { v: Json }, path: string, value: Json, replace: boolean): void {
  const parts = pointer(path);
  if (parts.length === 0) {
    root.v = value;
    return;
  }
  const { container, last } = parentOf(root, parts, path);
  if (Array.isArray(container)) {
    if (replace) {
      const i = Number(last);
      if (!/^\d+$/.test(last) || i >= container.length)
        throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing key: ${path}: missing value`);
      container[i] = value;
      return;
    }
    if (last === '-') {
      container.push(value);
      return;
    }
    const i = Number(last);
    if (!/^\d+$/.test(last) || i > container.length)
      throw new JsonPatchError(
        'RL_APISERVER_JSON_PATCH_APPLY',
        `Unable to access invalid index: ${last}: invalid index referenced`,
      );
    container.splice(i, 0, value);
    return;
  }
  if (!isObject(container)) throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing path: "${path}"`);
  if (replace && !Object.hasOwn(container, last))
    throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `doc is missing key: ${path}: missing value`);
  setOwn(container, last, value);
}

function deepEqual(a: Json, b: Json): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObject(v)) {
    const o: Record<string, Json> = {};
    for (const k of Object.keys(v).sort()) setOwn(o, k, sortKeys(v[k]!));
    return o;
  }
  return v;
}

/** RFC 6902 add/remove/replace/move/copy/test, applied to a copy of `target`. */
export function jsonPatch(target: Json, doc: unknown): Json {
  const ops = decodeOps(doc);
  const root = { v: structuredClone(target) };
  for (const op of ops) {
    switch (op.op) {
      case 'add':
        if (!Object.hasOwn(op, 'value'))
          throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', 'add operation does not apply: value is missing');
        addAt(root, op.path, structuredClone(op.value ?? null), false);
        break;
      case 'remove':
        removeAt(root, op.path);
        break;
      case 'replace':
        if (!Object.hasOwn(op, 'value'))
          throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', 'replace operation does not apply: value is missing');
        addAt(root, op.path, structuredClone(op.value ?? null), true);
        break;
      case 'move': {
        if (op.from === undefined)
          throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', 'move operation does not apply: from is missing');
        const v = removeAt(root, op.from);
        addAt(root, op.path, v, false);
        break;
      }
      case 'copy': {
        if (op.from === undefined)
          throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', 'copy operation does not apply: from is missing');
        addAt(root, op.path, structuredClone(getAt(root, op.from)), false);
        break;
      }
      case 'test': {
        const actual = getAt(root, op.path);
        if (!deepEqual(actual, op.value ?? null)) {
          throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `testing value ${op.path} failed: test failed`);
        }
        break;
      }
      default:
        throw new JsonPatchError('RL_APISERVER_JSON_PATCH_APPLY', `Unexpected kind: ${op.op}`);
    }
  }
  return root.v;
}
