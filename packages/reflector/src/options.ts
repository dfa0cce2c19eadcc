import type { KubernetesObjectView, ObjectSchema } from '@reconcile-loop/k8s-types';
import { DEFAULT_SOURCE_RETRY } from '@reconcile-loop/object-store';
import { checkBackoffPolicy, OptionsError, type BackoffPolicy, type Clock, type Logger } from '@reconcile-loop/primitives';
import type { ListWatchClient, ListWatchScope } from './client.js';
import type { ShardOption } from './shard.js';
import { DEFAULT_MAX_FRAME_BYTES } from '@reconcile-loop/kube-client';

/** Default base server-side watch timeout; each watch adds up to 100% jitter (Go: 5 to 10 minutes). */
export const DEFAULT_WATCH_TIMEOUT_SECONDS = 300;
/** Default silence allowed beyond the server-side watch timeout before the watch is presumed dead. */
export const DEFAULT_IDLE_GRACE_MS = 30_000;
/**
 * Default LIST deadline, relists included: 90 s. The apiserver ends a LIST it is still serving at its
 * own `--request-timeout` (60 s by default), so a client waiting half as long again only ever cuts a
 * LIST whose server or connection is gone, and a listing of tens of MB still has half a minute of
 * transfer time. It stays below the loop's default sync timeout (2 min), so a first LIST that hangs
 * is cut, and named as the cause, before `start()` gives up.
 */
export const DEFAULT_LIST_TIMEOUT_MS = 90_000;
/**
 * Default LIST page size: 250, half client-go's pager default (500). Measured at 20,000 realistic
 * pods (BENCHMARKS.md, *Initial sync memory*): with 500 the pages a scavenge finds alive are
 * promoted and pile up in old space until the next full GC, so the sync peaked at 1.8× the store
 * (over the 1.5× target); with 250 (or 100) at 1.1–1.3×. At 5,000 pods both are 1.0×.
 */
export const DEFAULT_LIST_PAGE_SIZE = 250;
/**
 * Incomplete watch-list streams (ended, failed or past `listTimeoutMs` before the
 * `k8s.io/initial-events-end` bookmark) in a row after which a reflector in `initialList: 'auto'`
 * stops trying watch-list and LISTs for the rest of its life (kubernetes PR #140902 bounds the
 * same loop). Each incomplete stream already fell back to a LIST, so the cost is bounded.
 */
export const WATCH_LIST_GIVE_UP_AFTER = 3;

/**
 * How a listing (the first of a stream, and every relist) is fetched:
 * - `'watch-list'`: a streaming initial list (a WATCH with `sendInitialEvents=true`,
 *   `resourceVersionMatch=NotOlderThan`, `allowWatchBookmarks=true`), the objects gathered one at a
 *   time and swapped in as one replace at the `k8s.io/initial-events-end` bookmark, the watch then
 *   going on on the same stream. Falls back to a LIST for that listing when the server refuses it
 *   or the stream ends early; a refusal (a 422/400 naming the watch-list parameters: the server's WatchList feature off) or
 *   {@link WATCH_LIST_GIVE_UP_AFTER} incomplete streams in a row turn it off for this reflector.
 * - `'list'` (default): a paginated LIST, then a WATCH from its resourceVersion. Default because the
 *   paged LIST already keeps the initial sync's peak near the store's size (measured at 5,000 and
 *   20,000 pods, beside watch-list's: BENCHMARKS.md), its failures keep the reflector's LIST rules (a first LIST answered
 *   400/422 is permanent; RBAC `list`), and no server can hold it in an initial phase that never
 *   ends (the incident class of kubernetes PR #140902, which `'auto'` would meet up to three times
 *   per reflector).
 * - `'auto'`: `'watch-list'` when the client says it can send the parameters (`supportsWatchList`,
 *   true for `KubeApiClient`), else `'list'`: client-go 1.35's default (`WatchListClient` on).
 */
export type InitialListMode = 'auto' | 'watch-list' | 'list';

/** Options for {@link Reflector}. */
export interface ReflectorOptions<T extends KubernetesObjectView> extends ListWatchScope {
  /** Where LIST and WATCH go: a {@link KubeApiClient} or a fake. */
  client: ListWatchClient;
  /** Validates each LIST item and each `ADDED` / `MODIFIED` / `DELETED` payload (e.g. `podSchema`); an object failing it is quarantined. */
  schema: ObjectSchema<T>;
  /** Source name, used in logs. Default `reflector`. */
  name?: string | undefined;
  /** Base server-side watch timeout in seconds, jittered up to 2x. Default 300. */
  watchTimeoutSeconds?: number | undefined;
  /** Silence tolerated beyond the sent watch timeout before the watch is torn down. Default 30 000. */
  idleGraceMs?: number | undefined;
  /**
   * The retries of every failure inside the stream (a LIST, a WATCH, a heal relist): the delay
   * starts at `initialMs`, doubles (`factor`) per consecutive failure up to `maxMs`, which also
   * caps a server's `Retry-After`; only proof of health (a listing, a frame applied) resets it.
   * The same policy is the reflector's `retry`, which the stream driver reads for the rare stream
   * that ends, so one option sets a reflector's retries. Default object-store's `DEFAULT_SOURCE_RETRY`
   * (1 s doubling to 30 s).
   */
  retry?: BackoffPolicy | undefined;
  /**
   * Deadline of one listing (first listing and relists): a LIST (all its pages) or the initial
   * phase of a watch-list that has not completed is a counted failure. Default 90 000.
   */
  listTimeoutMs?: number | undefined;
  /** How listings are fetched: `'list'` (paginated), streaming (`'watch-list'`), or `'auto'`. Default `'list'`. See {@link InitialListMode}. */
  initialList?: InitialListMode | undefined;
  /** LIST page size (`limit`, following `continue` tokens); `0` for one unpaged LIST. Default 250. */
  listPageSize?: number | undefined;
  /**
   * Longest watch frame accepted, in bytes of the UTF-8 line (characters, for the ASCII JSON the
   * apiserver writes). Longer is a protocol error: the watch is torn down and the reflector relists.
   * Default 16 MiB.
   */
  maxFrameBytes?: number | undefined;
  /**
   * Every this many ms while a watch is open, a LIST of the reflector's scope with `limit=1` and no
   * `resourceVersion` (a consistent read of the current revision) measures how far the stream is
   * behind it: `health().listLag` (see `list-lag.ts` for what is compared and why it is valid). A
   * probe never changes the stream and a failed one is not a failure of the source. Default none
   * (no extra request); 60 000 costs one small LIST a minute per reflector.
   */
  listLagProbeIntervalMs?: number | undefined;
  /**
   * Hold only a shard of the kind (Kubernetes' sharded LIST/WATCH, KEP-5866): the objects whose
   * FNV-1a 64 hash of `metadata.uid` or `metadata.namespace` falls in one of `ranges`. Sent as
   * `shardSelector` on every LIST page and WATCH (watch-list included); a LIST whose
   * `metadata.shardInfo` does not echo it (gate `ShardedListAndWatch` off, a server before 1.36)
   * is filtered on the client with the same hash, warned once and shown in `health().shard`.
   * Change the ranges at run time with `Reflector.reshard`. Default none (the whole kind).
   */
  shard?: ShardOption | undefined;
  /** Time source for every timer. Default the system clock. */
  clock?: Clock | undefined;
  /** Where failures, quarantines and recoveries are reported. Default silent (failures still reach `health()`). */
  logger?: Logger | undefined;
  /** Jitter source in `[0, 1)`. Default `Math.random`. */
  random?: (() => number) | undefined;
}

/** The options after defaults and validation. */
export interface ResolvedOptions {
  readonly name: string;
  readonly watchTimeoutSeconds: number;
  readonly idleGraceMs: number;
  readonly retry: BackoffPolicy;
  readonly listTimeoutMs: number;
  readonly maxFrameBytes: number;
  readonly initialList: InitialListMode;
  readonly listPageSize: number;
  readonly listLagProbeIntervalMs: number | undefined;
}

function positive(name: string, value: number, allowZero: boolean): number {
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new OptionsError('Reflector', `${name} must be a finite number ${allowZero ? '>= 0' : '> 0'}, got ${String(value)}`);
  }
  return value;
}

/** Applies defaults; throws `OptionsError` for a value the reflector cannot run with. */
export function resolveOptions<T extends KubernetesObjectView>(options: ReflectorOptions<T>): ResolvedOptions {
  if (typeof options.client?.list !== 'function' || typeof options.client.watch !== 'function') {
    throw new OptionsError('Reflector', 'client must have list(request) and watch(request) methods');
  }
  if (typeof options.schema?.safeParse !== 'function') throw new OptionsError('Reflector', 'schema must be a zod schema');
  if ((options as { memoryBudgetBytes?: unknown }).memoryBudgetBytes !== undefined) {
    // Moved: the budget bounds a store, and a stream shared by several controllers feeds one store each.
    throw new OptionsError(
      'Reflector',
      "memoryBudgetBytes is a loop option now (beside `source`, or in a secondary source's entry), where the store it bounds is",
    );
  }
  const resolved: ResolvedOptions = {
    name: options.name ?? 'reflector',
    watchTimeoutSeconds: positive('watchTimeoutSeconds', options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS, false),
    idleGraceMs: positive('idleGraceMs', options.idleGraceMs ?? DEFAULT_IDLE_GRACE_MS, true),
    retry: options.retry ?? DEFAULT_SOURCE_RETRY,
    listTimeoutMs: positive('listTimeoutMs', options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS, false),
    maxFrameBytes: positive('maxFrameBytes', options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, false),
    initialList: options.initialList ?? 'list',
    listPageSize: positive('listPageSize', options.listPageSize ?? DEFAULT_LIST_PAGE_SIZE, true),
    listLagProbeIntervalMs:
      options.listLagProbeIntervalMs === undefined
        ? undefined
        : positive('listLagProbeIntervalMs', options.listLagProbeIntervalMs, false),
  };
  if (!['auto', 'watch-list', 'list'].includes(resolved.initialList)) {
    throw new OptionsError(
      'Reflector',
      `initialList must be 'auto', 'watch-list' or 'list', got ${String(resolved.initialList)}`,
    );
  }
  if (!Number.isSafeInteger(resolved.listPageSize))
    throw new OptionsError('Reflector', `listPageSize must be an integer, got ${String(resolved.listPageSize)}`);
  checkBackoffPolicy(resolved.retry, 'Reflector', 'retry');
  return resolved;
}
