import { isInvalidObjectError, objectKey, type InvalidObjectError, type KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { parseObject, type ListItem } from '@reconcile-loop/k8s-types/internal';
import { isCursorExpired } from './classify.js';
import { isPermanentSourceError, replaceEvent, type ObjectKey, type SourceEvent } from '@reconcile-loop/object-store';
import { linkSignals, raceAbort } from '@reconcile-loop/primitives';
import type { ListReason, ReflectorCore } from './core.js';
import { isKubeApiError, KubeProtocolError } from '@reconcile-loop/kube-client';
import { ListRejectedError, ListTimeoutError } from './errors.js';
import { ListPager, type Page } from './list-pager.js';

/**
 * How a LIST phase ended: the replace was yielded and the listing is current at `resourceVersion`
 * (the watch starts there), the LIST failed (retry after `delayMs`), or the signal aborted.
 */
export type ListOutcome =
  | { readonly kind: 'listed'; readonly resourceVersion: string }
  | { readonly kind: 'failed'; readonly delayMs: number }
  | { readonly kind: 'stopped' };

const STOPPED: ListOutcome = { kind: 'stopped' };
const ABORTED: unique symbol = Symbol('aborted');

/**
 * One LIST, yielded as a replace. A generator of its own on purpose: a suspended generator keeps
 * every local of its frame alive, so the raw listing and its map live in this frame, which is
 * freed once the replace has been consumed, and never in the stream's, which lives as long as the
 * stream (measured: 10.5 KB per cached pod held otherwise, 1.6 KB with the frame freed).
 *
 * Throws (ending the stream) only for a permanent failure: the reflector's first LIST answered
 * 400/422 ({@link ListRejectedError}), or a client that cannot build a request.
 */
export async function* listPhase<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  signal: AbortSignal,
  why: ListReason,
  fallback = false,
): AsyncGenerator<SourceEvent<T>, ListOutcome, undefined> {
  // A watch-list's fallback is the same listing, already counted as a relist or not.
  core.listingStarted('list', why, fallback);
  const result = await listOnce(core, signal);
  if (result === ABORTED) return STOPPED;
  if ('failure' in result) {
    const error = result.failure;
    if (isPermanentSourceError(error)) throw core.failPermanently(error);
    // Before any listing, a 400/422 is the request itself (a selector, a field) and never heals.
    if (!core.everListed && isKubeApiError(error) && (error.statusCode === 400 || error.statusCode === 422)) {
      throw core.failPermanently(new ListRejectedError(error, core.options.name));
    }
    return { kind: 'failed', delayMs: core.listFailed(error, why) };
  }
  const { objects, poison, resourceVersion } = result;
  core.listed('list', why, resourceVersion, poison, core.clock.now());
  core.logger.debug(core.fields({ objects: objects.size, quarantined: core.quarantine.size, why }), 'listed');
  yield replaceEvent(objects, core.quarantine.keys());
  return { kind: 'listed', resourceVersion };
}

/** What a LIST gathered: the valid objects by key, the poison ones, and the cursor the listing is current at. */
interface Gathered<T> {
  readonly objects: Map<ObjectKey, T>;
  readonly poison: Map<ObjectKey, InvalidObjectError>;
  readonly resourceVersion: string;
}

/** Validates `items` into `objects` (or `poison`, or a logged skip for an item without a readable name). */
export function gather<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  items: readonly unknown[],
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
  what: string,
): void {
  for (const item of items) gatherOne(core, item, objects, poison, what);
}

/**
 * A page read from its bytes: an item the view's byte reader read is already exactly what
 * `parseObject` returns, so it is kept as a valid item is (no second validation); an item the
 * reader could not prove goes through {@link gather}'s path, quarantine and counters included.
 */
function gatherRead<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  items: readonly ListItem<T>[],
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
): void {
  for (const item of items) {
    if (item.view === undefined) gatherOne(core, item.raw, objects, poison, 'LIST');
    else keep(item.view, objects, poison);
  }
}

/** A valid object enters the listing and lifts a quarantine an earlier item of its key set. */
function keep<T extends KubernetesObjectView>(
  object: T,
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
): void {
  const key = objectKey(object);
  objects.set(key, object);
  poison.delete(key);
}

function gatherOne<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  item: unknown,
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
  what: string,
): void {
  try {
    keep(parseObject(core.schema, item, what), objects, poison);
  } catch (error) {
    if (!isInvalidObjectError(error)) throw error;
    holdInvalid(core, error, objects, poison, what);
  }
}

/**
 * An item of a listing that failed the view (a LIST page's, or a watch-list's initial frame): held
 * for the quarantine under its key (out of the listing), or logged and skipped when it has no
 * readable name. Counted either way.
 */
export function holdInvalid<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  error: InvalidObjectError,
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
  what: string,
): void {
  core.invalidObject();
  if (error.objectKey === undefined) {
    core.logger.error(
      core.fields({ resourceVersion: error.resourceVersion, issues: error.issues, err: error }),
      `${what} item without a readable name failed the schema; skipped`,
    );
    return;
  }
  objects.delete(error.objectKey);
  poison.set(error.objectKey, error);
}

/** The shard selector a page says the server applied (`metadata.shardInfo.selector`), if any. */
function shardEcho<T>(page: Page<T>): string | undefined {
  const info = page.kind === 'read' ? page.shardInfo : page.list.shardInfo;
  return typeof info?.selector === 'string' ? info.selector : undefined;
}

/** The client-side filter of a listing the server did not shard: drops every object outside the owned ranges. */
function dropForeign<T extends KubernetesObjectView>(core: ReflectorCore<T>, objects: Map<ObjectKey, T>): void {
  const shard = core.shard!;
  for (const [key, object] of objects) {
    if (shard.owns(object)) continue;
    objects.delete(key); // deleting the current entry while iterating a Map is well-defined
    shard.dropped(core.logger, core.fields());
  }
}

/** The page's cursor and continue token, checked: a hand-written client may answer anything. */
function pageCursor<T>(page: Page<T>): { readonly resourceVersion: string; readonly continue: string | undefined } {
  const listing = page?.kind === 'read' ? page.page : page?.kind === 'exact' ? page.list : undefined;
  if (!Array.isArray(listing?.items) || typeof listing.resourceVersion !== 'string') {
    throw new KubeProtocolError('LIST result needs an items array and a string resourceVersion');
  }
  return {
    resourceVersion: listing.resourceVersion,
    continue: typeof listing.continue === 'string' ? listing.continue : undefined,
  };
}

/**
 * One LIST bounded by `listTimeoutMs` (all its pages): the gathered listing, the failure, or
 * {@link ABORTED} when the signal aborted. Paginated as client-go's pager: `limit=listPageSize`
 * and the `continue` token of each page, every page validated as it arrives and then dropped, so
 * only one page's raw body lives beside the objects kept (the unpaged LIST held the whole body
 * and its parse at once). With a client that has `listPage`, a page is its bytes, read by the
 * view's byte reader, and the next page is requested as soon as this one's body has arrived, with
 * the token its first bytes carry (see {@link ListPager}: one more page body at the peak); the
 * token the loop follows is still the page's as read, and the pages, the cursor and every rule
 * here are the same. A `continue` token that expired (410) restarts as one unpaged LIST (the
 * pager's `FullListIfExpired`), so the result is always one consistent snapshot.
 */
async function listOnce<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  signal: AbortSignal,
): Promise<Gathered<T> | { failure: unknown } | typeof ABORTED> {
  if (signal.aborted) return ABORTED;
  const done = new AbortController();
  const timeout = new ListTimeoutError(core.options.listTimeoutMs);
  const link = linkSignals([signal, done.signal], {
    clock: core.clock,
    timeoutMs: core.options.listTimeoutMs,
    timeoutReason: () => timeout,
  });
  let objects = new Map<ObjectKey, T>();
  let poison = new Map<ObjectKey, InvalidObjectError>();
  let resourceVersion: string | undefined;
  let pageSize = core.options.listPageSize;
  let token: string | undefined;
  /** The first page's `metadata.shardInfo.selector`: whether the server applied the shard selector to this LIST. */
  let echo: string | undefined;
  // Its requests are sent with `link`'s signal or linked to it: the `finally` below aborts a request still ahead.
  const pager = new ListPager(core, link.signal);
  try {
    for (;;) {
      let page: Page<T>;
      try {
        page = await raceAbort(pager.page(pageSize > 0 ? pageSize : undefined, token), link.signal);
      } catch (error) {
        if (
          token === undefined ||
          signal.aborted ||
          link.signal.aborted ||
          !isKubeApiError(error) ||
          !isCursorExpired(error.status, error.statusCode)
        )
          throw error;
        // The continue token expired between pages: the pages read so far are not one snapshot.
        core.listRestarted();
        core.logger.info(core.fields({ pageSize }), 'LIST continue token expired (410); restarting as one unpaged LIST');
        objects = new Map();
        poison = new Map();
        resourceVersion = undefined;
        echo = undefined;
        pageSize = 0;
        token = undefined;
        continue;
      }
      const cursor = pageCursor(page);
      core.listPageRead();
      // Every page of one LIST is consistent with the first, whose resourceVersion is the cursor.
      if (resourceVersion === undefined) echo = shardEcho(page);
      resourceVersion ??= cursor.resourceVersion;
      if (page.kind === 'read') gatherRead(core, page.page.items, objects, poison);
      else gather(core, page.list.items, objects, poison, 'LIST');
      token = pageSize > 0 && cursor.continue !== undefined && cursor.continue !== '' ? cursor.continue : undefined;
      if (token === undefined) {
        if (core.shard?.listed(echo, core.logger, core.fields()) === true) dropForeign(core, objects);
        return { objects, poison, resourceVersion };
      }
    }
  } catch (error) {
    if (signal.aborted) return ABORTED;
    return { failure: link.signal.aborted && link.signal.reason === timeout ? timeout : error };
  } finally {
    done.abort(); // ends a page read still running; the link then detaches itself
    link.dispose();
  }
}
