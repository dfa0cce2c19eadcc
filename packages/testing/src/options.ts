/** The public option and control types of the embedded apiserver, and their resolved defaults. */

/** Request verbs as the apiserver's audit and metrics name them (plus `discovery` for everything else). */
export type ApiServerVerb =
  | 'list'
  | 'watch'
  | 'get'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection'
  | 'discovery';

/** Every verb, in {@link ApiServer.requestCounts} order. */
export const ALL_VERBS: readonly ApiServerVerb[] = [
  'list',
  'watch',
  'get',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
  'discovery',
];

/**
 * The failures {@link ApiServer.failNext} can inject: an HTTP status answered with the real server's
 * Status body for it, or `'hang'` (the request is accepted and never answered until the client gives up
 * or the server closes: a LIST or WATCH stuck behind a wedged backend).
 */
export type InjectedStatus = 400 | 401 | 403 | 404 | 410 | 422 | 429 | 500 | 504 | 'hang';

/** One injected failure for the next request(s) of a verb. */
export interface FailNextOptions {
  verb: Exclude<ApiServerVerb, 'discovery'>;
  status: InjectedStatus;
  /** How many consecutive requests of that verb fail. Default 1. */
  times?: number | undefined;
  /**
   * Watch only: answer 200 and report the failure as an in-band ERROR frame, as the real server
   * reports errors found after the watch started (410 for an expired version in particular).
   * Default false: the HTTP status itself carries the failure.
   */
  inBand?: boolean | undefined;
  /** 429 and 504 only: the `Retry-After` header and `details.retryAfterSeconds`. Default 1. */
  retryAfterSeconds?: number | undefined;
}

/** How a watch from a resourceVersion newer than the store behaves. */
export type FutureWatchBehavior = 'error' | 'wait';

/** Options for {@link startApiServer}. */
export interface ApiServerOptions {
  /** TCP port; 0 (default) picks an ephemeral port. */
  port?: number | undefined;
  /** Listen address. Default 127.0.0.1. */
  host?: string | undefined;
  /** When set, every request must carry `Authorization: Bearer <token>` (401 otherwise). Default: any or none. */
  token?: string | undefined;
  /** Period of BOOKMARK frames on watches that allow them. Default 60 000 (the watch cache's minute). */
  bookmarkIntervalMs?: number | undefined;
  /** A bookmark is sent this long before a watch's deadline. Default 2 000 (the watch cache's 2 s). */
  bookmarkBeforeTimeoutMs?: number | undefined;
  /** Milliseconds one unit of `timeoutSeconds` lasts. Default 1 000; tests shrink it. */
  timeoutSecondsScaleMs?: number | undefined;
  /** Watches without `timeoutSeconds` end after a random [min, 2·min) seconds, as `--min-request-timeout`. Default 1 800. */
  minRequestTimeoutSeconds?: number | undefined;
  /** How long a request for a future resourceVersion waits for it before the 504. Default 3 000 (the watch cache's blockTimeout). */
  tooLargeResourceVersionWaitMs?: number | undefined;
  /**
   * A watch from a future resourceVersion: `wait` (default, as kube-apiserver with or without the
   * watch cache) is held silently — no frames, no bookmarks — until the revision arrives or
   * `timeoutSeconds` ends it; `error` waits like a LIST, then sends an in-band 504 ERROR.
   */
  futureWatch?: FutureWatchBehavior | undefined;
  /** History retained for watch replay and exact reads; older writes are compacted. Default 10 000. */
  maxHistory?: number | undefined;
  /** Wall time for timestamps and ages, in epoch milliseconds. Default `Date.now`. */
  wallClock?: (() => number) | undefined;
  /** When set, a bound pod given a `deletionTimestamp` is finished (as a kubelet would) after this many ms. */
  kubeletAutoFinishDeleteMs?: number | undefined;
  /**
   * Bytes a watch may leave unsent (its client not reading) before the server closes it, as the
   * watch cache terminates a watcher whose buffer is full: the client reads EOF and re-watches.
   * Default 16 MiB; 0 disables the bound.
   */
  maxWatchBufferBytes?: number | undefined;
  /**
   * How a pod deletion reaches watchers. `graceful` (the real registry): a MODIFIED carrying
   * `deletionTimestamp` always comes first — also for unbound pods and 0-grace deletes — then the
   * DELETED. `immediate`: a deletion whose grace is 0 is a DELETED alone (this server's behaviour
   * before 0.x; some frame-counting tests were written against it). Default `graceful`.
   */
  deletionEvents?: 'graceful' | 'immediate' | undefined;
  /**
   * An HTTP create into a namespace that does not exist creates the namespace instead of the real
   * 404 `namespaces "x" not found`. Default false. (Creates through the typed controls —
   * `createPod`, `seedPods`, `createObject` — always create a missing namespace.)
   */
  implicitNamespaces?: boolean | undefined;
  /**
   * Which kube-apiserver to reproduce. `cached` (default, `--watch-cache=true`): watches resume
   * from the watch cache window (a resourceVersion compacted in etcd but inside the window still replays),
   * a LIST at `resourceVersion=0` ignores `limit`, a future-version LIST waits 3 s then 504s with
   * `retryAfterSeconds`, bookmarks come periodically and 2 s before the deadline. `uncached`
   * (`--watch-cache=false`): watches and lists go to etcd: a compacted resourceVersion is 410 `The
   * resourceVersion for the provided watch is too old.`, `limit` pages at any resourceVersion, a
   * future-version LIST is 504 at once without `retryAfterSeconds`, and no bookmarks are sent.
   */
  personality?: 'cached' | 'uncached' | undefined;
  /**
   * Whether watch-list (`sendInitialEvents`) is served. `true` (default) as kube-apiserver 1.35
   * with and without the watch cache: the initial state as ADDED frames, then (with
   * `allowWatchBookmarks=true`) a BOOKMARK annotated `k8s.io/initial-events-end: "true"`. `false`
   * reproduces `--feature-gates=WatchList=false`: any WATCH carrying `sendInitialEvents` is 422
   * Invalid, `sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the
   * WatchList feature gate is enabled` (checked against kube-apiserver 1.35.4).
   */
  watchList?: boolean | undefined;
  /**
   * Whether sharded LIST/WATCH (KEP-5866, `ListOptions.shardSelector`) is served, as kube-apiserver
   * 1.36/1.37 started with `--feature-gates=ShardedListAndWatch=true`. `true` (default): LIST
   * (paged or not), WATCH and watch-list keep only the objects whose FNV-1a 64 hash of
   * `metadata.uid` or `metadata.namespace` falls in a selected range, a JSON list carries
   * `metadata.shardInfo: { selector }` (the selector's canonical form), and a malformed selector is
   * the real 500 `invalid shard selector: …`. `false` reproduces the gate off (every real cluster's
   * default, and 1.35, which has no such gate): the parameter is ignored and no `shardInfo` is sent.
   */
  shardedListAndWatch?: boolean | undefined;
  /** `/version` numbers. Default 1.35 (`v1.35.4+reconcile-loop`, the release the e2e layer runs). */
  version?: { major: string; minor: string; gitVersion: string } | undefined;
}

/** The tunables with their defaults applied. */
export type ResolvedOptions = {
  [K in Exclude<
    keyof ApiServerOptions,
    'port' | 'host' | 'token' | 'wallClock' | 'kubeletAutoFinishDeleteMs' | 'version'
  >]-?: Exclude<ApiServerOptions[K], undefined>;
};

/** Applies the documented defaults. */
export function resolveOptions(o: ApiServerOptions): ResolvedOptions {
  return {
    bookmarkIntervalMs: o.bookmarkIntervalMs ?? 60_000,
    bookmarkBeforeTimeoutMs: o.bookmarkBeforeTimeoutMs ?? 2_000,
    timeoutSecondsScaleMs: o.timeoutSecondsScaleMs ?? 1_000,
    minRequestTimeoutSeconds: o.minRequestTimeoutSeconds ?? 1_800,
    tooLargeResourceVersionWaitMs: o.tooLargeResourceVersionWaitMs ?? 3_000,
    futureWatch: o.futureWatch ?? 'wait',
    maxHistory: o.maxHistory ?? 10_000,
    maxWatchBufferBytes: o.maxWatchBufferBytes ?? 16 * 1024 * 1024,
    deletionEvents: o.deletionEvents ?? 'graceful',
    implicitNamespaces: o.implicitNamespaces ?? false,
    personality: o.personality ?? 'cached',
    watchList: o.watchList ?? true,
    shardedListAndWatch: o.shardedListAndWatch ?? true,
  };
}
