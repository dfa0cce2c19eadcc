/**
 * Strategic merge patch over plain JSON, driven by a kind's merge keys (`patchMergeKey` in the
 * Go types): maps merge key by key and `null` deletes; a list with a merge key merges element by
 * element (matched on the key, new ones appended) and honours `{"$patch": "delete"}` on an
 * element and `{"$patch": "replace"}` in the list; a list named with key `''` is a set of
 * primitives (union, `$deleteFromPrimitiveList/<field>` removes); other lists are replaced.
 * `$patch: replace|delete` on a map replaces or deletes that map; `$retainKeys` keeps only the
 * listed keys; `$setElementOrder/<field>` is accepted and ignored. Every write is an own data
 * property (json-safe), so prototype keys stay data.
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';
import { getOwn, setOwn } from '../engine/json-safe.js';
import { isRecord } from '../engine/meta.js';

/** A strategic merge patch directive the server refuses (400). */
export class StrategicPatchError extends ReconcileLoopError {
  readonly code = 'RL_APISERVER_STRATEGIC_PATCH' as const;
}

type Keys = Readonly<Record<string, string>>;

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function mergeList(live: unknown, patch: unknown[], path: string, keys: Keys): unknown[] {
  const key = keys[path];
  if (key === undefined) return patch.filter((x) => !(isRecord(x) && x['$patch'] !== undefined)).map((x) => structuredClone(x));
  if (patch.some((x) => isRecord(x) && x['$patch'] === 'replace')) {
    return patch.filter((x) => !(isRecord(x) && x['$patch'] === 'replace')).map((x) => strip(x));
  }
  const out: unknown[] = Array.isArray(live) ? live.map((x) => structuredClone(x)) : [];
  if (key === '') {
    for (const v of patch) if (!out.some((x) => x === v)) out.push(v);
    return out;
  }
  for (const el of patch) {
    if (!isRecord(el)) throw new StrategicPatchError(`unable to find api field in struct for the list element at ${path}`);
    const id = el[key];
    const at = out.findIndex((x) => isRecord(x) && x[key] === id);
    if (el['$patch'] === 'delete') {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (el['$patch'] !== undefined && el['$patch'] !== 'merge')
      throw new StrategicPatchError(`Unknown patch type found: ${String(el['$patch'])}`);
    if (at >= 0) out[at] = mergeMap(out[at], el, path, keys);
    else out.push(strip(el));
  }
  return out;
}

/** A patch value with its directives removed (a new element or a replaced map). */
function strip(v: unknown): unknown {
  if (Array.isArray(v))
    return v.filter((x) => !(isRecord(x) && x['$patch'] !== undefined && Object.keys(x).length === 1)).map(strip);
  if (!isRecord(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('$')) continue;
    if (x === null) continue;
    setOwn(out, k, strip(x));
  }
  return out;
}

function mergeMap(live: unknown, patch: Record<string, unknown>, path: string, keys: Keys): unknown {
  const directive = patch['$patch'];
  if (directive === 'replace') return strip(patch);
  if (directive !== undefined && directive !== 'merge')
    throw new StrategicPatchError(`Unknown patch type found: ${String(directive)}`);
  const out: Record<string, unknown> = isRecord(live) ? { ...live } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k.startsWith('$setElementOrder/')) continue;
    if (k === '$retainKeys') {
      if (!Array.isArray(v)) throw new StrategicPatchError('$retainKeys must be a list of strings');
      for (const existing of Object.keys(out)) if (!v.includes(existing) && !Object.hasOwn(patch, existing)) delete out[existing];
      continue;
    }
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = getOwn(out, field);
      if (Array.isArray(cur) && Array.isArray(v))
        setOwn(
          out,
          field,
          cur.filter((x) => !v.includes(x)),
        );
      continue;
    }
    if (k.startsWith('$')) throw new StrategicPatchError(`unknown directive ${k}`);
    const sub = join(path, k);
    if (v === null) delete out[k];
    else if (isRecord(v)) {
      if (v['$patch'] === 'delete') delete out[k];
      else setOwn(out, k, mergeMap(getOwn(out, k), v, sub, keys));
    } else if (Array.isArray(v)) setOwn(out, k, mergeList(getOwn(out, k), v, sub, keys));
    else setOwn(out, k, v);
  }
  return out;
}

/** Applies a strategic merge patch to `live` (not changed) with the kind's merge keys. */
export function strategicMerge(
  live: Record<string, unknown>,
  patch: Record<string, unknown>,
  keys: Keys,
): Record<string, unknown> {
  return mergeMap(live, patch, '', keys) as Record<string, unknown>;
}
