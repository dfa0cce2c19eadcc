/**
 * Server-side apply, reduced to what a controller observes: field ownership per manager
 * (`metadata.managedFields`, FieldsV1), conflicts as 409 with one cause per field, `force` to take
 * ownership, and removal of the fields a manager stops applying. Field paths follow the kind's
 * merge keys: a keyed list element is `k:{"name":"c"}`, a set member `v:"x"`, any other list is
 * atomic (one field).
 */
import { isRecord, rfc3339, stable } from '../engine/meta.js';
import { getOwn, setOwn } from '../engine/json-safe.js';
import type { ApiServerObject } from '../types.js';

type Keys = Readonly<Record<string, string>>;

/** One `metadata.managedFields` entry. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

/** A field path: the FieldsV1 segments from the root (`f:spec`, `k:{"name":"c"}`, `f:image`). */
type FieldPath = string[];

const IGNORED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
]);

function walk(v: unknown, path: FieldPath, schemaPath: string, keys: Keys, out: FieldPath[]): void {
  if (isRecord(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) {
      if (schemaPath === 'metadata' && IGNORED_META.has(k)) continue;
      if (schemaPath === '' && (k === 'apiVersion' || k === 'kind' || k === 'status')) continue;
      walk(x, [...path, `f:${k}`], schemaPath === '' ? k : `${schemaPath}.${k}`, keys, out);
    }
    return;
  }
  const key = keys[schemaPath];
  if (Array.isArray(v) && key !== undefined && v.length > 0) {
    for (const el of v) {
      if (key === '') out.push([...path, `v:${JSON.stringify(el)}`]);
      else if (isRecord(el)) {
        const item = [...path, `k:${JSON.stringify({ [key]: el[key] })}`];
        out.push([...item, '.']);
        walk(el, item, schemaPath, keys, out);
      }
    }
    return;
  }
  if (path.length > 0) out.push(path);
}

/** The leaf fields an object sets (metadata identity, kind, apiVersion and status excluded). */
export function fieldsOf(obj: unknown, keys: Keys): FieldPath[] {
  const out: FieldPath[] = [];
  walk(obj, [], '', keys, out);
  return out;
}

/** FieldsV1 JSON of a set of paths. */
export function toFieldsV1(paths: FieldPath[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const p of paths) {
    let cur = root;
    for (const seg of p) {
      let next = getOwn(cur, seg);
      if (!isRecord(next)) {
        next = {};
        setOwn(cur, seg, next);
      }
      cur = next as Record<string, unknown>;
    }
  }
  return root;
}

function fromFieldsV1(f: unknown, prefix: FieldPath = []): FieldPath[] {
  if (!isRecord(f) || Object.keys(f).length === 0) return prefix.length > 0 ? [prefix] : [];
  const out: FieldPath[] = [];
  for (const [k, v] of Object.entries(f)) out.push(...fromFieldsV1(v, [...prefix, k]));
  return out;
}

function valueAt(obj: unknown, path: FieldPath): { found: boolean; value?: unknown } {
  let cur: unknown = obj;
  for (const seg of path) {
    if (seg === '.') continue;
    if (seg.startsWith('f:') && isRecord(cur) && Object.hasOwn(cur, seg.slice(2))) cur = cur[seg.slice(2)];
    else if (seg.startsWith('k:') && Array.isArray(cur)) {
      const want = JSON.parse(seg.slice(2)) as Record<string, unknown>;
      const [[k, v]] = Object.entries(want) as [[string, unknown]];
      const el = cur.find((x) => isRecord(x) && x[k] === v);
      if (el === undefined) return { found: false };
      cur = el;
    } else if (seg.startsWith('v:') && Array.isArray(cur)) {
      const v = JSON.parse(seg.slice(2)) as unknown;
      if (!cur.includes(v)) return { found: false };
      cur = v;
    } else return { found: false };
  }
  return { found: true, value: cur };
}

function removeAt(obj: Record<string, unknown>, path: FieldPath): void {
  const parentPath = path.slice(0, -1);
  const last = path[path.length - 1]!;
  const parent = parentPath.length === 0 ? { found: true, value: obj } : valueAt(obj, parentPath);
  if (!parent.found) return;
  const p = parent.value;
  if (last.startsWith('f:') && isRecord(p)) delete p[last.slice(2)];
  else if (last.startsWith('k:') && Array.isArray(p)) {
    const [[k, v]] = Object.entries(JSON.parse(last.slice(2)) as Record<string, unknown>) as [[string, unknown]];
    const i = p.findIndex((x) => isRecord(x) && x[k] === v);
    if (i >= 0) p.splice(i, 1);
  } else if (last.startsWith('v:') && Array.isArray(p)) {
    const i = p.indexOf(JSON.parse(last.slice(2)));
    if (i >= 0) p.splice(i, 1);
  }
}

const id = (p: FieldPath): string => JSON.stringify(p);

/** The managed fields of `obj` as entries (empty when it has none). */
export function managedFieldsOf(obj: ApiServerObject): ManagedFieldsEntry[] {
  const m = obj.metadata.managedFields;
  return Array.isArray(m) ? (m.filter((e) => isRecord(e)) as unknown as ManagedFieldsEntry[]) : [];
}

/** One conflicting field: who owns it, where. */
export interface ApplyConflict {
  manager: string;
  field: string;
}

function dotted(p: FieldPath): string {
  return p
    .filter((s) => s !== '.')
    .map((s) =>
      s.startsWith('f:')
        ? `.${s.slice(2)}`
        : s.startsWith('k:')
          ? `[${Object.entries(JSON.parse(s.slice(2)) as Record<string, unknown>)
              .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
              .join(',')}]`
          : `[${s.slice(2)}]`,
    )
    .join('');
}

/**
 * Conflicts of `applied` by `manager` against `live`: fields it sets to a value other than the
 * live one, that another manager owns.
 */
export function applyConflicts(live: ApiServerObject, applied: ApiServerObject, manager: string, keys: Keys): ApplyConflict[] {
  const owners = new Map<string, string[]>();
  for (const e of managedFieldsOf(live)) {
    if (e.manager === manager && e.operation === 'Apply') continue;
    for (const p of fromFieldsV1(e.fieldsV1)) {
      const k = id(p);
      owners.set(k, [...(owners.get(k) ?? []), e.manager]);
    }
  }
  const out: ApplyConflict[] = [];
  for (const p of fieldsOf(applied, keys)) {
    if (p[p.length - 1] === '.') continue;
    const others = owners.get(id(p));
    if (others === undefined) continue;
    const a = valueAt(applied, p);
    const l = valueAt(live, p);
    if (l.found && stable(a.value) === stable(l.value)) continue;
    for (const m of others) out.push({ manager: m, field: dotted(p) });
  }
  return out;
}

/** The annotation `kubectl apply` (client-side) keeps the applied configuration in. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The conflicts left once those on fields of `live`'s last client-side applied configuration are
 * allowed: apimachinery's `lastAppliedManager` lets the manager `kubectl` take over, without
 * `--force-conflicts`, the fields a client-side `kubectl apply` set (the upgrade from client-side to
 * server-side apply). Other managers, or an annotation that is not JSON, keep every conflict.
 */
export function conflictsBeyondLastApplied(
  live: ApiServerObject,
  conflicts: ApplyConflict[],
  manager: string,
  keys: Keys,
): ApplyConflict[] {
  if (manager !== 'kubectl') return conflicts;
  const text = live.metadata.annotations?.[LAST_APPLIED];
  if (typeof text !== 'string') return conflicts;
  let last: unknown;
  try {
    last = JSON.parse(text) as unknown;
  } catch {
    return conflicts;
  }
  const allowed = new Set(fieldsOf(last, keys).map(dotted));
  return conflicts.filter((c) => !allowed.has(c.field));
}

/**
 * The object after `manager` applies `applied` to `live` (merged with the kind's merge keys by
 * `merge`): fields the manager applied before and no longer applies are removed unless another
 * manager owns them; ownership moves to the manager for every applied field (`force` already
 * checked by the caller).
 */
export function applyResult(
  live: ApiServerObject,
  merged: ApiServerObject,
  applied: ApiServerObject,
  manager: string,
  apiVersion: string,
  keys: Keys,
  now: Date,
): ApiServerObject {
  const entries = managedFieldsOf(live);
  const appliedPaths = fieldsOf(applied, keys);
  const appliedIds = new Set(appliedPaths.map(id));
  const mine = entries.find((e) => e.manager === manager && e.operation === 'Apply');
  const othersOwn = new Set<string>();
  for (const e of entries) if (e !== mine) for (const p of fromFieldsV1(e.fieldsV1)) othersOwn.add(id(p));
  const out = structuredClone(merged);
  if (mine !== undefined) {
    for (const p of fromFieldsV1(mine.fieldsV1)) {
      if (p[p.length - 1] === '.' || appliedIds.has(id(p)) || othersOwn.has(id(p))) continue;
      removeAt(out as Record<string, unknown>, p);
    }
  }
  const next: ManagedFieldsEntry[] = [];
  for (const e of entries) {
    if (e === mine) continue;
    const kept = fromFieldsV1(e.fieldsV1).filter((p) => !appliedIds.has(id(p)));
    if (kept.length > 0) next.push({ ...e, fieldsV1: toFieldsV1(kept) });
  }
  const fieldsV1 = toFieldsV1(appliedPaths);
  // Re-applying the same set keeps the entry's time, so an unchanged apply writes nothing.
  const unchanged = mine !== undefined && stable(mine.fieldsV1) === stable(fieldsV1);
  next.push(unchanged ? mine : { manager, operation: 'Apply', apiVersion, time: rfc3339(now), fieldsType: 'FieldsV1', fieldsV1 });
  out.metadata = { ...out.metadata, managedFields: next };
  return out;
}

/**
 * Ownership after an Update (PUT or non-apply PATCH) by `manager`: it owns every field whose value
 * it changed, taken from whoever owned it. Objects nobody manages yet stay unmanaged unless a
 * manager was named.
 */
export function updateManagedFields(
  old: ApiServerObject,
  next: ApiServerObject,
  manager: string,
  apiVersion: string,
  keys: Keys,
  now: Date,
): ApiServerObject {
  // The written object's managedFields are the base when it carries any (a client may rewrite them, as
  // kubectl's client-side-to-server-side apply upgrade does); an empty or absent list keeps the live
  // object's, so a client that does not know the field cannot wipe it (apimachinery's FieldManager).
  const written = managedFieldsOf(next);
  const entries = written.length > 0 ? written : managedFieldsOf(old);
  const changed = fieldsOf(next, keys).filter((p) => {
    const o = valueAt(old, p);
    return !o.found || stable(o.value) !== stable(valueAt(next, p).value);
  });
  if (changed.length === 0) {
    const meta = { ...next.metadata };
    if (written.length > 0) meta.managedFields = written;
    else if (old.metadata.managedFields === undefined) delete meta.managedFields;
    else meta.managedFields = old.metadata.managedFields;
    return { ...next, metadata: meta };
  }
  const changedIds = new Set(changed.map(id));
  const out: ManagedFieldsEntry[] = [];
  let mine: FieldPath[] = [];
  for (const e of entries) {
    const kept = fromFieldsV1(e.fieldsV1).filter((p) => !changedIds.has(id(p)));
    if (e.manager === manager && e.operation === 'Update') {
      mine = kept;
      continue;
    }
    if (kept.length > 0) out.push({ ...e, fieldsV1: toFieldsV1(kept) });
  }
  const all = [...mine, ...changed];
  if (all.length > 0)
    out.push({ manager, operation: 'Update', apiVersion, time: rfc3339(now), fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(all) });
  return { ...next, metadata: { ...next.metadata, managedFields: out } };
}
