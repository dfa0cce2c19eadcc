import { ApiServerStatusError } from '../errors.js';
import type { ResourceType } from '../kinds/resource.js';
import { applyConflicts, applyResult, conflictsBeyondLastApplied, type ApplyConflict } from '../patch/apply.js';
import { StrategicPatchError, strategicMerge } from '../patch/strategic.js';
import { badRequest, failure, invalid, required, type KubeStatus } from '../status.js';
import type { ApiServerObject } from '../types.js';
import type { ResourceEngine } from './engine.js';
import { isRecord } from './meta.js';

/** Options of a server-side apply (`PATCH` with `application/apply-patch+yaml`). */
export interface ApplyOptions {
  fieldManager: string | undefined;
  force: boolean;
  dryRun?: boolean;
  subresource?: 'status';
}

function conflictStatus(
  r: ResourceType,
  name: string,
  conflicts: ApplyConflict[],
  versions: Map<string, string | undefined>,
): KubeStatus {
  const text = (c: ApplyConflict): string => {
    const v = versions.get(c.manager);
    return `conflict with "${c.manager}"${v === undefined ? '' : ` using ${v}`}`;
  };
  const n = conflicts.length;
  const message = `Apply failed with ${n} conflict${n === 1 ? '' : 's'}: ${conflicts.map((c) => `${text(c)}: ${c.field}`).join('\n')}`;
  void r;
  void name;
  return failure(409, 'Conflict', message, {
    causes: conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: text(c), field: c.field })),
  });
}

/**
 * Server-side apply: `fieldManager` is required (422 on PatchOptions); a missing object is created
 * from the applied configuration; otherwise the configuration is merged with the kind's merge keys,
 * a field another manager owns and this one would change is a 409 with one cause per field unless
 * `force`, and the manager's managed fields are recorded (`metadata.managedFields`).
 */
export function applyObject(
  engine: ResourceEngine,
  r: ResourceType,
  ns: string,
  name: string,
  body: unknown,
  o: ApplyOptions,
): ApiServerObject {
  if (o.fieldManager === undefined || o.fieldManager === '') {
    throw new ApiServerStatusError(
      invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [required('fieldManager', 'is required for apply patch')]),
    );
  }
  if (!isRecord(body))
    throw new ApiServerStatusError(badRequest('error decoding YAML: the applied configuration must be an object'));
  if (typeof body['apiVersion'] !== 'string' || typeof body['kind'] !== 'string') {
    throw new ApiServerStatusError(
      badRequest('invalid object type: apiVersion and kind must be set in an applied configuration'),
    );
  }
  const meta = isRecord(body['metadata']) ? body['metadata'] : {};
  if (meta['name'] !== undefined && meta['name'] !== name) {
    throw new ApiServerStatusError(
      badRequest(`the name of the object (${String(meta['name'])}) does not match the name on the URL (${name})`),
    );
  }
  const applied: ApiServerObject = { ...(body as ApiServerObject), metadata: { ...(meta as ApiServerObject['metadata']), name } };
  const keys = r.strategicMergeKeys ?? {};
  const live = engine.store.get(r, `${ns}/${name}`);
  const now = engine.clock();
  if (live === undefined) {
    if (o.subresource === 'status') throw new ApiServerStatusError(engine.notFoundStatus(r, name));
    const created = applyResult({ ...applied, metadata: { name } }, applied, applied, o.fieldManager, r.apiVersion, keys, now);
    return engine.create(r, ns, created, { dryRun: o.dryRun === true });
  }
  if (!o.force) {
    const conflicts = conflictsBeyondLastApplied(live, applyConflicts(live, applied, o.fieldManager, keys), o.fieldManager, keys);
    if (conflicts.length > 0) {
      const versions = new Map<string, string | undefined>();
      for (const e of (live.metadata.managedFields ?? []) as Array<{ manager: string; operation: string; apiVersion: string }>) {
        versions.set(e.manager, e.operation === 'Update' ? e.apiVersion : undefined);
      }
      throw new ApiServerStatusError(conflictStatus(r, name, conflicts, versions));
    }
  }
  let merged: ApiServerObject;
  try {
    merged = strategicMerge(
      live as unknown as Record<string, unknown>,
      applied as unknown as Record<string, unknown>,
      keys,
    ) as ApiServerObject;
  } catch (e) {
    if (e instanceof StrategicPatchError) throw new ApiServerStatusError(badRequest(e.message));
    throw e;
  }
  const result = applyResult(live, merged, applied, o.fieldManager, r.apiVersion, keys, now);
  result.metadata = { ...result.metadata, resourceVersion: live.metadata.resourceVersion ?? '' };
  const upd: Parameters<ResourceEngine['update']>[4] = { fromPatch: true, applied: true, dryRun: o.dryRun === true };
  if (o.subresource !== undefined) upd.subresource = o.subresource;
  return engine.update(r, ns, name, result, upd);
}
