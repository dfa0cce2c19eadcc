import type { InvalidObjectError, KubernetesObjectView, ObjectSchema } from '@reconcile-loop/k8s-types';
import { isPermanentSourceError, type SourceHealth } from '@reconcile-loop/object-store';
import { Backoff, FailureStreak, type Clock, type Logger } from '@reconcile-loop/primitives';
import { failureSignature, retryAfterMs } from './classify.js';
import type { ListWatchClient, ListWatchScope } from './client.js';
import { isKubeApiError } from '@reconcile-loop/kube-client';
import type { ResolvedOptions } from './options.js';
import { ListTimeoutError } from './errors.js';
import { Quarantine } from './quarantine.js';
import { ListLag } from './list-lag.js';
import type { ShardState } from './shard.js';

/** Counters for tests and metrics; cumulative over every stream this reflector opened. */
export interface ReflectorStats {
  /** LIST calls started (the first listing of each stream and every relist fetched by LIST, a watch-list's fallback included). */
  readonly lists: number;
  /** Pages read by LISTs (one per unpaged LIST). */
  readonly listPages: number;
  /** Paginated LISTs restarted unpaged because their `continue` token expired (410). */
  readonly listRestarts: number;
  /** Listings started as a watch-list (streaming initial list). */
  readonly watchLists: number;
  /** Watch-lists that did not reach their initial-events-end bookmark (refused, failed, ended or past `listTimeoutMs`) and fell back to a LIST. */
  readonly watchListFallbacks: number;
  /** Listings after the first of a stream (LIST or watch-list): a rejected cursor (410, 504, 400/422 on WATCH), a too-large frame, or a heal. */
  readonly relists: number;
  /** Relists scheduled to heal the state a skipped frame may have carried. */
  readonly healRelists: number;
  /** Listings after a change of the shard's ranges (`Reflector.reshard`), also counted in `relists`. */
  readonly reshardRelists: number;
  /** WATCH calls started. */
  readonly watches: number;
  /** Bookmarks that advanced the cursor. */
  readonly bookmarks: number;
  /** Frames skipped because their envelope could not be read. */
  readonly skippedFrames: number;
  /** Objects (LIST items or frame payloads) that failed the schema and were quarantined (or skipped, when keyless). */
  readonly invalidObjects: number;
  /** Watches torn down for silence. */
  readonly idleTimeouts: number;
  /** Failed LISTs, timeouts included (retried after the backoff). */
  readonly listFailures: number;
  /** LISTs that hit `listTimeoutMs`. */
  readonly listTimeouts: number;
  /** Failed or dropped watches, cursor rejections and too-large frames included (retried after the backoff). */
  readonly watchFailures: number;
}

/** Mutable view of {@link ReflectorStats}. */
export type MutableStats = { -readonly [K in keyof ReflectorStats]: ReflectorStats[K] };

/** Log level of a failure that starts or changes. */
function levelOf(error: unknown): 'info' | 'warn' | 'error' {
  // The stream ends on it: nothing heals it but a human.
  if (isPermanentSourceError(error)) return 'error';
  if (isKubeApiError(error)) {
    // Needs a human (credentials, RBAC, a missing CRD) even though it may heal by itself.
    if (error.statusCode === 401 || error.statusCode === 403 || error.statusCode === 404) return 'error';
    if (error.statusCode === 410) return 'info';
  }
  return 'warn';
}

/** Why a listing runs: the stream's first, a resourceVersion rejection, the heal after a skipped frame, or new shard ranges. */
export type ListReason = 'initial' | 'relist' | 'heal' | 'reshard';

/** How a listing is fetched. */
export type ListingVia = 'watch-list' | 'list';

/**
 * What happens to the stream after a watch failed: retry the WATCH from its resourceVersion, relist
 * (the resourceVersion is dead), relist and drop the resourceVersion (the server refused it as
 * unparseable: never send it again), or retry after the watch went silent.
 */
export type WatchFailure = 'retry' | 'relist' | 'relist-rejected' | 'idle';

/**
 * What a reflector knows about itself across its streams: the collaborators every phase uses, and
 * the health, counters and retry state they report into. Lives on the reflector, not on a stream,
 * so a reopened stream continues the backoff, the quarantine and the failure count of the previous one.
 *
 * Invariant: every field below is private and written only by this class's methods, each named for
 * the fact a phase reports (`listed`, `advanced`, `watchFailed`, ...). The phases own the stream's
 * state themselves: the `Step` the driver holds and the phases' outcomes carry the resourceVersion a
 * watch resumes from (`reflector.ts`); the copy here ({@link resourceVersion}) is the last one
 * reported, for `Reflector.resourceVersion` and the logs. Health and the counters are derived from
 * the facts reported, never set by a phase.
 */
export class ReflectorCore<T extends KubernetesObjectView> {
  readonly options: ResolvedOptions;
  readonly client: ListWatchClient;
  readonly schema: ObjectSchema<T>;
  readonly #scope: ListWatchScope;
  /** The shard this reflector holds, when the `shard` option was given. */
  readonly shard: ShardState | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly random: () => number;
  readonly quarantine = new Quarantine();
  /** The probe LISTs' results against the resourceVersions the stream delivered (`listLagProbeIntervalMs`). */
  readonly listLag = new ListLag();
  /** Retry delay for failures. Reset only by a healthy watch (a frame applied, or ended on time). */
  readonly #backoff: Backoff;
  /** Delay before a heal relist after a skipped frame. Reset by a watch that ended on time with nothing skipped. */
  readonly #healBackoff: Backoff;
  readonly #stats: MutableStats = {
    lists: 0,
    listPages: 0,
    listRestarts: 0,
    watchLists: 0,
    watchListFallbacks: 0,
    relists: 0,
    healRelists: 0,
    reshardRelists: 0,
    watches: 0,
    bookmarks: 0,
    skippedFrames: 0,
    invalidObjects: 0,
    idleTimeouts: 0,
    listFailures: 0,
    listTimeouts: 0,
    watchFailures: 0,
  };
  /** The `resourceVersion` of the last listing, applied frame or bookmark reported. */
  #resourceVersion: string | undefined;
  /** True once any stream of this reflector completed a listing: a 400/422 is permanent only before. */
  #everListed = false;
  /** When a heal relist is due (a frame was skipped); cleared by every listing. */
  #healDueAt: number | undefined;
  #listed = false;
  #streaming = false;
  #lastListAt: number | undefined;
  #lastEventAt: number | undefined;
  /**
   * The failures since the last success (`health()`'s `lastError` and `consecutiveFailures`): logged
   * at warn/error when one starts or its kind (what failed, and how) changes, at debug when it
   * repeats, the recovery once at info; a 410 (info) is routine and logged each time.
   */
  readonly #failures: FailureStreak;
  /** Watch-lists in a row that ended before their initial-events-end bookmark; reset by a completed one. */
  #watchListIncomplete = 0;
  /** Why this reflector no longer tries watch-list (the server refused it, or too many incomplete streams); undefined while it may. */
  #watchListOff: string | undefined;

  constructor(
    options: ResolvedOptions,
    parts: {
      client: ListWatchClient;
      schema: ObjectSchema<T>;
      scope: ListWatchScope;
      shard: ShardState | undefined;
      clock: Clock;
      logger: Logger;
      random: () => number;
    },
  ) {
    this.options = options;
    this.client = parts.client;
    this.schema = parts.schema;
    this.#scope = parts.scope;
    this.shard = parts.shard;
    this.clock = parts.clock;
    this.logger = parts.logger;
    this.random = parts.random;
    this.#failures = new FailureStreak({
      logger: parts.logger,
      clock: parts.clock,
      // Every call names what failed or recovered (`LIST failed`, `recovered: listed`).
      failure: 'a request failed',
      recovery: 'recovered',
      level: levelOf,
      signature: failureSignature,
    });
    // Only proof of health resets these; a policy's `resetAfterMs` measures on the reflector's clock.
    this.#backoff = new Backoff(options.retry, { clock: parts.clock, random: parts.random });
    this.#healBackoff = new Backoff(options.retry, { clock: parts.clock, random: parts.random });
  }

  /** Namespace and selectors of every request, the shard's current `shardSelector` included. */
  get scope(): ListWatchScope {
    const shard = this.shard;
    return shard === undefined ? this.#scope : { ...this.#scope, shardSelector: shard.selector };
  }

  /** The `resourceVersion` last reported (a listing, an applied frame, a bookmark); undefined before a listing or once refused. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** True once any stream of this reflector completed a listing. */
  get everListed(): boolean {
    return this.#everListed;
  }

  /** When the heal relist a skipped frame asked for is due, if one is. */
  get healDueAt(): number | undefined {
    return this.#healDueAt;
  }

  /** Why this reflector no longer tries watch-list; undefined while it may. */
  get watchListOff(): string | undefined {
    return this.#watchListOff;
  }

  /** Watch-lists in a row that ended before their initial-events-end bookmark. */
  get watchListIncompleteInARow(): number {
    return this.#watchListIncomplete;
  }

  /** The delay the next failure would wait. */
  get nextRetryDelayMs(): number {
    return this.#backoff.nextMs;
  }

  /** A snapshot of the counters. */
  get stats(): ReflectorStats {
    return { ...this.#stats };
  }

  /** How the next listing is fetched: `initialList`, the client's support for watch-list, and whether it was given up. */
  listingVia(): ListingVia {
    if (this.#watchListOff !== undefined) return 'list';
    const mode = this.options.initialList;
    if (mode === 'list') return 'list';
    if (mode === 'watch-list') return 'watch-list';
    return this.client.supportsWatchList === true ? 'watch-list' : 'list';
  }

  /** Base log fields. */
  fields(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { reflector: this.options.name, cursor: this.#resourceVersion, ...extra };
  }

  // ---- A stream ----

  /** A stream opened: it starts with a listing (its consumer expects a replace first) and keeps the backoff level. */
  streamOpened(): void {
    this.#resourceVersion = undefined;
    this.#listed = false;
  }

  /** A stream ended (aborted, or thrown a permanent failure). */
  streamEnded(): void {
    this.#listed = false;
    this.#streaming = false;
  }

  // ---- Listings ----

  /** A listing started, by LIST or watch-list; a watch-list's LIST `fallback` is the same listing, counted once. */
  listingStarted(via: ListingVia, why: ListReason, fallback: boolean): void {
    if (via === 'list') this.#stats.lists++;
    else this.#stats.watchLists++;
    if (!fallback) {
      if (why !== 'initial') this.#stats.relists++;
      if (why === 'heal') this.#stats.healRelists++;
      if (why === 'reshard') this.#stats.reshardRelists++;
    }
    // A watch-list replaces the state a skipped frame may have hidden; a frame skipped during it schedules its own heal.
    if (via === 'watch-list') this.#healDueAt = undefined;
  }

  /** A LIST page was read. */
  listPageRead(): void {
    this.#stats.listPages++;
  }

  /** A paginated LIST's continue token expired; it restarts unpaged. */
  listRestarted(): void {
    this.#stats.listRestarts++;
  }

  /** A LIST failed: counted, and the delay before the retry returned. */
  listFailed(error: unknown, why: ListReason): number {
    this.#stats.listFailures++;
    if (error instanceof ListTimeoutError) this.#stats.listTimeouts++;
    return this.#fail(error, why === 'initial' ? 'LIST failed' : 'relist failed');
  }

  /** A watch-list's initial events did not end within `listTimeoutMs`. */
  watchListTimedOut(): void {
    this.#stats.listTimeouts++;
  }

  /** An object of a listing or a frame failed the view (held in the quarantine, or skipped without a key). */
  invalidObject(): void {
    this.#stats.invalidObjects++;
  }

  /**
   * A listing completed at `resourceVersion` with `poison` held back: the quarantine is rebuilt
   * from it, the reflector is listed, and the failure streak ends. A watch-list's sync is a frame on
   * the watch too, so it also proves the path (the backoff resets) and ends the incomplete streak;
   * a heal a frame skipped during it asked for stays due.
   */
  listed(
    via: ListingVia,
    why: ListReason,
    resourceVersion: string,
    poison: ReadonlyMap<string, InvalidObjectError>,
    now: number,
  ): void {
    for (const entry of this.quarantine.rebuild(poison, now)) {
      this.logger.error(
        this.fields({ key: entry.key, resourceVersion: entry.resourceVersion, issues: entry.issues }),
        'object failed the schema; quarantined (its last good version, if any, stays in the store)',
      );
    }
    this.#resourceVersion = resourceVersion;
    this.listLag.advanced(resourceVersion);
    this.#everListed = true;
    this.#listed = true;
    this.#lastListAt = now;
    if (via === 'list') {
      this.#healDueAt = undefined;
      this.#lastEventAt = now;
      this.#succeed(why === 'initial' ? 'listed' : 'relisted');
    } else {
      this.#watchListIncomplete = 0;
      this.#backoff.reset();
      this.#succeed(why === 'initial' ? 'listed (watch-list)' : 'relisted (watch-list)');
    }
  }

  /**
   * A watch-list ended before its initial-events-end bookmark: the listing falls back to a LIST,
   * and watch-list is turned off for good when the server refused it (`refusedWith`, its HTTP
   * status) or after `giveUpAfter` incomplete streams in a row.
   */
  watchListIncomplete(refusedWith: number | undefined, refused: boolean, giveUpAfter: number): void {
    this.#stats.watchListFallbacks++;
    this.#listed = false;
    this.#watchListIncomplete++;
    if (refused) this.#watchListOff = `refused by the server (${String(refusedWith)})`;
    else if (this.#watchListIncomplete >= giveUpAfter)
      this.#watchListOff = `${this.#watchListIncomplete} incomplete watch-list streams in a row`;
  }

  // ---- Watches ----

  /** A WATCH request was opened. */
  watchOpened(): void {
    this.#stats.watches++;
    this.#streaming = true;
  }

  /** The open WATCH was closed. */
  watchClosed(): void {
    this.#streaming = false;
  }

  /** A frame arrived at `now` (whatever it holds). */
  heard(now: number): void {
    this.#lastEventAt = now;
  }

  /** The watch moved on to `resourceVersion` (an applied frame, a bookmark, a skipped or poison frame that named one). */
  advanced(resourceVersion: string): void {
    this.#resourceVersion = resourceVersion;
    this.listLag.advanced(resourceVersion);
  }

  /** A bookmark moved the resourceVersion. */
  bookmarked(): void {
    this.#stats.bookmarks++;
  }

  /** A frame whose envelope could not be read was skipped. */
  frameSkipped(): void {
    this.#stats.skippedFrames++;
  }

  /** A heal relist is due (a frame was skipped), unless one is due already: when it is due. */
  healScheduled(): number {
    this.#healDueAt ??= this.clock.now() + this.#healBackoff.next();
    return this.#healDueAt;
  }

  /** The first frame after a listing was applied: the whole path works, so the backoff and the failure streak reset. */
  pathProven(what: string): void {
    this.#backoff.reset();
    this.#succeed(what);
  }

  /** A watch ended on the server's timeout; `clean` when it skipped no frame (then the heal backoff resets too). */
  watchEndedOnTime(clean: boolean): void {
    this.#backoff.reset();
    this.#succeed('watch ended on its timeout');
    if (clean) this.#healBackoff.reset();
  }

  /** A watch failed and the stream goes on as `then` says: counted, logged, and the delay before the next step returned. */
  watchFailed(error: unknown, what: string, then: WatchFailure, extra: Record<string, unknown> = {}): number {
    if (then === 'idle') this.#stats.idleTimeouts++;
    this.#stats.watchFailures++;
    if (then === 'relist' || then === 'relist-rejected') this.#listed = false;
    if (then === 'relist-rejected') this.#resourceVersion = undefined;
    return this.#fail(error, what, extra);
  }

  // ---- Failures ----

  /**
   * Records a failure (health, count) and returns the delay before the retry (the backoff, or the
   * server's `Retry-After`). Logged at warn/error when the failure starts or changes, at debug when
   * it repeats: a 403 retried for an hour is one error line, not 200.
   */
  #fail(error: unknown, what: string, extra: Record<string, unknown> = {}): number {
    const delay = this.#backoff.next(retryAfterMs(error));
    const status = isKubeApiError(error)
      ? error.status
      : (error as { status?: { code?: number; reason?: string; message?: string } } | null)?.status;
    const fields = this.fields({
      code: isKubeApiError(error) ? error.statusCode : status?.code,
      reason: status?.reason,
      message: status?.message,
      request: isKubeApiError(error) ? `${error.verb.toUpperCase()} ${error.path}` : undefined,
      retryDelayMs: delay,
      ...extra,
    });
    this.#failures.failed(error, fields, { failure: what });
    return delay;
  }

  /** Records a success (a listing, or a frame applied): clears the last error, logs a recovery once. */
  #succeed(what: string): void {
    this.#failures.succeeded(this.fields(), { recovery: `recovered: ${what}` });
  }

  /** Records a failure no retry heals (the stream is about to throw it), logs it at error, and returns it. */
  failPermanently<E>(error: E): E {
    this.#listed = false;
    this.#streaming = false;
    const message = error instanceof Error ? error.message : String(error);
    const fields = this.fields({ code: (error as { code?: unknown } | null)?.code });
    this.#failures.failed(error, fields, { failure: `${message}; the stream ends (permanent)` });
    return error;
  }

  /** The health snapshot (`SourceHealth`), derived from the facts reported. */
  health(): SourceHealth {
    return {
      listed: this.#listed,
      streaming: this.#streaming,
      lastListAt: this.#lastListAt,
      lastEventAt: this.#lastEventAt,
      lastError: this.#failures.lastError,
      consecutiveFailures: this.#failures.failures,
      quarantined: this.quarantine.list(),
      listLag: this.listLag.read(this.#resourceVersion),
      ...(this.shard !== undefined && { shard: this.shard.health() }),
    };
  }
}
