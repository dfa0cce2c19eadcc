/**
 * What a source reports about itself, so a loop can say why it is not synced or has gone stale
 * without the source throwing. Transient failures (a 403 that RBAC may fix, a dropped watch) are
 * retried inside the source and only ever show here; a permanent one ends the stream (see
 * {@link PermanentSourceError}).
 */
import type { ObjectKey } from './events.js';

/** One object held out of the store because it failed validation (a poison object). */
export interface QuarantinedObject {
  /** Its object key. */
  readonly key: ObjectKey;
  /** Its `metadata.resourceVersion`, when readable. */
  readonly resourceVersion: string | undefined;
  /** Why it was rejected (schema issues, one line each). */
  readonly issues: readonly string[];
  /** When it entered the quarantine (clock ms). */
  readonly since: number;
}

/** A snapshot of a source's health; every time is in the source's clock (ms). */
export interface SourceHealth {
  /** True once the current stream delivered its listing and has not failed since. */
  readonly listed: boolean;
  /** True while a live stream (a watch) is open. */
  readonly streaming: boolean;
  /** When the last listing (first list or relist) completed. */
  readonly lastListAt: number | undefined;
  /** When the last frame or event arrived (bookmarks included). */
  readonly lastEventAt: number | undefined;
  /** The last failure; cleared by the next success. Carries the apiserver's `Status` when there was one. */
  readonly lastError: unknown;
  /** Failures since the last success. */
  readonly consecutiveFailures: number;
  /** Objects whose newest version failed validation: the store holds their last good version, if they had one. */
  readonly quarantined: readonly QuarantinedObject[];
  /** Optional: how far the stream is behind a LIST (a reflector with `listLagProbeIntervalMs` reports it). */
  readonly listLag?: SourceListLag | undefined;
  /** Optional: the slice of the kind a sharded source holds (a reflector with the `shard` option reports it). */
  readonly shard?: SourceShard | undefined;
}

/**
 * How far a source's stream is behind a LIST of the same objects, from a periodic probe LIST (see
 * the reflector's `listLagProbeIntervalMs`). ResourceVersions are compared only when both are
 * decimal integers (etcd revisions, as every kube-apiserver sends); otherwise the comparisons are undefined.
 */
export interface SourceListLag {
  /** The probe LIST's `metadata.resourceVersion` (the store's revision when it answered). */
  readonly listResourceVersion: string;
  /** When the probe answered (the source's clock, ms). */
  readonly probedAt: number;
  /** The last resourceVersion the stream delivered (a listing, a frame or a bookmark); undefined before a listing. */
  readonly streamResourceVersion: string | undefined;
  /** `listResourceVersion − streamResourceVersion`, 0 once caught up: etcd revisions, i.e. writes to any kind, not objects of this one. */
  readonly revisions: number | undefined;
  /**
   * When the newest probe the stream has caught up with was taken: the cache held every write
   * committed before it, so `now − caughtUpAt` bounds how stale the cache is. Undefined until one.
   */
  readonly caughtUpAt: number | undefined;
}

/**
 * What a sharded source holds and who enforces it (Kubernetes' sharded LIST/WATCH, KEP-5866). The
 * objects its store holds are a loop's `objects` and `cache.objects` for the source.
 */
export interface SourceShard {
  /** The object field hashed (FNV-1a 64). */
  readonly field: 'uid' | 'namespace';
  /** The arcs `[start, end)` of the hash space owned, 0x hex. */
  readonly ranges: readonly { readonly start: string; readonly end: string }[];
  /** The `shardSelector` sent with every LIST and WATCH. */
  readonly selector: string;
  /**
   * `'server'`: the last LIST echoed the selector (`metadata.shardInfo`); `'client'`: the server
   * ignored it and the source drops what it does not own; `'unverified'`: no LIST since the ranges
   * were set (a watch-list carries no list metadata), every object still checked on the client.
   */
  readonly filter: 'server' | 'client' | 'unverified';
  /** Times the ranges changed at run time. */
  readonly reshards: number;
  /** Objects that arrived outside the ranges and were dropped on the client. */
  readonly dropped: number;
}

/** A source that can report its health. Optional: in-process sources need not. */
export interface HealthReportingSource {
  health(): SourceHealth;
}

/** True when `source` has a `health()` method. */
export function reportsHealth(source: object): source is HealthReportingSource {
  return typeof (source as { health?: unknown }).health === 'function';
}

/**
 * Marks a failure no retry can heal (the first LIST answered 400 or 422, a client that cannot build a
 * request). A source throws an error carrying `permanent: true` from its stream; the stream driver then
 * stops reopening it and rejects everyone waiting for sync with that error.
 */
export interface PermanentSourceError extends Error {
  readonly permanent: true;
}

/** True when `error` is marked permanent (duck-typed, so it holds across ESM/CJS copies). */
export function isPermanentSourceError(error: unknown): error is PermanentSourceError {
  return error instanceof Error && (error as { permanent?: unknown }).permanent === true;
}
