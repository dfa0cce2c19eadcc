/**
 * How far a reflector's stream is behind a LIST: the optional probe (`listLagProbeIntervalMs`) and
 * what it measures (issue 28, item 4). No anchor reports it; a dead or stuck watch otherwise shows
 * only as silence, and a watch that is slow but not silent shows as nothing.
 *
 * The probe is a LIST of the reflector's scope with `limit=1` and no `resourceVersion`: the
 * apiserver answers it with a consistent read (from etcd, or from its watch cache once that has
 * caught up with etcd's current revision), so the list's `metadata.resourceVersion` is the store's
 * revision when it answered. One item is decoded at most; nothing is handed on.
 *
 * Two figures come out of it:
 * - `caughtUpAt`: when the newest probe the stream has caught up with was taken. Caught up means the
 *   stream delivered a resourceVersion at least the probe's (a frame, a bookmark or a listing), so
 *   the cache then held every write committed before that probe: `now − caughtUpAt` is an upper
 *   bound on how stale the cache is. It needs resourceVersions to be ordered, which the API leaves
 *   opaque; it is compared only when both are decimal integers, as every kube-apiserver's are (etcd
 *   revisions; client-go parses them as such too, e.g. for "too large resource version").
 * - `revisions`: the probe's resourceVersion minus the stream's, under the same condition; 0 once
 *   caught up. It counts etcd revisions, i.e. writes to every kind in the cluster, not objects of
 *   this one: a watch on a quiet kind reads behind until the next bookmark moves it on (the watch
 *   cache sends one about every minute, `defaultBookmarkFrequency`), so alert on `caughtUpAt`
 *   ageing past the probe interval plus a minute, not on `revisions` alone.
 *
 * Invariant: a probe never changes the stream (it is not a listing; a failed probe is logged at
 * debug and counts as no failure of the source), and both figures are undefined until a probe
 * answered.
 */
import type { SourceListLag } from '@reconcile-loop/object-store';

const DECIMAL = /^(0|[1-9]\d*)$/;

/** `a − b` for two decimal resourceVersions, undefined when either is not one. */
export function revisionsBehind(a: string, b: string | undefined): number | undefined {
  if (b === undefined || !DECIMAL.test(a) || !DECIMAL.test(b)) return undefined;
  const diff = BigInt(a) - BigInt(b);
  return diff <= 0n ? 0 : Number(diff);
}

/** The probes' results against the resourceVersions the stream delivered. */
export class ListLag {
  /** The newest probe, with when it answered; undefined before one. */
  #probe: { readonly resourceVersion: string; readonly at: number } | undefined;
  /** The newest probe the stream has reached, by when it was taken. */
  #caughtUpAt: number | undefined;

  /** A probe answered at `at` with `resourceVersion`, while the stream stood at `current`. */
  probed(resourceVersion: string, at: number, current: string | undefined): void {
    this.#probe = { resourceVersion, at };
    this.advanced(current);
  }

  /** The stream delivered `resourceVersion` (a listing, a frame or a bookmark). */
  advanced(resourceVersion: string | undefined): void {
    const probe = this.#probe;
    if (probe === undefined || this.#caughtUpAt === probe.at) return;
    if (revisionsBehind(probe.resourceVersion, resourceVersion) === 0) this.#caughtUpAt = probe.at;
  }

  /** The figures, with the stream at `current`; undefined before the first probe answered. */
  read(current: string | undefined): SourceListLag | undefined {
    const probe = this.#probe;
    if (probe === undefined) return undefined;
    return {
      listResourceVersion: probe.resourceVersion,
      probedAt: probe.at,
      streamResourceVersion: current,
      revisions: revisionsBehind(probe.resourceVersion, current),
      caughtUpAt: this.#caughtUpAt,
    };
  }
}
