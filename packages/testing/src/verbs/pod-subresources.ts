import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord } from '../engine/meta.js';
import { ApiServerStatusError } from '../errors.js';
import { bodyMediaTypes, checkContentType, readJson, sendJson, type BodyKind } from '../http/io.js';
import { badRequest, type KubeStatus } from '../status.js';
import type { Route, ServerContext } from './context.js';

/** The `Status` a binding or an eviction answers with: 201 Success, no details. */
const CREATED: KubeStatus = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };

const BINDING: BodyKind = { apiVersion: 'v1', kind: 'Binding' };
const EVICTION: BodyKind = { apiVersion: 'policy/v1', kind: 'Eviction' };

/**
 * POST pods/{name}/binding: the scheduler's write — `spec.nodeName` and PodScheduled, generation
 * unchanged; 409 `pod p is already assigned to node "n"` for a bound pod; the target must be a Node.
 */
export async function serveBinding(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  checkContentType(req, bodyMediaTypes(BINDING));
  const body = await readJson(req, false, BINDING);
  if (!isRecord(body) || !isRecord(body['target'])) throw new ApiServerStatusError(badRequest('a Binding needs a target'));
  const target = body['target'];
  if (target['kind'] !== undefined && target['kind'] !== '' && target['kind'] !== 'Node')
    throw new ApiServerStatusError(badRequest('Binding target must be a Node'));
  if (typeof target['name'] !== 'string' || target['name'] === '')
    throw new ApiServerStatusError(badRequest('Binding target needs a name'));
  ctx.kubelet.bind(route.namespace ?? '', route.name!, target['name']);
  sendJson(res, 201, CREATED);
}

/**
 * POST pods/{name}/eviction: with no PodDisruptionBudget to consult, an eviction is a DELETE with
 * the Eviction's `deleteOptions` (grace, preconditions), answered 201 Success.
 */
export async function serveEviction(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
  checkContentType(req, bodyMediaTypes(EVICTION));
  const body = await readJson(req, false, EVICTION);
  if (!isRecord(body)) throw new ApiServerStatusError(badRequest('an Eviction must be an object'));
  const o = isRecord(body['deleteOptions']) ? body['deleteOptions'] : {};
  const opts: { gracePeriodSeconds?: number; preconditions?: { uid?: string; resourceVersion?: string } } = {};
  if (typeof o['gracePeriodSeconds'] === 'number') opts.gracePeriodSeconds = o['gracePeriodSeconds'];
  if (isRecord(o['preconditions'])) {
    const p = o['preconditions'];
    opts.preconditions = {};
    if (typeof p['uid'] === 'string') opts.preconditions.uid = p['uid'];
    if (typeof p['resourceVersion'] === 'string') opts.preconditions.resourceVersion = p['resourceVersion'];
  }
  ctx.engine.delete(route.resource, route.namespace ?? '', route.name!, opts);
  sendJson(res, 201, CREATED);
}
