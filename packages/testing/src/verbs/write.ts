import type { IncomingMessage, ServerResponse } from 'node:http';
import { applyObject, type ApplyOptions } from '../engine/apply.js';
import type { ApiServerDeleteOptions, PatchType, WriteOptions } from '../engine/engine.js';
import { isRecord } from '../engine/meta.js';
import { ApiServerStatusError } from '../errors.js';
import { bodyMediaTypes, checkContentType, mediaType, parseBool, readJson, sendJson, type BodyKind } from '../http/io.js';
import type { ResourceType } from '../kinds/resource.js';
import { badRequest, deleteSuccess, forbidden, invalid, unsupportedMediaType } from '../status.js';
import type { ApiServerObject } from '../types.js';
import { subresourceOf, type Route, type ServerContext } from './context.js';
import { checkFields, fieldValidationOf } from './field-validation.js';
import { inShard, listBody, selected, selectors, shardFilter } from './query.js';

/** The patch type a PATCH's Content-Type names (415 for one the kind does not accept). */
function patchType(req: IncomingMessage, r: ResourceType): PatchType | 'apply' {
  const ct = mediaType(req);
  if (ct === 'application/apply-patch+yaml') return 'apply';
  if (ct === 'application/merge-patch+json') return 'merge';
  if (ct === 'application/json-patch+json') return 'json';
  if (ct === 'application/strategic-merge-patch+json' && r.strategicMergeKeys !== undefined) return 'strategic';
  const accepted = ['application/json-patch+json', 'application/merge-patch+json'];
  if (r.strategicMergeKeys !== undefined) accepted.push('application/strategic-merge-patch+json');
  accepted.push('application/apply-patch+yaml');
  throw new ApiServerStatusError(unsupportedMediaType(accepted));
}

/** The kind a create or update body is read as: the route's (protobuf bodies name it in their envelope). */
function bodyKind(r: ResourceType): BodyKind {
  return { apiVersion: r.apiVersion, kind: r.kind };
}

/** `gracePeriodSeconds` and `preconditions` from the query and an optional `DeleteOptions` body (JSON or protobuf). */
async function deleteOptions(req: IncomingMessage, q: URLSearchParams, r: ResourceType): Promise<ApiServerDeleteOptions> {
  const opts: ApiServerDeleteOptions = {};
  const g = q.get('gracePeriodSeconds');
  if (g !== null && g !== '') {
    if (!/^-?\d+$/.test(g)) throw new ApiServerStatusError(badRequest(`invalid value for gracePeriodSeconds: ${g}`));
    opts.gracePeriodSeconds = Number(g);
  }
  const body = await readJson(req, true, { apiVersion: r.apiVersion, kind: 'DeleteOptions' });
  if (body !== undefined) {
    if (!isRecord(body)) throw new ApiServerStatusError(badRequest('DeleteOptions must be a JSON object'));
    const bg = body['gracePeriodSeconds'];
    if (bg !== undefined && bg !== null) {
      if (typeof bg !== 'number' || !Number.isInteger(bg))
        throw new ApiServerStatusError(badRequest('gracePeriodSeconds must be an integer'));
      opts.gracePeriodSeconds = bg;
    }
    const pre = body['preconditions'];
    if (isRecord(pre)) {
      const p: { uid?: string; resourceVersion?: string } = {};
      if (typeof pre['uid'] === 'string') p.uid = pre['uid'];
      if (typeof pre['resourceVersion'] === 'string') p.resourceVersion = pre['resourceVersion'];
      opts.preconditions = p;
    }
  }
  return opts;
}

type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/** `dryRun`: absent, or `All` (anything else is 422 on the verb's options, worded as the real server). */
function dryRunOf(q: URLSearchParams, kind: OptionsKind): boolean {
  const values = q.getAll('dryRun');
  if (values.length === 0) return false;
  if (values.every((v) => v === 'All')) return true;
  const list = `[${values.map((v) => JSON.stringify(v)).join(',')}]`;
  throw new ApiServerStatusError(
    invalid({ group: 'meta.k8s.io', kind }, '', [
      { field: 'dryRun', type: 'FieldValueNotSupported', body: `Unsupported value: ${list}: supported values: "All"` },
    ]),
  );
}

/**
 * The write's manager for managedFields: `fieldManager` when given (at most 128 characters), else
 * the user agent's product token, as the apiserver derives it.
 */
function writeOptions(req: IncomingMessage, q: URLSearchParams, kind: OptionsKind): WriteOptions {
  const o: WriteOptions = { dryRun: dryRunOf(q, kind) };
  const fm = q.get('fieldManager');
  if (fm !== null && fm !== '') {
    if (fm.length > 128)
      throw new ApiServerStatusError(
        invalid({ group: 'meta.k8s.io', kind }, '', [
          { field: 'fieldManager', type: 'FieldValueInvalid', body: `Too long: may not be more than 128 bytes` },
        ]),
      );
    o.fieldManager = fm;
    o.fieldManagerExplicit = true;
  } else {
    const ua = req.headers['user-agent'] ?? '';
    o.fieldManager = ua.split('/')[0]!.slice(0, 128) || 'unknown';
  }
  return o;
}

/** POST to a collection: 201 with the created object (dry run: what would be created). */
export async function serveCreate(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  q: URLSearchParams,
): Promise<void> {
  checkContentType(req, bodyMediaTypes(bodyKind(route.resource)));
  const opts = writeOptions(req, q, 'CreateOptions');
  const fv = fieldValidationOf(q, 'CreateOptions');
  const body = await readJson(req, false, bodyKind(route.resource));
  checkFields(res, route.resource, body, fv);
  sendJson(res, 201, ctx.engine.create(route.resource, route.namespace ?? '', body, opts));
}

/** PUT of an object or its status. */
export async function serveUpdate(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  q: URLSearchParams,
): Promise<void> {
  checkContentType(req, bodyMediaTypes(bodyKind(route.resource)));
  const opts = writeOptions(req, q, 'UpdateOptions');
  const fv = fieldValidationOf(q, 'UpdateOptions');
  const body = await readJson(req, false, bodyKind(route.resource));
  checkFields(res, route.resource, body, fv);
  sendJson(
    res,
    200,
    ctx.engine.update(route.resource, route.namespace ?? '', route.name!, body, { ...subresourceOf(route), ...opts }),
  );
}

/** PATCH of an object or its status: JSON, merge, strategic merge, or server-side apply. */
export async function servePatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  q: URLSearchParams,
): Promise<void> {
  const type = patchType(req, route.resource);
  const opts = writeOptions(req, q, 'PatchOptions');
  const force = parseBool(q.get('force'));
  if (force === 'invalid') throw new ApiServerStatusError(badRequest(`invalid value for force: ${q.get('force') ?? ''}`));
  if (force === true && type !== 'apply') {
    throw new ApiServerStatusError(
      invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [
        forbidden('force', 'may not be specified for non-apply patch'),
      ]),
    );
  }
  const fv = fieldValidationOf(q, 'PatchOptions');
  const body = await readJson(req, false);
  // A JSON patch (an array) names paths, not fields: only merge, strategic and apply bodies are checked.
  checkFields(res, route.resource, body, fv);
  const r = route.resource;
  const ns = route.namespace ?? '';
  if (type === 'apply') {
    const a: ApplyOptions = {
      fieldManager: opts.fieldManagerExplicit === true ? opts.fieldManager : undefined,
      force: force === true,
      dryRun: opts.dryRun === true,
    };
    if (route.kind === 'status') a.subresource = 'status';
    const existed = ctx.store.get(r, `${ns}/${route.name!}`) !== undefined;
    sendJson(res, existed ? 200 : 201, applyObject(ctx.engine, r, ns, route.name!, body, a));
    return;
  }
  sendJson(res, 200, ctx.engine.patch(r, ns, route.name!, type, body, { ...subresourceOf(route), ...opts }));
}

/** DELETE of one object: the object (terminating or last state) for built-ins, a Success Status for custom resources once gone. */
export async function serveDelete(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  q: URLSearchParams,
): Promise<void> {
  const r = route.resource;
  const opts = await deleteOptions(req, q, r);
  if (dryRunOf(q, 'DeleteOptions')) opts.dryRun = true;
  const out = ctx.engine.delete(r, route.namespace ?? '', route.name!, opts);
  if (out.deleted && !r.returnDeletedObject) sendJson(res, 200, deleteSuccess(r, route.name!, out.object.metadata.uid));
  else sendJson(res, 200, out.object);
}

/**
 * DELETE of a collection: every selected object, answered as a list of what was deleted. The
 * selection is a LIST's (kube-apiserver's DeleteCollection lists with the same options), so a
 * `shardSelector` narrows it where the server applies one, and is ignored, deleting every selected
 * object, where it does not (the gate off).
 */
export async function serveDeleteCollection(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  q: URLSearchParams,
): Promise<void> {
  const r = route.resource;
  const ns = route.namespace;
  const opts = await deleteOptions(req, q, r);
  if (dryRunOf(q, 'DeleteOptions')) opts.dryRun = true;
  const { labels, fields } = selectors(r, q);
  const shard = shardFilter(ctx, q);
  const deleted: ApiServerObject[] = [];
  for (const [, o] of ctx.store.listCurrent(r, ns)) {
    if (!selected(r, o, labels, fields)) continue;
    if (shard !== undefined && !inShard(shard, o)) continue;
    try {
      deleted.push(ctx.engine.delete(r, o.metadata.namespace ?? '', o.metadata.name ?? '', opts).object);
    } catch (e) {
      if (!(e instanceof ApiServerStatusError) || e.status.code !== 404) throw e;
    }
  }
  sendJson(res, 200, listBody(r, deleted, String(ctx.store.revision), undefined, undefined));
}
