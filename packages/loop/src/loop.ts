import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ObjectStore,
  silentLogger,
  systemClock,
  type Clock,
  type KeyMap,
  type Logger,
  type ObjectKey,
  type ObjectStoreReader,
  type ParentKey,
  type Source,
} from '@reconcile-loop/object-store';
import { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import { DEFAULT_SOURCE_RETRY_DELAY_MS, StreamDriver } from '@reconcile-loop/stream-driver';
import { WorkQueue } from '@reconcile-loop/work-queue';
import {
  LoopAlreadyStartedError,
  LoopStoppedError,
  ReconcileLoopOptionsError,
  ReconcileTimeoutError,
  StopInsideReconcileError,
  SyncTimeoutError,
} from './errors.js';

/** Go's default resync period: 10 hours. */
export const DEFAULT_RESYNC_PERIOD_MS = 10 * 60 * 60 * 1000;

/** Node clamps a longer timer to 1 ms, which would turn a long period into a busy loop. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What one reconcile call gets besides its parent key. */
export interface ReconcileContext<T, P extends ParentKey> {
  /** The parent key being reconciled. */
  readonly parentKey: P;
  /**
   * Snapshot of the parent's members, taken from the synced store just before the call; it does not
   * change while the reconcile runs. Empty when the parent lost its last member.
   */
  readonly members: ReadonlyMap<ObjectKey, T>;
  /** Read-only view of the whole store (current state, not a snapshot). */
  readonly store: ObjectStoreReader<T, P>;
  /**
   * Aborts when the loop stops (reason {@link LoopStoppedError}) or the reconcile exceeds
   * `reconcileTimeoutMs` (reason {@link ReconcileTimeoutError}). Pass it to every I/O call.
   */
  readonly signal: AbortSignal;
}

/**
 * Brings the world in line with one parent's members. Must be idempotent: it can be abandoned by
 * `stop()` and re-run by a retry or a resync. Throwing (or rejecting) schedules a retry with backoff;
 * returning forgets the parent's backoff.
 */
export type Reconcile<T, P extends ParentKey> = (parentKey: P, context: ReconcileContext<T, P>) => void | Promise<void>;

/** Per-parent-key exponential backoff after a failed reconcile. */
export interface RetryOptions {
  /** Delay after the first failure; doubles per further failure. Default: the retry scheduler's (100 ms). */
  baseDelayMs?: number;
  /** Cap on the delay. Default: the retry scheduler's (1000 s). */
  maxDelayMs?: number;
}

/** Options for {@link ReconcileLoop}. */
export interface ReconcileLoopOptions<T, P extends ParentKey> {
  /**
   * The one source this loop tracks. One per loop because a replace is the whole world of one
   * source: a second source's replace would delete every object of the first from the store.
   */
  source: Source<T>;
  /** Attributes each object to its parent key (e.g. from a label); see `KeyMap`. */
  keyMap: KeyMap<T, P>;
  /** Called for each dequeued parent key, one at a time. */
  reconcile: Reconcile<T, P>;
  /**
   * Re-enqueue every parent that still has members this often (level-triggered backstop).
   * Default {@link DEFAULT_RESYNC_PERIOD_MS} (10 h), no jitter; `0` disables it.
   */
  resyncPeriodMs?: number;
  /** Backoff for failed reconciles. */
  retry?: RetryOptions;
  /** Outer retry: wait before reopening a source stream that ended or failed. Default 1000 ms. */
  sourceRetryDelayMs?: number;
  /** `start()` rejects with {@link SyncTimeoutError} when the first replace takes longer. Default: wait forever. */
  syncTimeoutMs?: number;
  /**
   * Abort a reconcile that runs longer (its signal aborts with {@link ReconcileTimeoutError}) and
   * count it as a failure, so one hung parent key cannot stall the loop. Default: no limit.
   */
  reconcileTimeoutMs?: number;
  /** Time source for every timer. Default `systemClock` (timers are `unref`'d). */
  clock?: Clock;
  /** Default: silent. */
  logger?: Logger;
}

/** Lifecycle: `idle → starting → running → stopping → stopped`; a loop runs once. */
export type ReconcileLoopState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Marks the async context of one reconcile call, so `stop()` can tell it is being called from one. */
interface ReconcileFrame {
  /** True while the worker is still waiting for this call. */
  active: boolean;
}

const RESOLVED: Promise<void> = Promise.resolve();
const noop = (): void => {};

/**
 * The controller: keeps a store synced from one source, and reconciles each affected parent key on
 * a single worker, retrying failures with per-key backoff and re-driving every parent with members
 * once per resync period.
 *
 * ```ts
 * await using loop = new ReconcileLoop({ source, keyMap, reconcile });
 * await loop.start(); // resolves once the store holds the first listing
 * ```
 */
export class ReconcileLoop<T, P extends ParentKey> implements AsyncDisposable {
  readonly #source: Source<T>;
  readonly #reconcile: Reconcile<T, P>;
  readonly #resyncPeriodMs: number;
  readonly #syncTimeoutMs: number | undefined;
  readonly #reconcileTimeoutMs: number | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #store: ObjectStore<T, P>;
  readonly #reader: ObjectStoreReader<T, P>;
  readonly #queue = new WorkQueue<P>();
  readonly #scheduler: RetryScheduler<P>;
  readonly #driver: StreamDriver<T, P>;
  /** Aborted by `stop()`: ends the driver, a waiting `get`, the sync wait and the in-flight reconcile. */
  readonly #controller = new AbortController();
  readonly #frames = new AsyncLocalStorage<ReconcileFrame>();
  #state: ReconcileLoopState = 'idle';
  #driverRun: Promise<void> | undefined;
  #worker: Promise<void> | undefined;
  #resyncHandle: unknown;
  #teardown: Promise<void> | undefined;

  /** @throws {ReconcileLoopOptionsError} for unusable options; nothing is started. */
  constructor(options: ReconcileLoopOptions<T, P>) {
    const { source, keyMap, reconcile } = options ?? ({} as Partial<ReconcileLoopOptions<T, P>>);
    if (typeof source?.open !== 'function') throw new ReconcileLoopOptionsError('source must have an open(signal) method');
    if (typeof keyMap !== 'function') throw new ReconcileLoopOptionsError('keyMap must be a function');
    if (typeof reconcile !== 'function') throw new ReconcileLoopOptionsError('reconcile must be a function');
    const resyncPeriodMs = duration('resyncPeriodMs', options.resyncPeriodMs ?? DEFAULT_RESYNC_PERIOD_MS, true);
    const sourceRetryDelayMs = duration('sourceRetryDelayMs', options.sourceRetryDelayMs ?? DEFAULT_SOURCE_RETRY_DELAY_MS, true);
    this.#syncTimeoutMs = optionalDuration('syncTimeoutMs', options.syncTimeoutMs);
    this.#reconcileTimeoutMs = optionalDuration('reconcileTimeoutMs', options.reconcileTimeoutMs);
    const { baseDelayMs, maxDelayMs } = options.retry ?? {};
    if (baseDelayMs !== undefined) duration('retry.baseDelayMs', baseDelayMs, true);
    if (maxDelayMs !== undefined && (typeof maxDelayMs !== 'number' || Number.isNaN(maxDelayMs) || maxDelayMs < (baseDelayMs ?? 0))) {
      throw new ReconcileLoopOptionsError(`retry.maxDelayMs must be a number >= retry.baseDelayMs, got ${String(maxDelayMs)}`);
    }

    this.#source = source;
    this.#reconcile = reconcile;
    this.#resyncPeriodMs = resyncPeriodMs;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#store = new ObjectStore<T, P>({ keyMap, logger: this.#logger });
    this.#reader = readOnlyView(this.#store);
    this.#scheduler = new RetryScheduler<P>({
      onRetry: (key) => this.#queue.add(key),
      onError: (error, key) => this.#logger.error({ err: error, parentKey: String(key) }, 're-enqueueing a retry failed'),
      clock: this.#clock,
      ...(baseDelayMs !== undefined && { baseDelayMs }),
      ...(maxDelayMs !== undefined && { maxDelayMs }),
    });
    this.#driver = new StreamDriver<T, P>({
      source,
      store: this.#store,
      // Called after the store holds the event (cache before notify).
      onAffected: (parents) => {
        for (const parent of parents) this.#queue.add(parent);
      },
      sourceRetryDelayMs,
      clock: this.#clock,
      logger: this.#logger,
    });
  }

  /** Read-only view of the cache. Valid from construction; filled once the source syncs. */
  get store(): ObjectStoreReader<T, P> {
    return this.#reader;
  }

  /** Where the loop is in its one-way lifecycle. */
  get state(): ReconcileLoopState {
    return this.#state;
  }

  /** True once the store holds the source's first replace. */
  get synced(): boolean {
    return this.#driver.synced;
  }

  /**
   * Starts the source stream, waits until the store holds the first listing (sync), then starts
   * the worker and the resync timer. Parent keys affected by the listing are already queued, so
   * every parent is reconciled once after start.
   *
   * A start that fails leaves nothing running: no stream, timer or pending promise, and a later
   * `stop()` returns quietly, so the caller's `catch`/`finally` unwinds carrying this error.
   *
   * @throws {LoopAlreadyStartedError} on a second call (a loop runs once).
   * @throws {SyncTimeoutError} when `syncTimeoutMs` passes before the first replace.
   * @throws {LoopStoppedError} when `stop()` is called before the start completes.
   */
  async start(): Promise<void> {
    if (this.#state !== 'idle') {
      throw new LoopAlreadyStartedError(`start() called on a ${this.#state} loop; a ReconcileLoop runs once, create a new one`);
    }
    this.#state = 'starting';
    const signal = this.#controller.signal;
    this.#logger.debug({ source: this.#source.name }, 'reconcile loop starting');
    this.#driverRun = this.#driver.run(signal).catch((error: unknown) => {
      this.#logger.error({ source: this.#source.name, err: error }, 'stream driver failed');
    });
    try {
      await this.#waitForSync(signal);
      // stop() may land between the sync and this continuation.
      if (signal.aborted) throw signal.reason;
    } catch (error) {
      if (error instanceof SyncTimeoutError) this.#logger.error({ source: this.#source.name, err: error }, error.message);
      await this.#teardownOnce();
      throw error;
    }
    this.#worker = this.#work(signal);
    this.#armResync();
    this.#state = 'running';
    this.#logger.info({ source: this.#source.name, parents: this.#queue.size }, 'reconcile loop started');
  }

  /**
   * Cancels everything, then waits for it to end: aborts the in-flight reconcile's signal, stops the
   * work queue (queued keys are dropped: no drain), shuts down the retry scheduler and the resync
   * timer, and closes the source stream. Idempotent; concurrent calls share one teardown.
   *
   * Before `start()` it retires the loop without starting anything; after a failed `start()` it
   * returns quietly. Inside a running reconcile it begins the stop but rejects at once with a
   * pre-handled {@link StopInsideReconcileError} instead of deadlocking: write `void loop.stop()`.
   */
  stop(): Promise<void> {
    const frame = this.#frames.getStore();
    const stopping = this.#beginStop();
    if (frame?.active) {
      const refused = Promise.reject(new StopInsideReconcileError());
      refused.catch(noop);
      return refused;
    }
    return stopping;
  }

  /** `await using loop = new ReconcileLoop(...)`: the scope's end stops the loop (see {@link ReconcileLoop.stop}). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Queues `parentKey` for a reconcile (e.g. a manual trigger); a key already queued keeps its place.
   * Accepted before `start()` (reconciled after sync); ignored once the loop is stopping.
   *
   * @throws {WorkQueueKeyError} (code `WORK_QUEUE_INVALID_KEY`) for a key that is not a primitive.
   */
  enqueue(parentKey: P): void {
    this.#queue.add(parentKey);
  }

  #beginStop(): Promise<void> {
    switch (this.#state) {
      case 'idle':
        // Nothing runs yet; retire the loop so a later start() cannot leak past its owner's scope.
        this.#state = 'stopped';
        this.#controller.abort(new LoopStoppedError('the reconcile loop was stopped before it started'));
        this.#queue.stop();
        this.#scheduler.shutdown();
        return RESOLVED;
      case 'stopped':
        return this.#teardown ?? RESOLVED;
      default:
        return this.#teardownOnce();
    }
  }

  #teardownOnce(): Promise<void> {
    this.#teardown ??= this.#doTeardown();
    return this.#teardown;
  }

  async #doTeardown(): Promise<void> {
    this.#state = 'stopping';
    this.#logger.debug({ source: this.#source.name }, 'reconcile loop stopping');
    this.#controller.abort(new LoopStoppedError('the reconcile loop is stopping'));
    if (this.#resyncHandle !== undefined) this.#clock.clearTimeout(this.#resyncHandle);
    this.#resyncHandle = undefined;
    this.#queue.stop();
    this.#scheduler.shutdown();
    await Promise.allSettled([this.#driverRun, this.#worker]);
    this.#state = 'stopped';
    this.#logger.info({ source: this.#source.name }, 'reconcile loop stopped');
  }

  async #waitForSync(signal: AbortSignal): Promise<void> {
    const timeoutMs = this.#syncTimeoutMs;
    if (timeoutMs === undefined) return this.#driver.waitForSync(signal);
    const local = new AbortController();
    const onStop = (): void => local.abort(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    const handle = this.#clock.setTimeout(() => local.abort(new SyncTimeoutError(this.#source.name, timeoutMs)), timeoutMs);
    try {
      await this.#driver.waitForSync(local.signal);
    } finally {
      this.#clock.clearTimeout(handle);
      signal.removeEventListener('abort', onStop);
    }
  }

  /** The single worker: one parent key at a time, until the queue stops. */
  async #work(signal: AbortSignal): Promise<void> {
    for (;;) {
      let key: P;
      try {
        key = await this.#queue.get(signal);
      } catch (error) {
        if (!signal.aborted && (error as { code?: unknown })?.code !== 'WORK_QUEUE_STOPPED') {
          this.#logger.error({ err: error }, 'work queue failed; worker exiting');
        }
        return;
      }
      try {
        await this.#reconcileOne(key, signal);
      } catch (error) {
        // Only a throwing logger gets here; the worker must outlive it.
        try {
          this.#logger.error({ err: error, parentKey: String(key) }, 'worker error; continuing');
        } catch {
          // nothing left to report to
        }
      }
    }
  }

  async #reconcileOne(key: P, loopSignal: AbortSignal): Promise<void> {
    const parentKey = String(key);
    const controller = new AbortController();
    const onStop = (): void => controller.abort(loopSignal.reason);
    loopSignal.addEventListener('abort', onStop, { once: true });
    const context: ReconcileContext<T, P> = Object.freeze({
      parentKey: key,
      members: this.#store.members(key),
      store: this.#reader,
      signal: controller.signal,
    });
    const frame: ReconcileFrame = { active: true };
    const call = this.#frames.run(frame, () => invoke(this.#reconcile, key, context));
    let timer: unknown;
    try {
      const timeoutMs = this.#reconcileTimeoutMs;
      if (timeoutMs === undefined) {
        await call;
      } else {
        const timedOut = new Promise<never>((_, reject) => {
          timer = this.#clock.setTimeout(() => {
            const error = new ReconcileTimeoutError(parentKey, timeoutMs);
            controller.abort(error);
            reject(error);
          }, timeoutMs);
        });
        // JS cannot cancel the call: a reconcile that ignores its aborted signal keeps running in
        // the background while the worker moves on. Its late outcome is only logged.
        call.then(
          () => {
            if (controller.signal.reason instanceof ReconcileTimeoutError) {
              this.#logger.debug({ parentKey }, 'a timed-out reconcile finished late');
            }
          },
          noop,
        );
        await Promise.race([call, timedOut]);
      }
      this.#scheduler.forget(key);
      this.#logger.debug({ parentKey }, 'reconciled');
    } catch (error) {
      if (loopSignal.aborted) {
        this.#logger.debug({ parentKey, err: error }, 'reconcile ended by stop; not retried');
      } else {
        const retryInMs = this.#scheduler.schedule(key);
        this.#logger.warn(
          { parentKey, err: error, failures: this.#scheduler.failures(key), retryInMs },
          'reconcile failed; retrying after backoff',
        );
      }
    } finally {
      frame.active = false;
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      loopSignal.removeEventListener('abort', onStop);
    }
  }

  #armResync(): void {
    if (this.#resyncPeriodMs === 0) return;
    this.#resyncHandle = this.#clock.setTimeout(() => {
      this.#resyncHandle = undefined;
      if (this.#state !== 'running') return;
      // Go's limit: only parents that still have members; one that lost its last member is not re-driven.
      const parents = this.#store.parents();
      for (const parent of parents) this.#queue.add(parent);
      this.#logger.debug({ parents: parents.length }, 'resync');
      this.#armResync();
    }, this.#resyncPeriodMs);
  }
}

/** Runs reconcile so a synchronous throw becomes a rejection like an async one. */
async function invoke<T, P extends ParentKey>(reconcile: Reconcile<T, P>, key: P, context: ReconcileContext<T, P>): Promise<void> {
  await reconcile(key, context);
}

function duration(name: string, value: unknown, zeroAllowed: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zeroAllowed && value === 0) || value > MAX_TIMER_MS) {
    throw new ReconcileLoopOptionsError(
      `${name} must be a number of milliseconds ${zeroAllowed ? '>= 0' : '> 0'} and <= ${MAX_TIMER_MS}, got ${String(value)}`,
    );
  }
  return value;
}

function optionalDuration(name: string, value: unknown): number | undefined {
  return value === undefined ? undefined : duration(name, value, false);
}

/** A facade that exposes only the reader methods, so a reconcile cannot reach `apply`. */
function readOnlyView<T, P extends ParentKey>(store: ObjectStore<T, P>): ObjectStoreReader<T, P> {
  return Object.freeze({
    get: (key: ObjectKey) => store.get(key),
    has: (key: ObjectKey) => store.has(key),
    get size() {
      return store.size;
    },
    parentOf: (key: ObjectKey) => store.parentOf(key),
    members: (parent: P) => store.members(parent),
    parents: () => store.parents(),
    hasMembers: (parent: P) => store.hasMembers(parent),
    keys: () => store.keys(),
    snapshot: () => store.snapshot(),
  });
}
