import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeContinue, encodeContinue } from '../continue.js';
import { ApiServerStatusError } from '../errors.js';
import { sendJson, sendJsonParts } from '../http/io.js';
import type { ResourceType } from '../kinds/resource.js';
import type { ApiServerObject } from '../types.js';
import {
  EXPIRED_LIST_MESSAGE,
  INCONSISTENT_CONTINUE_MESSAGE,
  badRequest,
  expired,
  forbidden,
  notSupported,
  type FieldError,
} from '../status.js';
import { acceptsPartialList, toPartialList } from '../partial-metadata.js';
import { acceptsTable, toTable } from '../table.js';
import type { ServerContext } from './context.js';
import {
  awaitRevision,
  inShard,
  includeObject,
  listInvalid,
  listJson,
  parseRv,
  selected,
  selectors,
  shardFilter,
} from './query.js';

/**
 * LIST with the apiserver's resourceVersion rules: "" reads the newest state; "0" and a bare
 * version (NotOlderThan) read the newest state once it is at least that new; Exact — or a bare
 * version with `limit`, the legacy rule — reads the state at that revision (410 once compacted).
 * Continue tokens pin the first page's revision.
 */
export async function serveList(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  r: ResourceType,
  ns: string | undefined,
  q: URLSearchParams,
): Promise<void> {
  const store = ctx.store;
  const rv = q.get('resourceVersion') ?? '';
  const match = q.get('resourceVersionMatch') ?? '';
  const cont = q.get('continue') ?? '';
  const limitText = q.get('limit') ?? '';
  const errs: FieldError[] = [];
  if (match !== '') {
    if (rv === '')
      errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (cont !== '') errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan')
      errs.push(notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && rv === '0')
      errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (q.get('sendInitialEvents') !== null) errs.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  if (errs.length > 0) throw new ApiServerStatusError(listInvalid(errs));
  let limit = 0;
  if (limitText !== '') {
    if (!/^-?\d+$/.test(limitText)) throw new ApiServerStatusError(badRequest(`invalid value for limit: ${limitText}`));
    limit = Math.max(0, Number(limitText));
  }
  // The watch cache serves resourceVersion=0 whole: `limit` is ignored (etcd pages it).
  if (ctx.opts.personality === 'cached' && rv === '0' && cont === '') limit = 0;
  const { labels, fields } = selectors(r, q);
  const table = acceptsTable(req.headers.accept);
  const include = includeObject(q);
  // Parsed before storage reads the continue token and the resourceVersion, as the registry does.
  const shard = shardFilter(ctx, q);

  let at: number;
  let startKey: string | undefined;
  // A token minted by the 410 "inconsistent continue" answer (rv -1) keeps minting -1 tokens.
  let inconsistentContinue = false;
  const prefix = ns === undefined ? '' : `${ns}/`;
  if (cont !== '') {
    if (rv !== '' && rv !== '0')
      throw new ApiServerStatusError(badRequest('specifying resource version is not allowed when using continue'));
    const token = decodeContinue(cont);
    if (typeof token === 'string') throw new ApiServerStatusError(badRequest(token));
    startKey = prefix + token.start;
    inconsistentContinue = token.rv < 0;
    if (token.rv > 0) {
      if (token.rv < store.compactedRevision) {
        const s = expired(INCONSISTENT_CONTINUE_MESSAGE);
        s.metadata = { continue: encodeContinue(-1, token.start) };
        throw new ApiServerStatusError(s);
      }
      if (token.rv > store.revision)
        throw new ApiServerStatusError(badRequest('continue key is not valid: resourceVersion from the future'));
      at = token.rv;
    } else at = store.revision;
  } else if (rv === '') {
    at = store.revision;
  } else {
    const n = parseRv(rv);
    const exact = match === 'Exact' || (match === '' && limit > 0 && rv !== '0');
    await awaitRevision(ctx, n, req);
    if (exact) {
      if (n < store.compactedRevision) throw new ApiServerStatusError(expired(EXPIRED_LIST_MESSAGE));
      at = n;
    } else at = store.revision;
  }

  // The sorted snapshot is shared by every page at `at`: find the page's start by bisection and
  // stop one match past the limit, so a page costs its own size, not the whole list's.
  const sorted = store.listAt(r, ns, at);
  let i = startKey === undefined ? 0 : lowerBound(sorted, startKey);
  const unfiltered = labels.length === 0 && fields.length === 0 && shard === undefined;
  const page: ApiServerObject[] = [];
  let lastKey = '';
  let more = false;
  for (; i < sorted.length; i++) {
    const [k, o] = sorted[i]!;
    if (!selected(r, o, labels, fields)) continue;
    if (shard !== undefined && !inShard(shard, o)) continue;
    if (limit > 0 && page.length === limit) {
      more = true;
      break;
    }
    page.push(o);
    lastKey = k;
  }
  let next: string | undefined;
  let remaining: number | undefined;
  if (more) {
    next = encodeContinue(inconsistentContinue ? -1 : at, `${lastKey.slice(prefix.length)}\u0000`);
    // Unfiltered, everything from the first unreturned entry on is an item still to come.
    if (unfiltered) remaining = sorted.length - i;
  }
  if (table !== undefined) {
    const opts: Parameters<typeof toTable>[2] = {
      include,
      version: table,
      resourceVersion: String(at),
      withColumns: true,
      now: ctx.now(),
    };
    if (next !== undefined) opts.continueToken = next;
    if (remaining !== undefined) opts.remainingItemCount = remaining;
    sendJson(res, 200, toTable(r, page, opts));
    return;
  }
  if (acceptsPartialList(req.headers.accept)) {
    sendJson(res, 200, toPartialList(page, String(at), next, remaining));
    return;
  }
  // Tables and PartialObjectMetadataLists copy only the cursor fields of the list, not shardInfo.
  const shardInfo = shard === undefined ? undefined : { selector: shard.canonical };
  sendJsonParts(res, 200, listJson(r, page, String(at), next, remaining, shardInfo));
}

/** The index of the first entry whose key is at or after `key` (entries sorted by key). */
function lowerBound(sorted: ReadonlyArray<readonly [string, unknown]>, key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]![0] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
