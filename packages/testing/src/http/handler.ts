import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestCounters } from '../controls/counters.js';
import { injectedStatus, type FaultQueue } from '../controls/faults.js';
import { ApiServerStatusError } from '../errors.js';
import { SelectorParseError } from '../selectors.js';
import { badRequest, failure, internalError, methodNotAllowed, pathNotFound } from '../status.js';
import type { ServerContext } from '../verbs/context.js';
import { serveGet } from '../verbs/get.js';
import { serveList } from '../verbs/list.js';
import { serveBinding, serveEviction } from '../verbs/pod-subresources.js';
import { serveWatch } from '../verbs/watch.js';
import { serveCreate, serveDelete, serveDeleteCollection, servePatch, serveUpdate } from '../verbs/write.js';
import { authorize } from './auth.js';
import { isApiGroupPath, isDiscoveryPath, sendPlainNotFound, serveDiscovery, type DiscoveryInfo } from './discovery.js';
import { JSON_HEADERS, parseBool, sendStatus } from './io.js';
import { isOpenApiPath, serveOpenApi } from './openapi.js';
import { route, verbOf } from './router.js';

/** What the request pipeline needs beyond the verb context: auth, counters, faults and discovery data. */
export interface HandlerDeps {
  ctx: ServerContext;
  counters: RequestCounters;
  faults: FaultQueue;
  token: string | undefined;
  discovery: DiscoveryInfo;
}

/**
 * The request pipeline: shutdown check, authentication, discovery, routing, the request count,
 * an injected failure if one is queued, then the verb. Every refusal is a Status answer; a
 * handler failure is a 500 Status (or a reset once the stream started); the server never crashes.
 */
export async function handleRequest(d: HandlerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    await dispatch(d, req, res);
  } catch (e) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (e instanceof ApiServerStatusError) sendStatus(res, e.status);
    else if (e instanceof SelectorParseError) sendStatus(res, badRequest(e.message));
    else sendStatus(res, internalError(e instanceof Error ? e.message : String(e)));
  }
}

async function dispatch(d: HandlerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, counters } = d;
  if (ctx.isClosed()) {
    sendStatus(res, failure(503, 'ServiceUnavailable', 'the embedded apiserver is shutting down'));
    return;
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  let segments: string[];
  try {
    // Decoded before splitting, as Go's URL.Path is: `default%2Fevil` is two segments, never one
    // namespace whose prefix match would leak another namespace's objects.
    segments = decodeURIComponent(url.pathname)
      .split('/')
      .filter((s) => s !== '');
  } catch {
    sendStatus(res, badRequest('malformed path'));
    return;
  }
  const method = req.method ?? 'GET';
  const q = url.searchParams;
  // The deprecated `/watch/` paths (`/api/v1/watch/namespaces/{ns}/pods[/{name}]`): a WATCH of the
  // collection or object after it, GET only, as the apiserver still registers them.
  const watchAt = segments[0] === 'api' ? 2 : segments[0] === 'apis' ? 3 : -1;
  if (watchAt > 0 && segments[watchAt] === 'watch' && segments.length > watchAt + 1) {
    segments = [...segments.slice(0, watchAt), ...segments.slice(watchAt + 1)];
    q.set('watch', 'true');
    const rt = route(ctx.catalog, segments);
    if (rt !== 'not-found' && rt.kind !== 'collection' && rt.kind !== 'item') {
      sendStatus(res, pathNotFound());
      return;
    }
    if (rt !== 'not-found' && method !== 'GET') {
      sendStatus(res, methodNotAllowed());
      return;
    }
  }
  const refused = authorize(d.token, req, segments, q);
  if (refused !== undefined) {
    sendStatus(res, refused);
    return;
  }

  if (isDiscoveryPath(segments)) {
    counters.count('discovery');
    serveDiscovery(ctx.catalog, d.discovery, segments, method, res);
    return;
  }
  if (isOpenApiPath(segments)) {
    counters.count('discovery');
    if (method !== 'GET') sendStatus(res, methodNotAllowed());
    else serveOpenApi(ctx.catalog, d.discovery.version.gitVersion, segments, req, res);
    return;
  }
  const rt = route(ctx.catalog, segments);
  if (rt === 'not-found') {
    counters.count('discovery');
    if (isApiGroupPath(ctx.catalog, segments)) sendStatus(res, pathNotFound());
    else sendPlainNotFound(res);
    return;
  }
  const watch = parseBool(q.get('watch'));
  if (watch === 'invalid') {
    sendStatus(res, badRequest(`invalid value for watch: ${q.get('watch') ?? ''}`));
    return;
  }
  const verb = verbOf(method, rt, watch === true);
  if (verb === undefined) {
    counters.count('discovery');
    sendStatus(res, methodNotAllowed());
    return;
  }
  counters.count(verb);
  const injected = d.faults.take(verb);
  if (injected !== undefined) {
    // A hung request holds its socket until the client aborts or close() ends every connection.
    if (injected.status === 'hang') return;
    const s = injectedStatus(injected.status, verb, q.get('resourceVersion') ?? '', injected.retryAfterSeconds, rt.resource, {
      current: ctx.store.revision,
      compacted: ctx.store.compactedRevision,
    });
    if (injected.inBand) {
      res.writeHead(200, JSON_HEADERS);
      res.end(`${JSON.stringify({ type: 'ERROR', object: s })}\n`);
    } else sendStatus(res, s);
    return;
  }
  switch (verb) {
    case 'list':
      return serveList(ctx, req, res, rt.resource, rt.namespace, q);
    case 'watch':
      return serveWatch(ctx, req, res, rt.resource, rt.namespace, rt.name, q);
    case 'get':
      return serveGet(ctx, req, res, rt, q);
    case 'create':
      if (rt.kind === 'binding') return serveBinding(ctx, req, res, rt);
      if (rt.kind === 'eviction') return serveEviction(ctx, req, res, rt);
      return serveCreate(ctx, req, res, rt, q);
    case 'update':
      return serveUpdate(ctx, req, res, rt, q);
    case 'patch':
      return servePatch(ctx, req, res, rt, q);
    case 'delete':
      return serveDelete(ctx, req, res, rt, q);
    case 'deletecollection':
      return serveDeleteCollection(ctx, req, res, rt, q);
  }
}
