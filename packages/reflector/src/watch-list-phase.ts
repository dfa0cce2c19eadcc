import {
  isInvalidObjectError,
  isMalformedWatchFrameError,
  objectKey,
  type Status,
  type InvalidObjectError,
  type KubernetesObjectView,
  type WatchFrame,
} from '@reconcile-loop/k8s-types';
import { isPermanentSourceError, replaceEvent, type ObjectKey, type SourceEvent } from '@reconcile-loop/object-store';
import type { ListReason, ReflectorCore } from './core.js';
import { isKubeApiError, WatchFrameTooLargeError } from '@reconcile-loop/kube-client';
import { ListTimeoutError } from './errors.js';
import { holdInvalid } from './list-phase.js';
import { WATCH_LIST_GIVE_UP_AFTER } from './options.js';
import { errorFrameError, frameOverCap, readFrame } from './watch-phase.js';
import { STOP, WatchSession } from './watch-session.js';

/** The annotation kube-apiserver puts on the bookmark that ends a watch-list's initial events. */
export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/**
 * How a watch-list's initial phase ended: synced (the replace was yielded; the watch goes on on
 * `session`, from the initial-events-end bookmark's `resourceVersion`), fell back (LIST now), or
 * stopped (the signal aborted).
 */
export type WatchListOutcome<T extends KubernetesObjectView> =
  | { readonly kind: 'synced'; readonly resourceVersion: string; readonly session: WatchSession<T> }
  | { readonly kind: 'fallback' }
  | { readonly kind: 'stopped' };

const FALLBACK = { kind: 'fallback' } as const;
const STOPPED = { kind: 'stopped' } as const;

const ANNOTATION_BYTES = Buffer.from(INITIAL_EVENTS_END_ANNOTATION, 'utf8');

/** True when a BOOKMARK frame (its bytes, its JSON line, or a decoded object) carries `k8s.io/initial-events-end: "true"`. */
export function isInitialEventsEnd(value: unknown): boolean {
  let raw = value;
  // Bookmarks are small and rare; only one that names the annotation is parsed again.
  let text: string | undefined;
  if (value instanceof Uint8Array) {
    const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    if (!bytes.includes(ANNOTATION_BYTES)) return false;
    text = bytes.toString('utf8');
  } else if (typeof value === 'string') {
    if (!value.includes(INITIAL_EVENTS_END_ANNOTATION)) return false;
    text = value;
  }
  if (text !== undefined) {
    try {
      raw = JSON.parse(text);
    } catch {
      return false;
    }
  }
  const annotations = (raw as { object?: { metadata?: { annotations?: Record<string, unknown> } } } | null)?.object?.metadata
    ?.annotations;
  return annotations?.[INITIAL_EVENTS_END_ANNOTATION] === 'true';
}

/** Why a watch-list did not complete, for the log and the give-up decision. */
type Incomplete = { readonly why: string; readonly error?: unknown; readonly refused?: boolean };

/**
 * The initial phase of a watch-list (client-go's `watchList`, kube-rs's streaming-list
 * `InitialWatch` state): a WATCH with `sendInitialEvents=true` from `resourceVersion=""`; every
 * initial object is validated as it arrives into a temporary map (a poison object into the
 * quarantine-to-be) and the raw frame dropped, so the peak is the objects kept plus one frame; the
 * cursor does not move per object (initial events are not ordered by resourceVersion). The
 * `k8s.io/initial-events-end` bookmark swaps the map in as one replace (the store synthesises the
 * deletions, as after a LIST) and its resourceVersion becomes the cursor; the open stream is
 * handed to the watching state.
 *
 * Anything else before that bookmark — the request refused or failed, an ERROR frame, the stream
 * ending, silence past the idle timeout, `listTimeoutMs` passing, a frame over `maxFrameBytes` —
 * drops the map and falls back to a LIST for this listing (client-go falls back on every error:
 * "making progress is better than deadlocking"). A refusal ({@link isWatchListRefusal}: a 400/422 naming the watch-list parameters, the server's WatchList
 * feature is off) or {@link WATCH_LIST_GIVE_UP_AFTER} incomplete streams in a row turn watch-list
 * off for this reflector (kubernetes PR #140902). A generator of its own, so the temporary map
 * lives in a frame that is freed once the replace has been consumed.
 */
export async function* watchListPhase<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  signal: AbortSignal,
  why: ListReason,
): AsyncGenerator<SourceEvent<T>, WatchListOutcome<T>, undefined> {
  if (signal.aborted) return STOPPED;
  core.listingStarted('watch-list', why, false);
  const objects = new Map<ObjectKey, T>();
  const poison = new Map<ObjectKey, InvalidObjectError>();
  let session: WatchSession<T> | undefined;
  let incomplete: Incomplete;
  let synced = false;
  try {
    session = new WatchSession(core, signal, { sendInitialEvents: true });
    session.armDeadline(core.options.listTimeoutMs);
    core.logger.debug(core.fields({ timeoutSeconds: session.timeoutSeconds, why }), 'watch-list: streaming the initial list');
    incomplete = { why: 'the stream ended before the initial-events-end bookmark' };
    for (;;) {
      const next = await session.next();
      if (next === STOP) {
        if (session.stopped === 'aborted' || signal.aborted) return STOPPED;
        if (session.stopped === 'deadline') {
          core.watchListTimedOut();
          incomplete = {
            why: `no initial-events-end bookmark within listTimeoutMs (${core.options.listTimeoutMs} ms)`,
            error: new ListTimeoutError(core.options.listTimeoutMs),
          };
        } else incomplete = { why: `the stream went silent for ${session.idleMs} ms before the initial-events-end bookmark` };
        break;
      }
      if (next.done) break;
      core.heard(core.clock.now());
      const value = next.value;
      if (frameOverCap(value, core.options.maxFrameBytes)) {
        incomplete = {
          why: 'a frame over maxFrameBytes during the initial events',
          error: new WatchFrameTooLargeError(core.options.maxFrameBytes),
        };
        break;
      }
      let frame: WatchFrame<T>;
      try {
        // Envelope and object in one read against the view, so a byte frame's reader skips what the
        // view drops; the envelope is read first, so an unreadable one is never taken for a poison object.
        frame = readFrame(value, core.schema);
      } catch (error) {
        if (isInvalidObjectError(error)) {
          holdInitial(core, error, objects, poison);
          continue;
        }
        if (!isMalformedWatchFrameError(error)) throw error;
        core.frameSkipped();
        // Due after the swap: the watching state arms it (a heal timer here would cut the initial phase).
        core.healScheduled();
        core.logger.warn(
          core.fields({ frameType: error.frameType, err: error }),
          'watch-list: skipped an initial frame with an unreadable envelope; a heal relist is scheduled',
        );
        continue;
      }
      if (frame.type === 'ERROR') {
        incomplete = { why: 'an ERROR frame during the initial events', error: errorFrameError(frame.status) };
        break;
      }
      if (frame.type === 'BOOKMARK') {
        if (!isInitialEventsEnd(value)) continue;
        session.clearDeadline();
        synced = true;
        // A frame on the watch proves the whole path, as the first applied frame after a LIST does.
        core.listed('watch-list', why, frame.resourceVersion, poison, core.clock.now());
        core.logger.debug(
          core.fields({ objects: objects.size, quarantined: core.quarantine.size, why }),
          'watch-list: initial events complete',
        );
        yield replaceEvent(objects, core.quarantine.keys());
        return { kind: 'synced', resourceVersion: frame.resourceVersion, session };
      }
      // A watch-list has no list metadata to echo the shard selector: every initial object is checked here.
      if (core.shard !== undefined && !core.shard.owns(frame.object)) {
        core.shard.dropped(core.logger, core.fields());
        continue;
      }
      // One object at a time into the temporary map, as a LIST page's items are gathered.
      const key = objectKey(frame.object);
      poison.delete(key);
      if (frame.type === 'DELETED') objects.delete(key);
      else objects.set(key, frame.object);
    }
  } catch (error) {
    if (signal.aborted) return STOPPED;
    if (isPermanentSourceError(error)) throw core.failPermanently(error);
    const refused = isKubeApiError(error) && isWatchListRefusal(error.status, error.statusCode);
    incomplete = { why: refused ? 'the server refused the watch-list request' : 'the watch-list request failed', error, refused };
  } finally {
    if (!synced) session?.close();
  }
  return fallBack(core, incomplete);
}

/**
 * True when a 400/422 refuses the watch-list parameters themselves (kube-apiserver with the WatchList
 * feature off: 422 `sendInitialEvents: Forbidden: ... unless the WatchList feature gate is enabled`),
 * read from the `Status`'s causes or message. Any other 400/422 (a selector the server cannot
 * parse) is not a verdict on watch-list: it counts as one incomplete stream, and the LIST fallback
 * meets the same refusal under the LIST rules.
 */
export function isWatchListRefusal(status: Status | undefined, httpStatus?: number): boolean {
  const code = httpStatus ?? status?.code;
  if (code !== 400 && code !== 422) return false;
  if (
    status?.details?.causes.some(
      (cause) =>
        cause.field === 'sendInitialEvents' || cause.field === 'resourceVersionMatch' || cause.field === 'allowWatchBookmarks',
    )
  )
    return true;
  return /\b(sendInitialEvents|resourceVersionMatch)\b/.test(status?.message ?? '');
}

/** Records an incomplete watch-list, turns watch-list off when the server refused it or after too many, and falls back to a LIST. */
function fallBack<T extends KubernetesObjectView>(core: ReflectorCore<T>, incomplete: Incomplete): WatchListOutcome<T> {
  core.watchListIncomplete(
    (incomplete.error as { statusCode?: number } | undefined)?.statusCode,
    incomplete.refused === true,
    WATCH_LIST_GIVE_UP_AFTER,
  );
  const status = isKubeApiError(incomplete.error) ? incomplete.error.status : undefined;
  core.logger.warn(
    core.fields({
      err: incomplete.error,
      code: isKubeApiError(incomplete.error) ? incomplete.error.statusCode : undefined,
      message: status?.message,
      incompleteInARow: core.watchListIncompleteInARow,
      watchListOff: core.watchListOff,
    }),
    `watch-list incomplete: ${incomplete.why}; falling back to a LIST${core.watchListOff === undefined ? '' : ` (watch-list is off for this reflector: ${core.watchListOff})`}`,
  );
  return FALLBACK;
}

/**
 * An initial frame whose object fails the view, sorted as a LIST item failing it would be (the
 * list phase's `holdInvalid`): held in the quarantine-to-be under its key, or logged and skipped without
 * one. A DELETED one needs only its key (the salvaged name): the object leaves both maps, unvalidated.
 */
function holdInitial<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  error: InvalidObjectError,
  objects: Map<ObjectKey, T>,
  poison: Map<ObjectKey, InvalidObjectError>,
): void {
  if (error.frameType === 'DELETED') {
    if (error.objectKey !== undefined) {
      objects.delete(error.objectKey);
      poison.delete(error.objectKey);
    }
    return;
  }
  holdInvalid(core, error, objects, poison, error.frameType);
}
