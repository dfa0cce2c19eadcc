/** The loop's options, their defaults, and their validation (every bad value is a typed error). */
import type { Indexers, KeyMap, Source } from '@reconcile-loop/object-store';
import {
  MAX_TIMER_MS,
  OptionsError,
  checkBackoffPolicy,
  type BackoffPolicy,
  type Clock,
  type Key,
  type Logger,
} from '@reconcile-loop/primitives';
import type { Fingerprint, RetryBudget } from '@reconcile-loop/retry-scheduler';
import type { MapCaches, Reconcile } from './context.js';
import type { ObjectFilter, UpdateFilter } from './filters.js';
import { validateLeaderGate, type LeaderGate } from './leadership.js';
import { DEFAULT_SHARD_RETRY_DELAY_MS, validateShardGate, type ShardGate } from './shard.js';
import type { OwnerSelector, SecondaryKeyMap } from './owners.js';
import type { ReconcileLoopObserver } from './observer.js';
import { DEFAULT_EXPECTATIONS_TTL_MS } from './expectations.js';

/** Go's default resync period: 10 hours. */
export const DEFAULT_RESYNC_PERIOD_MS = 10 * 60 * 60 * 1000;
/** controller-runtime's `CacheSyncTimeout` default: `start()` gives up after 2 minutes. */
export const DEFAULT_SYNC_TIMEOUT_MS = 2 * 60 * 1000;
/** controller-runtime's `GracefulShutdownTimeout` default: `stop()` waits at most 30 s for running work. */
export const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS = 30 * 1000;

/**
 * Whether `queue.priority` is on by default: on, because the `priority` benchmark (BENCHMARKS.md)
 * shows it never loses to FIFO — see ALIGNMENT.md's work-queue rows.
 */
export const DEFAULT_QUEUE_PRIORITY = true;

/** Upper bound of `concurrency`: more workers than this only add contention on one event loop. */
export const MAX_CONCURRENCY = 1024;

/**
 * A secondary source (controller-runtime's `Owns` / `Watches`): its own stream, store and sync; each
 * of its objects is mapped to parent keys either by owner reference or by a key map.
 */
export interface SecondarySource<U, P extends Key, C = unknown> {
  /** The stream of this kind (e.g. a pod reflector). Its `name` must differ from every other source's. */
  source: Source<U>;
  /**
   * Map by owner reference (`Owns`): the parent key is the owner's `namespace/name`, or its `name` with
   * `clusterScoped: true`. Exclusive with `keyMap`.
   */
  owner?: OwnerSelector | undefined;
  /**
   * Map by a function (`Watches` + `EnqueueRequestsFromMapFunc`): none, one or several parent keys
   * per object. Run at event time on the new and the old object of an update (the union is
   * enqueued) and on the last known object of a delete, with read access to every store (`caches`,
   * a {@link MapCaches}), so a map that reads another cache sees its changes. Exclusive with `owner`.
   */
  keyMap?: SecondaryKeyMap<U, P, C> | undefined;
  /** Skip updates of this kind that change nothing the reconcile reads; see `UpdateFilter`. */
  updateFilter?: UpdateFilter<U> | undefined;
  /** Skip creates of this kind that no reconcile needs (controller-runtime's `CreateFunc`); see `ObjectFilter`. The store still holds them. */
  createFilter?: ObjectFilter<U> | undefined;
  /** Skip deletes of this kind that no reconcile needs (controller-runtime's `DeleteFunc`), judged on the last known object; see `ObjectFilter`. */
  deleteFilter?: ObjectFilter<U> | undefined;
  /**
   * User-defined indexes of this source's store (client-go's `Indexers`, controller-runtime's
   * `IndexField`): index functions by name, kept on every event, queried with
   * `ctx.stores.<name>.byIndex(index, value)` and from key maps. Default: none.
   */
  indexers?: Indexers<U> | undefined;
  /** Coalesce this source's bursts per parent key, never delaying one longer than `maxWaitMs`. Default: none. */
  debounce?: Debounce | undefined;
  /** Estimated bytes this source's store may hold; see the top-level `memoryBudgetBytes`. Default: none. */
  memoryBudgetBytes?: number | undefined;
}

/**
 * Per-source debounce (kube-rs's `Config::debounce`, with the maximum wait it lacks): the events of
 * one parent key from this source are coalesced, and the key is queued once no event for it came
 * for `delayMs` — but never later than `maxWaitMs` after the first event of the burst, so a key whose
 * objects never stop changing is still reconciled. A listing (the first sync, a relist) is never
 * delayed. Default: none (every event queues its parents at once).
 */
interface Debounce {
  /** Quiet time that ends a burst, > 0. */
  delayMs: number;
  /** The longest a key's first event of a burst waits, ≥ `delayMs`. */
  maxWaitMs: number;
}

/** When `health()` calls the loop not ready or not alive. Every limit is in clock ms. */
interface HealthLimits {
  /** A source failing (consecutive failures, not healed) longer than this makes the loop not ready. Default 60 000. */
  sourceFailingMs?: number | undefined;
  /** A source failing longer than this makes the loop not alive (restart it). Default 600 000 (10 min). */
  sourceWedgedMs?: number | undefined;
  /**
   * A source that reports its health, says it is streaming, and delivered no frame (bookmarks
   * count) for longer than this makes the loop not alive. Sources without `health()` (in-process
   * registries) may be silent forever and are never judged by it. Default 900 000 (15 min, above a
   * watch's 10 min server timeout plus the reflector's idle grace).
   */
  sourceSilentMs?: number | undefined;
  /** A reconcile running longer than this makes the loop neither ready nor alive. Default 600 000 (10 min). */
  reconcileStuckMs?: number | undefined;
}

/** The `health` limits with every limit set. */
export type ResolvedHealthLimits = { readonly [K in keyof HealthLimits]-?: number };

/** Defaults of {@link HealthLimits}. */
export const DEFAULT_HEALTH_LIMITS: ResolvedHealthLimits = Object.freeze({
  sourceFailingMs: 60_000,
  sourceWedgedMs: 600_000,
  sourceSilentMs: 900_000,
  reconcileStuckMs: 600_000,
});

/**
 * Options for {@link ReconcileLoop}, grouped by concern as controller-runtime splits controller
 * options from manager options. The three every loop needs (`source`, `keyMap`, `reconcile`) and the
 * per-source ones (`secondary`, `updateFilter`, `createFilter`, `deleteFilter`) stay flat, so the 5-line example stays flat; the
 * cross-cutting dependencies (`clock`, `logger`, `observer`, `onError`) stay flat because every
 * group's work uses them. Every other option sits in the group of the concern it tunes. An unknown
 * field, including a pre-grouping name, is an `OptionsError` naming its path.
 */
export interface ReconcileLoopOptions<T, P extends Key, S = Record<never, never>> {
  /**
   * The primary source (controller-runtime's `For`): the parent kind, or in the pod-tracker form the
   * one kind whose objects are grouped by a key map. Its store is `loop.store` and `ctx.members`.
   */
  source: Source<T>;
  /**
   * Attributes each primary object to its parent key: `(_, key) => key` when the source lists the
   * parents themselves (a custom resource), or a label value for a pod tracker; an array when one
   * object concerns several parents. An object it maps to none (`undefined`, `[]`, a throw) is not
   * cached, and is evicted if it was (logged); see object-store's `KeyMap`.
   */
  keyMap: KeyMap<T, P>;
  /** Called for each dequeued parent key; never twice at once for the same key. */
  reconcile: Reconcile<T, P, S>;
  /**
   * Secondary sources by name (owned pods, watched config), each with its own store, stream and sync
   * — a relist of one never touches another's store. The loop is synced when every source is.
   * Default: none (one source).
   */
  secondary?: { [K in keyof S]: SecondarySource<S[K], P, MapCaches<T, P, S>> } | undefined;
  /** Skip updates of primary objects that change nothing the reconcile reads (e.g. `generationChanged`). Default: none. */
  updateFilter?: UpdateFilter<T> | undefined;
  /** Skip creates of primary objects (controller-runtime's `CreateFunc`); the store still holds them. Default: none. */
  createFilter?: ObjectFilter<T> | undefined;
  /** Skip deletes of primary objects, judged on the last known object (controller-runtime's `DeleteFunc`). Default: none. */
  deleteFilter?: ObjectFilter<T> | undefined;
  /**
   * User-defined indexes of the primary store (client-go's `Indexers`): index functions by name,
   * kept on every event, queried with `ctx.store.byIndex(index, value)`. Default: none.
   */
  indexers?: Indexers<T> | undefined;
  /** Coalesce the primary source's bursts per parent key, never delaying one longer than `maxWaitMs`. Default: none. */
  debounce?: Debounce | undefined;
  /**
   * Estimated heap bytes the primary source's store may hold (`health().sources[name].cache`, counted
   * by object-store's `CacheMeter`). At 80 % a warning is logged; past it, an object whose key the
   * store does not hold is not cached (a held object's newer version always is), `cache.refused`
   * counts them and the source turns not ready with `cache.reason`, instead of the process growing
   * until it is OOM-killed. A refused object enters once it fits and changes again, or at the next
   * listing. Default: none.
   */
  memoryBudgetBytes?: number | undefined;
  /** The controller: its name, its workers and the limits of one reconcile (controller-runtime's `controller.Options`). */
  controller?:
    | {
        /** The controller's name (controller-runtime's `controller` metrics label). Default: the primary source's name. */
        name?: string | undefined;
        /**
         * How many reconciles may run at once (controller-runtime's `MaxConcurrentReconciles`); never two
         * for the same parent key. Default 1 (a single worker).
         */
        concurrency?: number | undefined;
        /**
         * Abort a reconcile that runs longer (its signal aborts with `ReconcileTimeoutError`) and count it
         * as a failure, so one hung parent key cannot stall the loop. Default: no limit.
         */
        reconcileTimeoutMs?: number | undefined;
        /**
         * How long recorded expectations (`ctx.expect(...)`) may stay unobserved before they expire and
         * the parent is reconciled anyway, with a warning. Default {@link DEFAULT_EXPECTATIONS_TTL_MS}
         * (5 min, kube-controller-manager's `ExpectationsTimeout`).
         */
        expectationsTtlMs?: number | undefined;
      }
    | undefined;
  /** The work queue's order (controller-runtime's `UsePriorityQueue`). */
  queue?:
    | {
        /**
         * Two priorities with aging: parents queued by a listing (the first sync, a relist), a resync or
         * a new leadership term wait behind those queued by a change, a retry, a requeue or
         * `enqueue()` — so a change made during a cold start's backlog is reconciled next, not after
         * the backlog. Default {@link DEFAULT_QUEUE_PRIORITY}. `false` is one FIFO.
         */
        priority?: boolean | undefined;
        /**
         * With `priority`: once the oldest low-priority key has waited this long, the two priorities take
         * turns, so no key starves (see the work-queue README's bound). Default 10 000 ms.
         */
        agingMs?: number | undefined;
      }
    | undefined;
  /** Every source's sync and resync (controller-runtime's `CacheSyncTimeout` and the cache's `SyncPeriod`). */
  sources?:
    | {
        /**
         * `start()` rejects with `SyncTimeoutError` (its `cause` the source's last error) when the first
         * replace takes longer. Default {@link DEFAULT_SYNC_TIMEOUT_MS} (2 min, controller-runtime's
         * `CacheSyncTimeout`); `Infinity` waits forever.
         */
        syncTimeoutMs?: number | undefined;
        /**
         * Re-enqueue every parent that still has members this often (level-triggered backstop).
         * Default {@link DEFAULT_RESYNC_PERIOD_MS} (10 h), no jitter; `0` disables it.
         */
        resyncPeriodMs?: number | undefined;
      }
    | undefined;
  /** Per-parent-key exponential backoff after a failed reconcile, or an opt-in finite retry budget. */
  retry?:
    | {
        /**
         * The backoff of a key's consecutive failed reconciles (primitives' `BackoffPolicy`). Default: the
         * retry scheduler's `DEFAULT_RETRY_BACKOFF` (100 ms doubling to 1000 s). Excludes `budget`.
         */
        backoff?: BackoffPolicy | undefined;
        /**
         * Opt-in retry budget with dead-letter: the delays of the retries after the 1st, 2nd, …
         * failure, e.g. `[0, 1000, 5000, 30000]`. The failure after the last step parks the parent key:
         * no backoff, resync, requeue or event runs it again until its fingerprint (see `fingerprint`)
         * changes or `loop.release(key)` is called. Excludes `backoff`.
         */
        budget?: RetryBudget | undefined;
        /**
         * The fingerprint a parked key is parked at (only used with `budget`): a key is released when
         * it changes. Gets the parent object (`ctx.parent`, undefined once deleted) and the parent key.
         * Default: the parent's `metadata.uid` with its `metadata.generation`, or for
         * a kind without `generation` (ConfigMap, Secret, Service) with a hash of every top-level field but
         * `metadata` and `status` — a spec or data change and a delete + re-create release it, a status,
         * label, annotation or member change does not; no parent (deleted) is `undefined`, so a deletion
         * always reaches reconcile. Must return a primitive, `null` or `undefined`.
         */
        fingerprint?: ((parent: T | undefined, parentKey: P) => Fingerprint) | undefined;
      }
    | undefined;
  /** How `stop()` ends the loop (controller-runtime's manager `GracefulShutdownTimeout`). */
  shutdown?:
    | {
        /**
         * How long `stop()` waits for running reconciles and the source to end before it resolves anyway
         * and reports what it abandoned. Default {@link DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS} (30 s,
         * controller-runtime's `GracefulShutdownTimeout`); `Infinity` waits forever.
         */
        timeoutMs?: number | undefined;
      }
    | undefined;
  /** Warm standby (controller-runtime's manager `LeaderElection`). Default: none (the loop always leads). */
  leadership?:
    | {
        /**
         * Sources open and sync on every replica (`start()` resolves once synced, leader or not),
         * reconciles run only inside a leadership term of this gate — e.g. a `LeaderElector` of
         * `@reconcile-loop/leader-election`. `isLeader()` is checked right before each reconcile; the end
         * of a term aborts in-flight reconciles; every new term re-drives every parent once.
         */
        gate: LeaderGate;
      }
    | undefined;
  /**
   * Scale out: this replica reconciles only the parents whose hash its shard gate admits (e.g. a
   * `ShardMember` of `@reconcile-loop/sharding`). Default: none (every parent is this replica's).
   * Composes with `leadership` (checked first): a sharded ring usually replaces it.
   */
  shard?:
    | {
        /**
         * `enter(shardHash(<parent uid>))` is called right before each reconcile, after the
         * leadership check, and its release when the call settles; a hash not admitted is asked again
         * after `retryDelayMs` while it is in `gate.ranges`, dropped otherwise. In-flight reconciles
         * whose hash `admits` stops accepting (`onRangesChanged`, `onLost`) are aborted.
         */
        gate: ShardGate;
        /**
         * What a parent's hash is of, and how the sources follow the ranges (a relist on a gain, a
         * release on a loss, every object kept only when its hash is in the ranges):
         * - `'uid'` (default): the parent's `metadata.uid` (a gone parent: the uid last seen under its
         *   key). The primary source is resharded on the server when it has `reshard(ranges)` (a
         *   reflector built with `shard: { field: 'uid', … }`); an owned secondary source is filtered
         *   here by its controller owner reference's uid: every replica still receives every owned
         *   object over the wire, and stores only its share.
         * - `'namespace'`: the parent's namespace; every source (primary and secondary) is filtered by
         *   its objects' namespace and resharded on the server when it can: least bytes and memory,
         *   shares as even as the namespaces are.
         * A secondary source mapped by `keyMap` is never filtered (its objects need not live with one parent).
         */
        field?: 'uid' | 'namespace' | undefined;
        /**
         * After a refusal of a hash in this replica's ranges (a handover still running): ask again
         * after this long. Default {@link DEFAULT_SHARD_RETRY_DELAY_MS} (1 s, half a `ShardMember`
         * retry period: a handover takes 2–3 of them).
         */
        retryDelayMs?: number | undefined;
      }
    | undefined;
  /** When `health()` reports the loop not ready / not alive. */
  health?: HealthLimits | undefined;
  /**
   * Called (once) when a failure ends a running loop: a source failed permanently after `start()`
   * resolved. The loop has begun stopping itself; `health().error` holds the same error. A failure
   * during `start()` rejects `start()` instead. A throw from `onError` is logged and ignored.
   */
  onError?: ((error: unknown) => void) | undefined;
  /** Metrics hooks (e.g. `controllerMetrics()` of `@reconcile-loop/metrics`); see `ReconcileLoopObserver`. Default: none. */
  observer?: ReconcileLoopObserver<P> | undefined;
  /** Time source for every timer. Default `systemClock` (timers are `unref`'d). */
  clock?: Clock | undefined;
  /** Default: silent. Every failure that ends the loop also reaches the caller (`start()`, `onError`, `health()`). */
  logger?: Logger | undefined;
}

/** Where each field of the flat options before the grouping went, for the error a stale field gets. */
const MOVED: Readonly<Record<string, string>> = {
  name: 'controller.name',
  concurrency: 'controller.concurrency',
  reconcileTimeoutMs: 'controller.reconcileTimeoutMs',
  expectationsTtlMs: 'controller.expectationsTtlMs',
  syncTimeoutMs: 'sources.syncTimeoutMs',
  resyncPeriodMs: 'sources.resyncPeriodMs',
  fingerprint: 'retry.fingerprint',
  gracefulShutdownTimeoutMs: 'shutdown.timeoutMs',
  leaderGate: 'leadership.gate',
};

const TOP_LEVEL = [
  'source',
  'keyMap',
  'reconcile',
  'secondary',
  'updateFilter',
  'createFilter',
  'deleteFilter',
  'indexers',
  'debounce',
  'memoryBudgetBytes',
  'controller',
  'queue',
  'sources',
  'retry',
  'shutdown',
  'leadership',
  'shard',
  'health',
  'onError',
  'observer',
  'clock',
  'logger',
] as const;

/**
 * A group is absent, or a plain object holding only its known fields: a typo or a stale name would
 * otherwise be ignored silently and the default used.
 * @returns the group, `{}` when absent.
 */
function group(
  path: string,
  value: unknown,
  known: readonly string[],
  moved: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new OptionsError('ReconcileLoop', `${path} must be an object, got ${value === null ? 'null' : typeof value}`);
  for (const field of Object.keys(value)) {
    if (known.includes(field)) continue;
    const where = path === '' ? field : `${path}.${field}`;
    const to = moved[field];
    throw new OptionsError(
      'ReconcileLoop',
      to === undefined
        ? `unknown option ${where} (known: ${known.join(', ')})`
        : `unknown option ${where}: it is ${to} since the options were grouped by concern`,
    );
  }
  return value as Record<string, unknown>;
}

/** The validated numbers. */
export interface LoopSettings {
  readonly resyncPeriodMs: number;
  readonly syncTimeoutMs: number;
  readonly reconcileTimeoutMs: number | undefined;
  readonly expectationsTtlMs: number;
  readonly gracefulShutdownTimeoutMs: number;
  readonly concurrency: number;
  /** `shard.retryDelayMs` (its default without `shard`). */
  readonly shardRetryDelayMs: number;
  readonly health: ResolvedHealthLimits;
  readonly queue: { readonly priority: boolean; readonly agingMs: number | undefined };
}

/** @throws {OptionsError} naming the field path of the first unusable or unknown option. */
export function validateLoopOptions<T, P extends Key, S>(options: ReconcileLoopOptions<T, P, S>): LoopSettings {
  if (options === null || typeof options !== 'object') throw new OptionsError('ReconcileLoop', 'options must be an object');
  group('', options, TOP_LEVEL, MOVED);
  const { source, keyMap, reconcile } = options;
  if (typeof source?.open !== 'function') throw new OptionsError('ReconcileLoop', 'source must have an open(signal) method');
  if (typeof keyMap !== 'function') throw new OptionsError('ReconcileLoop', 'keyMap must be a function');
  if (typeof reconcile !== 'function') throw new OptionsError('ReconcileLoop', 'reconcile must be a function');
  if (options.onError !== undefined && typeof options.onError !== 'function')
    throw new OptionsError('ReconcileLoop', 'onError must be a function');
  if (options.observer !== undefined && (options.observer === null || typeof options.observer !== 'object'))
    throw new OptionsError('ReconcileLoop', 'observer must be an object');
  for (const filter of ['updateFilter', 'createFilter', 'deleteFilter'] as const) {
    if (options[filter] !== undefined && typeof options[filter] !== 'function')
      throw new OptionsError('ReconcileLoop', `${filter} must be a function`);
  }
  validateIndexers('indexers', options.indexers);
  validateSecondaries(source, options.secondary as Record<string, SecondarySource<unknown, P>> | undefined);
  validateDebounce('debounce', options.debounce);
  validateBudget('memoryBudgetBytes', options.memoryBudgetBytes);
  const queue = group('queue', options.queue, ['priority', 'agingMs']);
  if (queue.priority !== undefined && typeof queue.priority !== 'boolean')
    throw new OptionsError('ReconcileLoop', 'queue.priority must be a boolean');

  const controller = group('controller', options.controller, ['name', 'concurrency', 'reconcileTimeoutMs', 'expectationsTtlMs']);
  if (controller.name !== undefined && (typeof controller.name !== 'string' || controller.name === ''))
    throw new OptionsError('ReconcileLoop', 'controller.name must be a non-empty string');
  const concurrency = controller.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || (concurrency as number) < 1 || (concurrency as number) > MAX_CONCURRENCY) {
    throw new OptionsError(
      'ReconcileLoop',
      `controller.concurrency must be an integer from 1 to ${MAX_CONCURRENCY}, got ${String(controller.concurrency)}`,
    );
  }
  const sources = group('sources', options.sources, ['syncTimeoutMs', 'resyncPeriodMs']);
  const shutdown = group('shutdown', options.shutdown, ['timeoutMs']);
  const leadership = group('leadership', options.leadership, ['gate']);
  if (options.leadership !== undefined) {
    if (leadership.gate === undefined) throw new OptionsError('ReconcileLoop', 'leadership.gate is required with leadership');
    validateLeaderGate(leadership.gate as LeaderGate);
  }

  const shard = group('shard', options.shard, ['gate', 'field', 'retryDelayMs']);
  if (options.shard !== undefined) {
    if (shard.gate === undefined) throw new OptionsError('ReconcileLoop', 'shard.gate is required with shard');
    validateShardGate(shard.gate);
    if (shard.field !== undefined && shard.field !== 'uid' && shard.field !== 'namespace')
      throw new OptionsError('ReconcileLoop', `shard.field must be "uid" or "namespace", got ${JSON.stringify(shard.field)}`);
  }

  const retry = group('retry', options.retry, ['backoff', 'budget', 'fingerprint']);
  const { backoff, budget, fingerprint } = retry;
  if (fingerprint !== undefined && typeof fingerprint !== 'function')
    throw new OptionsError('ReconcileLoop', 'retry.fingerprint must be a function');
  if (budget !== undefined) {
    if (backoff !== undefined) {
      throw new OptionsError('ReconcileLoop', 'retry.budget replaces retry.backoff; give one or the other');
    }
    const delays: unknown = (budget as RetryBudget | null)?.delaysMs;
    if (!Array.isArray(delays)) throw new OptionsError('ReconcileLoop', 'retry.budget.delaysMs must be an array of delays in ms');
    for (const [i, d] of (delays as unknown[]).entries()) duration(`retry.budget.delaysMs[${i}]`, d, true);
  }
  if (backoff !== undefined) {
    if (backoff === null || typeof backoff !== 'object')
      throw new OptionsError('ReconcileLoop', 'retry.backoff must be a BackoffPolicy');
    checkBackoffPolicy(backoff as BackoffPolicy, 'ReconcileLoop', 'retry.backoff');
  }
  const limits = group('health', options.health, Object.keys(DEFAULT_HEALTH_LIMITS));
  const health: { -readonly [K in keyof ResolvedHealthLimits]: number } = { ...DEFAULT_HEALTH_LIMITS };
  for (const name of Object.keys(DEFAULT_HEALTH_LIMITS) as Array<keyof HealthLimits>) {
    if (limits[name] !== undefined) health[name] = duration(`health.${name}`, limits[name], false, true);
  }
  return {
    resyncPeriodMs: duration('sources.resyncPeriodMs', sources.resyncPeriodMs ?? DEFAULT_RESYNC_PERIOD_MS, true),
    syncTimeoutMs: duration('sources.syncTimeoutMs', sources.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS, false, true),
    reconcileTimeoutMs:
      controller.reconcileTimeoutMs === undefined
        ? undefined
        : duration('controller.reconcileTimeoutMs', controller.reconcileTimeoutMs, false),
    expectationsTtlMs: duration(
      'controller.expectationsTtlMs',
      controller.expectationsTtlMs ?? DEFAULT_EXPECTATIONS_TTL_MS,
      false,
    ),
    gracefulShutdownTimeoutMs: duration(
      'shutdown.timeoutMs',
      shutdown.timeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
      true,
      true,
    ),
    health: Object.freeze(health),
    concurrency: concurrency as number,
    shardRetryDelayMs:
      shard.retryDelayMs === undefined ? DEFAULT_SHARD_RETRY_DELAY_MS : duration('shard.retryDelayMs', shard.retryDelayMs, false),
    queue: {
      priority: (queue.priority as boolean | undefined) ?? DEFAULT_QUEUE_PRIORITY,
      agingMs: queue.agingMs === undefined ? undefined : duration('queue.agingMs', queue.agingMs, true),
    },
  };
}

/** A memory budget is a finite number of bytes above 0, or absent. */
function validateBudget(path: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw new OptionsError('ReconcileLoop', `${path} must be a finite number > 0, got ${String(value)}`);
}

/** Every source needs an `open`, a distinct name (health and logs are keyed by it) and exactly one mapping. */
function validateSecondaries<P extends Key>(
  primary: { name?: unknown },
  secondary: Record<string, SecondarySource<unknown, P>> | undefined,
): void {
  if (secondary === undefined) return;
  if (secondary === null || typeof secondary !== 'object')
    throw new OptionsError('ReconcileLoop', 'secondary must be an object of named sources');
  const names = new Set<unknown>([primary.name]);
  for (const [name, spec] of Object.entries(secondary)) {
    const where = `secondary.${name}`;
    group(where, spec, [
      ...['source', 'owner', 'keyMap', 'updateFilter', 'createFilter', 'deleteFilter', 'indexers', 'debounce'],
      'memoryBudgetBytes',
    ]);
    validateDebounce(`${where}.debounce`, spec.debounce);
    validateBudget(`${where}.memoryBudgetBytes`, spec.memoryBudgetBytes);
    if (typeof spec?.source?.open !== 'function')
      throw new OptionsError('ReconcileLoop', `${where}.source must have an open(signal) method`);
    if (names.has(spec.source.name)) {
      throw new OptionsError(
        'ReconcileLoop',
        `${where}.source is named "${String(spec.source.name)}" like another source; health and logs need distinct names`,
      );
    }
    names.add(spec.source.name);
    if ((spec.owner === undefined) === (spec.keyMap === undefined))
      throw new OptionsError('ReconcileLoop', `${where} needs exactly one of owner and keyMap`);
    if (spec.keyMap !== undefined && typeof spec.keyMap !== 'function')
      throw new OptionsError('ReconcileLoop', `${where}.keyMap must be a function`);
    if (spec.owner !== undefined && (typeof spec.owner?.kind !== 'string' || spec.owner.kind === '')) {
      throw new OptionsError('ReconcileLoop', `${where}.owner.kind must be a non-empty string`);
    }
    if (spec.owner?.clusterScoped !== undefined && typeof spec.owner.clusterScoped !== 'boolean') {
      throw new OptionsError('ReconcileLoop', `${where}.owner.clusterScoped must be a boolean when given`);
    }
    for (const filter of ['updateFilter', 'createFilter', 'deleteFilter'] as const) {
      if (spec[filter] !== undefined && typeof spec[filter] !== 'function')
        throw new OptionsError('ReconcileLoop', `${where}.${filter} must be a function`);
    }
    validateIndexers(`${where}.indexers`, spec.indexers);
  }
}

/** An object of index functions by name (the store checks it too, but cannot name the option's path). */
function validateIndexers(path: string, value: unknown): void {
  if (value === undefined) return;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new OptionsError('ReconcileLoop', `${path} must be an object of index functions by name`);
  for (const [name, func] of Object.entries(value)) {
    if (typeof func !== 'function') throw new OptionsError('ReconcileLoop', `${path}.${name} must be a function`);
  }
}

/** `delayMs` > 0 and `maxWaitMs` ≥ `delayMs`, both timer-sized; nothing else in the group. */
function validateDebounce(path: string, value: unknown): void {
  if (value === undefined) return;
  const { delayMs, maxWaitMs } = group(path, value, ['delayMs', 'maxWaitMs']);
  const delay = duration(`${path}.delayMs`, delayMs, false);
  const maxWait = duration(`${path}.maxWaitMs`, maxWaitMs, false);
  if (maxWait < delay)
    throw new OptionsError('ReconcileLoop', `${path}.maxWaitMs (${maxWait}) must be >= ${path}.delayMs (${delay})`);
}

/** A delay in ms: finite, at most primitives' `MAX_TIMER_MS`; `Infinity` only where it means "no limit". */
export function duration(name: string, value: unknown, zeroAllowed: boolean, infinityAllowed = false): number {
  if (infinityAllowed && value === Infinity) return Infinity;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (!zeroAllowed && value === 0) ||
    value > MAX_TIMER_MS
  ) {
    throw new OptionsError(
      'ReconcileLoop',
      `${name} must be a number of milliseconds ${zeroAllowed ? '>= 0' : '> 0'} and <= ${MAX_TIMER_MS}` +
        `${infinityAllowed ? ' (or Infinity)' : ''}, got ${String(value)}`,
    );
  }
  return value;
}
