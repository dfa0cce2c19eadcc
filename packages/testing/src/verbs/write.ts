import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DeleteOptions, PatchType } from '../engine/engine.js';
import { isRecord } from '../engine/meta.js';
import { ApiStatusError, isApiStatusError } from '../errors.js';
import { checkContentType, mediaType, readJson, sendJson } from '../http/io.js';
import type { ResourceType } from '../kinds/resource.js';
import { badRequest, deleteSuccess, unsupportedMediaType } from '../status.js';
import type { KubeObject } from '../types.js';
import { subresourceOf, type Route, type ServerContext } from './context.js';
import { listBody, selected, selectors } from './query.js';

/** The patch type a PATCH's Content-Type names (415 for one the kind does not accept). */
function patchType(req: IncomingMessage, r: ResourceType): PatchType {
  const ct = mediaType(req);
  if (ct === 'application/merge-patch+json') return 'merge';
  if (ct === 'application/json-patch+json') return 'json';
  if (ct === 'application/strategic-merge-patch+json' && r.strategicMergeKeys !== undefined) return 'strategic';
  const accepted = ['application/json-patch+json', 'application/merge-patch+json'];
  if (r.strategicMergeKeys !== undefined) accepted.push('application/strategic-merge-patch+json');
  throw new ApiStatusError(unsupportedMediaType(accepted));
}

/** `gracePeriodSeconds` and `preconditions` from the query and an optional `DeleteOptions` body. */
async function deleteOptions(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
  const opts: DeleteOptions = {};
  const g = q.get('gracePeriodSeconds');
  if (g !== null && g !== '') {
    if (!/^-?\d+$/.test(g)) throw new ApiStatusError(badRequest(`invalid value for gracePeriodSeconds: ${g}`));
    opts.gracePeriodSeconds = Number(g);
  }
  const body = await readJson(req, true);
  if (body !== undefined) {
    if (!isRecord(body)) throw new ApiStatusError(badRequest('DeleteOptions must be a JSON object'));
    const bg = body['gracePeriodSeconds'];
    if (bg !== undefined && bg !== null) {
      if (typeof bg !== 'number' || !Number.isInteger(bg)) throw new ApiStatusError(badRequest('gracePeriodSeconds must be an integer'));
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

/** POST to a collection: 201 with the created object. */
export async function serveCreate(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  checkContentType(req, ['application/json']);
  const body = await readJson(req, false);
  sendJson(res, 201, ctx.engine.create(route.resource, route.namespace ?? '', body));
}

/** PUT of an object or its status. */
export async function serveUpdate(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  checkContentType(req, ['application/json']);
  const body = await readJson(req, false);
  sendJson(res, 200, ctx.engine.update(route.resource, route.namespace ?? '', route.name!, body, subresourceOf(route)));
}

/** PATCH of an object or its status. */
export async function servePatch(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  const type = patchType(req, route.resource);
  const body = await readJson(req, false);
  sendJson(res, 200, ctx.engine.patch(route.resource, route.namespace ?? '', route.name!, type, body, subresourceOf(route)));
}

/** DELETE of one object: the object (terminating or last state) for built-ins, a Success Status for custom resources once gone. */
export async function serveDelete(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): Promise<void> {
  const r = route.resource;
  const opts = await deleteOptions(req, q);
  const out = ctx.engine.delete(r, route.namespace ?? '', route.name!, opts);
  if (out.deleted && !r.returnDeletedObject) sendJson(res, 200, deleteSuccess(r, route.name!, out.object.metadata.uid));
  else sendJson(res, 200, out.object);
}

/** DELETE of a collection: every selected object, answered as a list of what was deleted. */
export async function serveDeleteCollection(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): Promise<void> {
  const r = route.resource;
  const ns = route.namespace;
  const opts = await deleteOptions(req, q);
  const { labels, fields } = selectors(r, q);
  const deleted: KubeObject[] = [];
  for (const [, o] of ctx.store.listCurrent(r, ns)) {
    if (!selected(r, o, labels, fields)) continue;
    try {
      deleted.push(ctx.engine.delete(r, o.metadata.namespace ?? '', o.metadata.name ?? '', opts).object);
    } catch (e) {
      if (!isApiStatusError(e) || e.status.code !== 404) throw e;
    }
  }
  sendJson(res, 200, listBody(r, deleted, String(ctx.store.revision), undefined, undefined));
}
