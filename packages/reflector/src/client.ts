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
  /**
   * Sharded LIST/WATCH's `shardSelector` (KEP-5866), set by the reflector's `shard` option on every
   * request; a client passes it on as a query parameter.
   */
  readonly shardSelector?: string | undefined;
}

/** One LIST call (one page of a paginated LIST when `limit` is set). */
export interface ListRequest extends ListWatchScope {
  /** Aborting it abandons the request, also while it is still connecting. */
  readonly signal: AbortSignal;
  /** Page size; absent for an unpaged LIST. A client that ignores it answers the whole collection (no `continue`). */
  readonly limit?: number | undefined;
  /** The `continue` token of the previous page. */
  readonly continue?: string | undefined;
}

/** A listing (or one page of it): the raw items (validated by the reflector) and the cursor they are current at. */
export interface ListResult {
  readonly items: readonly unknown[];
  /** The list's `metadata.resourceVersion`: where the following WATCH starts (every page of one LIST carries the first page's). */
  readonly resourceVersion: string;
  /** Set when more pages remain. */
  readonly continue?: string | undefined;
  /** The list's `metadata.shardInfo` (the shard selector the server applied); absent when it applied none. */
  readonly shardInfo?: { readonly selector: string } | undefined;
}

/**
 * What {@link ListWatchClient.listPage} answers, tagged so a reader's page and an exact-path page
 * cannot be confused: `read` carries what the reader returned for the body's bytes; `exact` the
 * page read the way {@link ListWatchClient.list} reads it (raw items), because the reader returned
 * `undefined` for those same bytes.
 */
export type ListPageResult<P> =
  | { readonly kind: 'read'; readonly page: P; readonly shardInfo?: { readonly selector: string } | undefined }
  | { readonly kind: 'exact'; readonly list: ListResult };

/** One WATCH call. */
export interface WatchRequest extends ListWatchScope {
  /** The cursor to resume from; every event after it is delivered. */
  readonly resourceVersion: string;
  /** Server-side lifetime of this watch; always sent, so every reopen stays in the reflector. */
  readonly timeoutSeconds: number;
  /** Always `true`: bookmarks keep an idle cursor fresh for free (and a watch-list needs them for its end marker). */
  readonly allowWatchBookmarks: boolean;
  /**
   * Watch-list (streaming initial list): `true` asks for the current state as ADDED frames, ended by
   * a BOOKMARK annotated `k8s.io/initial-events-end: "true"`; sent with `resourceVersionMatch`.
   * Absent on a plain watch.
   */
  readonly sendInitialEvents?: true | undefined;
  /** `NotOlderThan` with `sendInitialEvents` (the only value kube-apiserver accepts there); absent otherwise. */
  readonly resourceVersionMatch?: 'NotOlderThan' | undefined;
  /** Aborting it tears the watch down. */
  readonly signal: AbortSignal;
}

/**
 * A LIST/WATCH endpoint for one kind. `list` and `watch` reject (or the watch iterable throws)
 * with kube-client's `KubeApiError` when the apiserver answers a non-2xx status, and with anything else
 * for a transport failure.
 */
export interface ListWatchClient {
  /**
   * True when `watch` passes `sendInitialEvents` / `resourceVersionMatch` on to the server, so the
   * reflector's default `initialList: 'auto'` may stream its listings (client-go's
   * `WatchListClient` check on the list-watcher). A client without it is only ever LISTed.
   */
  readonly supportsWatchList?: boolean | undefined;
  list(request: ListRequest): Promise<ListResult>;
  /**
   * Optional: {@link list}, handing the page's raw body bytes to `read` instead of decoding them.
   * `read` is called once, synchronously, with the whole 2xx body; what it returns is answered as
   * `{ kind: 'read', page }`. When it returns `undefined` (the reader cannot prove the body), the
   * same bytes are read exactly as `list` reads a page and answered as `{ kind: 'exact', list }`:
   * never a second request. The request, its errors, abort and deadline are `list`'s. The bytes are
   * valid only while `read` runs: the client may read a later page into the same memory (
   * {@link KubeApiClient} does), so `read` copies what it keeps. When present the reflector uses it for every LIST page, reading each with
   * k8s-types' `parseListPage` (see {@link KubeApiClient.listPage}).
   */
  listPage?<P>(request: ListRequest, read: (body: Uint8Array) => P | undefined): Promise<ListPageResult<P>>;
  /**
   * Yields one value per watch frame, in any of three forms: the frame's bytes as a `Uint8Array`
   * (its UTF-8 JSON line without the newline; the reflector reads it with k8s-types'
   * `parseWatchFrame`, and checks `maxFrameBytes` against its `byteLength`), the frame's JSON line as
   * a string (read with `parseWatchLine`), or an already decoded object (fakes). Ends when the
   * server closes the watch.
   */
  watch(request: WatchRequest): AsyncIterable<unknown>;
  /**
   * Optional: {@link watch}, yielding the frames of one socket read together, in order, as one
   * array (each item in any form `watch` may yield: bytes, a string or a decoded object; {@link KubeApiClient}
   * yields bytes). When present the reflector uses it instead of
   * `watch` and handles a read's frames without a promise hop between them; the semantics (errors,
   * end, abort through `request.signal`) are `watch`'s. The reflector reads every frame of a batch
   * before asking for the next, and keeps no frame's bytes, so a batch's memory may be reused then.
   */
  watchBatches?(request: WatchRequest): AsyncIterable<readonly unknown[]>;
}
