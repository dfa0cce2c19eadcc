import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http/io.js';
import { acceptsPartialObject, toPartialObject } from '../partial-metadata.js';
import { acceptsTable, toTable } from '../table.js';
import type { Route, ServerContext } from './context.js';
import { includeObject } from './query.js';

/** GET of one object (or its status): the stored object, or a one-row Table when asked. */
export function serveGet(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): void {
  const r = route.resource;
  const obj = ctx.engine.get(r, route.namespace ?? '', route.name!);
  const table = acceptsTable(req.headers.accept);
  if (table === undefined) {
    sendJson(res, 200, acceptsPartialObject(req.headers.accept) ? toPartialObject(obj) : obj);
    return;
  }
  sendJson(
    res,
    200,
    toTable(r, [obj], {
      include: includeObject(q),
      version: table,
      resourceVersion: obj.metadata.resourceVersion ?? '',
      withColumns: true,
      now: ctx.now(),
    }),
  );
}
