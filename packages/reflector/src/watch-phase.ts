import {
  isInvalidObjectError,
  isMalformedWatchFrameError,
  objectKey,
  type Status,
  type InvalidObjectError,
  type KubernetesObjectView,
  type ObjectSchema,
  type WatchFrame,
} from '@reconcile-loop/k8s-types';
import { parseWatchFrame, parseWatchLine, readWatchFrame } from '@reconcile-loop/k8s-types/internal';
import { deleteEvent, isPermanentSourceError, upsertEvent, type SourceEvent } from '@reconcile-loop/object-store';
import { watchVerdict } from './classify.js';
import type { ReflectorCore } from './core.js';
import { isKubeApiError, KubeProtocolError, WatchFrameTooLargeError, type KubeApiError } from '@reconcile-loop/kube-client';
import { statusError } from '@reconcile-loop/kube-client/errors';
import { STOP, WatchSession } from './watch-session.js';

/** A watch that ends cleanly this soon without a single frame is a failure, not a server timeout (as Go). */
const VERY_SHORT_WATCH_MS = 1_000;

/**
 * How a watch ended: aborted (the stream ends); ended on the server's timeout (reopen from
 * `resourceVersion`, no wait); failed (retry the WATCH from `resourceVersion`, or relist, after
 * `delayMs`); or a heal relist is due (relist now: its delay already passed while the watch ran).
 * The outcomes that go on watching carry the resourceVersion the watch reached.
 */
export type WatchOutcome =
  | { readonly kind: 'aborted' }
  | { readonly kind: 'ended'; readonly resourceVersion: string }
  | { readonly kind: 'retry'; readonly resourceVersion: string; readonly delayMs: number }
  | { readonly kind: 'relist'; readonly delayMs: number }
  | { readonly kind: 'heal' };

const ABORTED: WatchOutcome = { kind: 'aborted' };
const HEAL: WatchOutcome = { kind: 'heal' };

/**
 * The watching state: an upsert or delete per object frame, quarantine for a poison object,
 * skip-and-advance (plus a scheduled heal relist) for an unreadable frame. Reads `session` when
 * given (the stream a watch-list just synced on: its initial events already proved the path), else
 * opens a WATCH from `from`, the resourceVersion the listing or the previous watch reached. The
 * phase owns the resourceVersion while it runs (each frame, bookmark or skipped frame that names
 * one moves it) and returns it in the outcome. Two timers: the idle deadline (silence past the sent
 * timeout plus the grace), and the heal deadline when one is due. Closes the session whatever the outcome.
 */
export async function* watchPhase<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  signal: AbortSignal,
  from: string,
  continued?: WatchSession<T>,
): AsyncGenerator<SourceEvent<T>, WatchOutcome, undefined> {
  const { clock } = core;
  let session: WatchSession<T> | undefined = continued;
  // A continued watch-list stream already applied its initial events (and reset the backoff there).
  let applied = continued === undefined ? 0 : 1;
  let skipped = 0;
  let resourceVersion = from;
  const advance = (to: string): void => {
    resourceVersion = to;
    core.advanced(to);
  };
  const appliedOne = (): void => {
    // The first frame after a listing proves the whole path: the backoff and the failure count reset.
    if (++applied === 1) core.pathProven('watching');
  };
  try {
    session ??= new WatchSession(core, signal, { resourceVersion });
    const open = session;
    if (continued === undefined) core.logger.debug(core.fields({ timeoutSeconds: open.timeoutSeconds }), 'watching');
    open.armHeal(); // a heal still due from an earlier watch
    for (;;) {
      // The rest of the current socket read first, with no promise hop per frame (BENCHMARKS.md (15), lever (c)).
      const next = open.buffered() ?? (await open.next());
      if (next === STOP) break;
      if (next.done) {
        if (applied > 0 || clock.now() - open.startedAt >= VERY_SHORT_WATCH_MS) {
          core.watchEndedOnTime(skipped === 0);
          return { kind: 'ended', resourceVersion };
        }
        const error = new KubeProtocolError('watch closed within a second without a frame');
        return { kind: 'retry', resourceVersion, delayMs: core.watchFailed(error, 'watch closed at once', 'retry') };
      }
      const now = clock.now();
      core.heard(now);
      const value = next.value;
      if (frameOverCap(value, core.options.maxFrameBytes))
        return tooLarge(core, new WatchFrameTooLargeError(core.options.maxFrameBytes));
      let frame: WatchFrame<T>;
      try {
        frame = readFrame(value, core.schema);
      } catch (error) {
        if (isMalformedWatchFrameError(error)) {
          // Tearing the watch down would reopen at the same cursor and replay this frame: skip it,
          // and heal whatever state it carried with a relist once the heal delay passes.
          core.frameSkipped();
          skipped++;
          if (error.resourceVersion !== undefined) advance(error.resourceVersion);
          open.scheduleHeal();
          core.logger.warn(
            core.fields({ frameType: error.frameType, err: error, healInMs: (core.healDueAt ?? now) - now }),
            'skipped a watch frame with an unreadable envelope; a heal relist is scheduled',
          );
          continue;
        }
        if (!isInvalidObjectError(error)) throw error;
        appliedOne();
        if (error.resourceVersion !== undefined) advance(error.resourceVersion);
        const held = quarantineFrame(core, error, now, () => open.scheduleHeal());
        if (held !== undefined) yield deleteEvent(held);
        continue;
      }
      if (frame.type === 'ERROR')
        return failedWatch(core, resourceVersion, frame.status, undefined, 'watch ERROR frame', errorFrameError(frame.status));
      advance(frame.resourceVersion);
      appliedOne();
      if (frame.type === 'BOOKMARK') {
        core.bookmarked();
        continue;
      }
      // Shard membership never changes for an object (uid and namespace are immutable): one outside
      // the ranges is another replica's, on the server's filter or not, and never reaches the store.
      if (core.shard !== undefined && !core.shard.owns(frame.object)) {
        core.shard.dropped(core.logger, core.fields());
        continue;
      }
      const key = objectKey(frame.object);
      if (core.quarantine.lift(key)) {
        const why =
          frame.type === 'DELETED' ? 'quarantined object deleted; released' : 'quarantine lifted: the object validates again';
        core.logger.info(core.fields({ key, resourceVersion: frame.resourceVersion, frameType: frame.type }), why);
      }
      yield frame.type === 'DELETED' ? deleteEvent(key) : upsertEvent(key, frame.object);
    }
  } catch (error) {
    if (signal.aborted) return ABORTED;
    if (!session?.stopped) {
      if (isPermanentSourceError(error)) throw core.failPermanently(error);
      if (isKubeApiError(error))
        return failedWatch(core, resourceVersion, error.status, error.statusCode, 'watch request failed', error);
      if (error instanceof WatchFrameTooLargeError) return tooLarge(core, error);
      return {
        kind: 'retry',
        resourceVersion,
        delayMs: core.watchFailed(error, 'watch dropped; retrying from the cursor', 'retry'),
      };
    }
  } finally {
    session?.close();
  }
  const stopped = session.stopped;
  if (stopped === 'aborted' || signal.aborted) return ABORTED;
  if (stopped === 'heal') return HEAL;
  const delayMs = core.watchFailed(
    new KubeProtocolError(`watch silent for ${session.idleMs} ms, past its timeout`),
    'watch silent past its timeout; reopening from the cursor',
    'idle',
    { idleMs: session.idleMs },
  );
  return { kind: 'retry', resourceVersion, delayMs };
}

/** The error an in-band ERROR frame stands for: kube-client's, so the same `is*` helpers classify it. */
export function errorFrameError(status: Status): KubeApiError {
  return statusError(status, 'watch', '(in-band ERROR frame)');
}

/**
 * A poison object in a frame: held in the quarantine (or, for a DELETED, released), never emitted.
 * The caller has moved the resourceVersion to the frame's, when it names one.
 * Returns the key to emit a delete for only for a DELETED frame: an ADDED or MODIFIED one leaves
 * the last good version in the consumer's store, as client-go's informer keeps it — the object
 * still exists, and a delete would show a live object to reconcile as deleted.
 */
export function quarantineFrame<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  error: InvalidObjectError,
  now: number,
  scheduleHeal: () => void,
): string | undefined {
  core.invalidObject();
  const key = error.objectKey;
  if (key === undefined) {
    // Nothing to hold it by: skip it like an unreadable frame, and heal.
    scheduleHeal();
    core.logger.error(
      core.fields({ frameType: error.frameType, resourceVersion: error.resourceVersion, issues: error.issues, err: error }),
      'a frame object without a readable name failed the schema; skipped, heal relist scheduled',
    );
    return undefined;
  }
  if (error.frameType === 'DELETED') {
    if (core.quarantine.lift(key))
      core.logger.info(core.fields({ key, resourceVersion: error.resourceVersion }), 'quarantined object deleted; released');
    return key;
  }
  const entry = core.quarantine.hold(key, error, now);
  core.logger.error(
    core.fields({ key, resourceVersion: entry.resourceVersion, frameType: error.frameType, issues: entry.issues }),
    'object failed the schema; quarantined (its last good version, if any, stays in the store)',
  );
  return undefined;
}

/**
 * Reads one watch value as a `ListWatchClient` may hand it over: a frame's bytes (kube-client's
 * `watchFrameBatches`, the hot path: read from the bytes, never decoded to a string first), its JSON
 * line, or an already decoded object (fakes). Same frames and errors whichever form a frame comes in.
 */
export function readFrame<T>(value: unknown, schema: ObjectSchema<T>): WatchFrame<T> {
  if (value instanceof Uint8Array) return parseWatchFrame(value, schema);
  if (typeof value === 'string') return parseWatchLine(value, schema);
  return readWatchFrame(value, schema);
}

/**
 * True when a frame from a client that does not cap frames itself is over `maxFrameBytes` bytes:
 * bytes by their `byteLength`, a line by {@link overCap}; a decoded object has no length to check.
 */
export function frameOverCap(value: unknown, maxFrameBytes: number): boolean {
  if (value instanceof Uint8Array) return value.byteLength > maxFrameBytes;
  return typeof value === 'string' && overCap(value, maxFrameBytes);
}

/**
 * True when a line from a client that does not cap frames itself is over `maxFrameBytes` bytes. The
 * UTF-8 length is at most three bytes per UTF-16 unit and at least one, so it is counted only for a
 * line that could be over the cap either way (a line from kube-client never is: it capped it).
 */
export function overCap(line: string, maxFrameBytes: number): boolean {
  if (line.length > maxFrameBytes) return true;
  return line.length * 3 > maxFrameBytes && Buffer.byteLength(line, 'utf8') > maxFrameBytes;
}

/** A frame over the cap: a protocol error; the watch is torn down and the reflector relists (the same cursor would replay it). */
export function tooLarge<T extends KubernetesObjectView>(core: ReflectorCore<T>, error: unknown): WatchOutcome {
  return { kind: 'relist', delayMs: core.watchFailed(error, 'watch frame over maxFrameBytes; relisting', 'relist') };
}

/**
 * A WATCH from `resourceVersion` that failed with a `Status` (HTTP or in-band): relist on a dead or
 * rejected resourceVersion, else retry from it.
 */
export function failedWatch<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  resourceVersion: string,
  status: Status | undefined,
  httpStatus: number | undefined,
  what: string,
  error: unknown,
): WatchOutcome {
  const verdict = watchVerdict(status, httpStatus);
  const extra = { code: httpStatus ?? status?.code, reason: status?.reason, message: status?.message };
  if (verdict === 'retry')
    return {
      kind: 'retry',
      resourceVersion,
      delayMs: core.watchFailed(error, `${what}; retrying from the cursor`, 'retry', extra),
    };
  if (verdict === 'relist-rejected') {
    // The resourceVersion itself is refused (unparseable): never send it again (the relist outcome carries none).
    return {
      kind: 'relist',
      delayMs: core.watchFailed(error, `${what}: cursor rejected; dropping it and relisting`, 'relist-rejected', extra),
    };
  }
  const why = verdict === 'relist-expired' ? 'cursor expired' : 'cursor too large or gateway timeout';
  return { kind: 'relist', delayMs: core.watchFailed(error, `${what}: ${why}; relisting`, 'relist', extra) };
}
