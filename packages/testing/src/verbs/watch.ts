import { randomInt } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiServerStatusError } from '../errors.js';
import { JSON_HEADERS, parseBool } from '../http/io.js';
import type { ResourceType } from '../kinds/resource.js';
import { EXPIRED_WATCH_MESSAGE, badRequest, expired, forbidden, notSupported, tooOldWatch, type FieldError } from '../status.js';
import { acceptsPartialObject } from '../partial-metadata.js';
import { acceptsTable } from '../table.js';
import { WatchConnection } from '../watch/connection.js';
import type { ServerContext } from './context.js';
import { awaitRevision, includeObject, listInvalid, parseWatchRv, selectors, shardFilter } from './query.js';

/** The watch's deadline: `timeoutSeconds`, else a random [min, 2·min) as `--min-request-timeout` gives. */
function deadlineOf(ctx: ServerContext, t: string | null): number {
  if (t !== null && t !== '' && t !== '0') {
    if (!/^\d+$/.test(t)) throw new ApiServerStatusError(badRequest(`invalid value for timeoutSeconds: ${t}`));
    return Number(t) * ctx.opts.timeoutSecondsScaleMs;
  }
  const min = ctx.opts.minRequestTimeoutSeconds;
  return (min + randomInt(0, Math.max(1, min))) * ctx.opts.timeoutSecondsScaleMs;
}

/**
 * WATCH: "" and "0" start with ADDED frames for the current state; a version replays history
 * after it (an in-band 410 ERROR once compacted); a future version waits, then an in-band 504
 * ERROR (or keeps waiting with `futureWatch: 'wait'`). `timeoutSeconds` ends the stream cleanly.
 */
export async function serveWatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  r: ResourceType,
  ns: string | undefined,
  name: string | undefined,
  q: URLSearchParams,
): Promise<void> {
  const store = ctx.store;
  const rv = q.get('resourceVersion') ?? '';
  const match = q.get('resourceVersionMatch') ?? '';
  const sie = parseBool(q.get('sendInitialEvents'));
  const bookmarks = parseBool(q.get('allowWatchBookmarks'));
  if (sie === 'invalid' || bookmarks === 'invalid') throw new ApiServerStatusError(badRequest('invalid boolean query parameter'));
  // apimachinery's validateWatchOptions, in its order: the sendInitialEvents checks, then the resourceVersionMatch ones.
  const errs: FieldError[] = [];
  if (sie !== undefined) {
    if (match !== 'NotOlderThan')
      errs.push(forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
    if (!ctx.opts.watchList)
      errs.push(
        forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'),
      );
  }
  if (match !== '') {
    if (sie === undefined)
      errs.push(
        forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'),
      );
    if (match !== 'NotOlderThan') errs.push(notSupported('resourceVersionMatch', match, ['NotOlderThan']));
  }
  if (errs.length > 0) throw new ApiServerStatusError(listInvalid(errs));
  const deadlineMs = deadlineOf(ctx, q.get('timeoutSeconds'));
  const sel = selectors(r, q);
  const fields = name === undefined ? sel.fields : [...sel.fields, { field: 'metadata.name', op: '=' as const, value: name }];
  const tableVersion = acceptsTable(req.headers.accept);
  const include = includeObject(q);
  // Store.Watch parses it before the storage layer reads the resourceVersion.
  const shard = shardFilter(ctx, q);
  const requested = rv === '' ? undefined : parseWatchRv(rv);

  const startStream = (afterRevision: number): WatchConnection => {
    res.writeHead(200, { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    return new WatchConnection(
      res,
      {
        resource: r,
        namespace: ns,
        labels: sel.labels,
        fields,
        shard,
        bookmarks: bookmarks === true,
        table: tableVersion === undefined ? undefined : { version: tableVersion, include },
        metadataOnly: tableVersion === undefined && acceptsPartialObject(req.headers.accept),
        afterRevision,
        maxBufferBytes: ctx.opts.maxWatchBufferBytes,
      },
      () => store.revision,
      ctx.now,
      (c) => ctx.hub.closed(c),
    );
  };
  const open = (conn: WatchConnection): void => {
    if (!conn.open) return;
    ctx.hub.add(conn);
    // Bookmarks come from the watch cache; an uncached watch streams etcd events only.
    if (cached)
      conn.startTimers({
        deadlineMs,
        bookmarkIntervalMs: ctx.opts.bookmarkIntervalMs,
        bookmarkBeforeTimeoutMs: ctx.opts.bookmarkBeforeTimeoutMs,
      });
    else conn.startTimers({ deadlineMs, bookmarkIntervalMs: 0, bookmarkBeforeTimeoutMs: -1 });
  };
  const cached = ctx.opts.personality === 'cached';
  /** The cacher answers from its window; without it etcd answers from its compacted history. */
  const expiredFrame = (n: number): boolean => {
    const oldest = cached ? store.watchWindowStart : store.compactedRevision;
    if (n >= oldest) return false;
    startStream(store.revision).sendErrorAndEnd(cached ? tooOldWatch(n, oldest) : expired(EXPIRED_WATCH_MESSAGE));
    return true;
  };
  /** True when the request was answered (504 frame or client gone) while waiting for a future revision. */
  const waitForFuture = async (n: number): Promise<boolean> => {
    if (n <= store.revision) return false;
    if (ctx.opts.futureWatch === 'wait' && sie !== true) return false;
    try {
      await awaitRevision(ctx, n, req);
    } catch (e) {
      if (!(e instanceof ApiServerStatusError)) throw e;
      if (!res.destroyed) startStream(store.revision).sendErrorAndEnd(e.status);
      return true;
    }
    return res.destroyed || ctx.isClosed();
  };

  const initialState = sie === true || (sie === undefined && (requested === undefined || requested === 0));
  if (initialState) {
    if (requested !== undefined && requested > 0 && (await waitForFuture(requested))) return;
    if (res.destroyed || ctx.isClosed()) return;
    // Initial state and subscription in one synchronous step: no write can fall between them.
    const conn = startStream(store.revision);
    for (const [, o] of store.listCurrent(r, ns)) conn.sendInitial(o);
    // Without allowWatchBookmarks kube-apiserver 1.35 still serves the initial events (200), but
    // never says where they end: the annotated bookmark is a bookmark like any other.
    if (sie === true && bookmarks === true) conn.sendBookmark({ 'k8s.io/initial-events-end': 'true' });
    open(conn);
    return;
  }
  let from = store.revision;
  if (requested !== undefined && requested > 0) {
    if (expiredFrame(requested)) return;
    if (await waitForFuture(requested)) return;
    if (expiredFrame(requested)) return;
    from = requested;
  }
  if (res.destroyed || ctx.isClosed()) return;
  const conn = startStream(from);
  if (from <= store.revision) for (const e of store.eventsAfter(from)) conn.deliver(e);
  open(conn);
}
