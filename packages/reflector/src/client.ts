/**
 * The list/watch surface the reflector drives. The Kubernetes adapter ({@link KubeApiClient}) is one
 * implementation; tests use fakes, so all reflector logic runs without a cluster.
 */

/** Which objects a LIST or WATCH covers. */
export interface ListWatchScope {
  /** Omit for every namespace (or for a cluster-scoped kind). */
  readonly namespace?: string | undefined;
  /** e.g. `app=sglang-engine,miles.io/pool=rollout`. */
  readonly labelSelector?: string | undefined;
  /** e.g. `status.phase!=Succeeded`. */
  readonly fieldSelector?: string | undefined;
}

/** One LIST call. */
export interface ListRequest extends ListWatchScope {
  /** Aborting it abandons the request, also while it is still connecting. */
  readonly signal: AbortSignal;
}

/** A listing: the raw items (validated by the reflector) and the cursor they are current at. */
export interface ListResult {
  readonly items: readonly unknown[];
  /** The list's `metadata.resourceVersion`: where the following WATCH starts. */
  readonly resourceVersion: string;
}

/** One WATCH call. */
export interface WatchRequest extends ListWatchScope {
  /** The cursor to resume from; every event after it is delivered. */
  readonly resourceVersion: string;
  /** Server-side lifetime of this watch; always sent, so every reopen stays in the reflector. */
  readonly timeoutSeconds: number;
  /** Always `true`: bookmarks keep an idle cursor fresh for free. */
  readonly allowWatchBookmarks: boolean;
  /** Aborting it tears the watch down. */
  readonly signal: AbortSignal;
}

/**
 * A LIST/WATCH endpoint for one kind. `list` and `watch` reject (or the watch iterable throws)
 * with {@link ApiStatusError} when the apiserver answers a non-2xx status, and with anything else
 * for a transport failure.
 */
export interface ListWatchClient {
  list(request: ListRequest): Promise<ListResult>;
  /**
   * Yields one value per watch frame: the frame's JSON line as a string (the reflector parses it),
   * or an already decoded object. Ends when the server closes the watch.
   */
  watch(request: WatchRequest): AsyncIterable<unknown>;
  /**
   * Optional: {@link watch}, yielding the frames of one socket read together, in order, as one
   * array (each item what `watch` would yield). When present the reflector uses it instead of
   * `watch` and handles a read's frames without a promise hop between them; the semantics (errors,
   * end, abort through `request.signal`) are `watch`'s.
   */
  watchBatches?(request: WatchRequest): AsyncIterable<readonly unknown[]>;
}
