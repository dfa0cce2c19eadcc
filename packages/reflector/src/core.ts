import type { KubernetesObjectView, ObjectSchema } from '@reconcile-loop/k8s-types';
import type { SourceHealth } from '@reconcile-loop/object-store';
import { Backoff, type Clock, type Logger } from '@reconcile-loop/primitives';
import { failureSignature, retryAfterMs } from './classify.js';
import type { ListWatchClient, ListWatchScope } from './client.js';
import { isKubeApiError } from '@reconcile-loop/kube-client';
import type { ResolvedOptions } from './options.js';
import { Quarantine } from './quarantine.js';

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
  if (isKubeApiError(error)) {
    // Needs a human (credentials, RBAC, a missing CRD) even though it may heal by itself.
    if (error.statusCode === 401 || error.statusCode === 403 || error.statusCode === 404) return 'error';
    if (error.statusCode === 410) return 'info';
  }
  return 'warn';
}

/**
 * The state a reflector keeps across its streams, shared by the list and watch phases. Lives on
 * the reflector, not on a stream, so a reopened stream continues the backoff, the quarantine and
 * the failure count of the previous one.
 */
export class ReflectorCore<T extends KubernetesObjectView> {
  readonly options: ResolvedOptions;
  readonly client: ListWatchClient;
  readonly schema: ObjectSchema<T>;
  readonly scope: ListWatchScope;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly random: () => number;
  readonly quarantine = new Quarantine();
  /** Retry delay for failures. Reset only by a healthy watch (a frame applied, or ended on time). */
  readonly backoff: Backoff;
  /** Delay before a heal relist after a skipped frame. Reset by a watch that ended on time with nothing skipped. */
  readonly healBackoff: Backoff;
  readonly stats: MutableStats = {
    lists: 0,
    listPages: 0,
    listRestarts: 0,
    watchLists: 0,
    watchListFallbacks: 0,
    relists: 0,
    healRelists: 0,
    watches: 0,
    bookmarks: 0,
    skippedFrames: 0,
    invalidObjects: 0,
    idleTimeouts: 0,
    listFailures: 0,
    listTimeouts: 0,
    watchFailures: 0,
  };
  /** The cursor: the `resourceVersion` of the last listing, applied frame or bookmark. */
  cursor: string | undefined;
  /** True once any stream of this reflector completed a listing: a 400/422 is permanent only before. */
  everListed = false;
  /** When a heal relist is due (a frame was skipped); cleared by every listing. */
  healDueAt: number | undefined;
  listed = false;
  streaming = false;
  lastListAt: number | undefined;
  lastEventAt: number | undefined;
  lastError: unknown;
  consecutiveFailures = 0;
  /** Watch-lists in a row that ended before their initial-events-end bookmark; reset by a completed one. */
  watchListIncomplete = 0;
  /** Why this reflector no longer tries watch-list (the server refused it, or too many incomplete streams); undefined while it may. */
  watchListOff: string | undefined;
  /** Signature of the failure last logged at warn/error, so a repeat is logged at debug only. */
  #loggedFailure: string | undefined;

  constructor(
    options: ResolvedOptions,
    parts: {
      client: ListWatchClient;
      schema: ObjectSchema<T>;
      scope: ListWatchScope;
      clock: Clock;
      logger: Logger;
      random: () => number;
    },
  ) {
    this.options = options;
    this.client = parts.client;
    this.schema = parts.schema;
    this.scope = parts.scope;
    this.clock = parts.clock;
    this.logger = parts.logger;
    this.random = parts.random;
    // Only proof of health resets these (`reset()`); a policy's `resetAfterMs` measures on the reflector's clock.
    this.backoff = new Backoff(options.retry, { clock: parts.clock, random: parts.random });
    this.healBackoff = new Backoff(options.retry, { clock: parts.clock, random: parts.random });
  }

  /** How the next listing is fetched: `initialList`, the client's support for watch-list, and whether it was given up. */
  listingVia(): 'watch-list' | 'list' {
    if (this.watchListOff !== undefined) return 'list';
    const mode = this.options.initialList;
    if (mode === 'list') return 'list';
    if (mode === 'watch-list') return 'watch-list';
    return this.client.supportsWatchList === true ? 'watch-list' : 'list';
  }

  /** Base log fields. */
  fields(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { reflector: this.options.name, cursor: this.cursor, ...extra };
  }

  /**
   * Records a failure (health, count) and returns the delay before the retry (the backoff, or the
   * server's `Retry-After`). Logged at warn/error when the failure starts or changes, at debug when
   * it repeats: a 403 retried for an hour is one error line, not 200.
   */
  fail(error: unknown, what: string, extra: Record<string, unknown> = {}): number {
    this.consecutiveFailures++;
    this.lastError = error;
    const delay = this.backoff.next(retryAfterMs(error));
    const signature = `${what}|${failureSignature(error)}`;
    const level = signature === this.#loggedFailure ? 'debug' : levelOf(error);
    if (level !== 'debug' && level !== 'info') this.#loggedFailure = signature;
    const status = isKubeApiError(error)
      ? error.status
      : (error as { status?: { code?: number; reason?: string; message?: string } } | null)?.status;
    this.logger[level](
      this.fields({
        err: error,
        code: isKubeApiError(error) ? error.statusCode : status?.code,
        reason: status?.reason,
        message: status?.message,
        request: isKubeApiError(error) ? `${error.verb.toUpperCase()} ${error.path}` : undefined,
        consecutiveFailures: this.consecutiveFailures,
        retryDelayMs: delay,
        ...extra,
      }),
      what,
    );
    return delay;
  }

  /** Records a success (a listing, or a frame applied): clears the last error, logs a recovery once. */
  succeed(what: string): void {
    if (this.#loggedFailure !== undefined) {
      this.logger.info(this.fields({ after: this.consecutiveFailures }), `recovered: ${what}`);
      this.#loggedFailure = undefined;
    }
    this.consecutiveFailures = 0;
    this.lastError = undefined;
  }

  /** Records a failure no retry heals (the stream is about to throw it), logs it at error, and returns it. */
  failPermanently<E>(error: E): E {
    this.consecutiveFailures++;
    this.lastError = error;
    this.listed = false;
    this.streaming = false;
    const message = error instanceof Error ? error.message : String(error);
    this.logger.error(
      this.fields({ err: error, code: (error as { code?: unknown } | null)?.code }),
      `${message}; the stream ends (permanent)`,
    );
    return error;
  }

  /** The health snapshot (`SourceHealth`). */
  health(): SourceHealth {
    return {
      listed: this.listed,
      streaming: this.streaming,
      lastListAt: this.lastListAt,
      lastEventAt: this.lastEventAt,
      lastError: this.lastError,
      consecutiveFailures: this.consecutiveFailures,
      quarantined: this.quarantine.list(),
    };
  }
}
