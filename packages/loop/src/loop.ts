import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ObjectStore,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
  type ObjectStoreReader,
  type ParentKey,
  type Source,
} from '@reconcile-loop/object-store';
import { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import { StreamDriver } from '@reconcile-loop/stream-driver';
import { WorkQueue } from '@reconcile-loop/work-queue';
import { readOnlyView, type Reconcile } from './context.js';
import { LoopAlreadyStartedError, LoopStoppedError, StopInsideReconcileError, SyncTimeoutError } from './errors.js';
import { verdicts, type LoopHealth, type ReconcileLoopState, type SourceStatus } from './health.js';
import { duration, validateLoopOptions, type LoopSettings, type ReconcileLoopOptions } from './options.js';
import { ReconcileRunner, type ReconcileFrame } from './runner.js';

/** Options of one `stop()` call. */
export interface StopOptions {
  /** Overrides `gracefulShutdownTimeoutMs` for this stop (only the first stop's value counts). */
  graceMs?: number;
}

/** What `stop()` left behind when the grace period ran out (both empty after a clean stop). */
export interface StopReport<P extends ParentKey> {
  /** Parent keys whose reconcile calls had not settled; they still run in the background. */
  readonly abandoned: readonly P[];
  /** Sources whose stream had not closed. */
  readonly abandonedSources: readonly string[];
}

const noop = (): void => {};

/**
 * The controller: keeps a store synced from one source, and reconciles each affected parent key on
 * a single worker, retrying failures with per-key backoff and re-driving every parent with members
 * once per resync period. `health()` reports what a probe needs; `start()` always settles.
 *
 * ```ts
 * await using loop = new ReconcileLoop({ source, keyMap, reconcile });
 * await loop.start(); // resolves once the store holds the first listing
 * ```
 */
export class ReconcileLoop<T, P extends ParentKey> implements AsyncDisposable {
  readonly #source: Source<T>;
  readonly #settings: LoopSettings;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #store: ObjectStore<T, P>;
  readonly #reader: ObjectStoreReader<T, P>;
  readonly #queue = new WorkQueue<P>();
  readonly #scheduler: RetryScheduler<P>;
  readonly #driver: StreamDriver<T, P>;
  readonly #runner: ReconcileRunner<T, P>;
  /** Aborted by `stop()`: ends the driver, a waiting `get`, the sync wait and the in-flight reconcile. */
  readonly #controller = new AbortController();
  readonly #frames = new AsyncLocalStorage<ReconcileFrame>();
  #state: ReconcileLoopState = 'idle';
  #startedAt: number | undefined;
  /** The failure that ended the loop (never a plain stop). */
  #error: unknown;
  #driverRun: Promise<void> | undefined;
  #driverDone = false;
  #worker: Promise<void> | undefined;
  #resyncHandle: unknown;
  #teardown: Promise<StopReport<P>> | undefined;

  /** @throws {ReconcileLoopOptionsError} for unusable options; nothing is started. */
  constructor(options: ReconcileLoopOptions<T, P>) {
    this.#settings = validateLoopOptions(options);
    const { source, keyMap, reconcile } = options;
    this.#source = source;
    this.#onError = options.onError;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#store = new ObjectStore<T, P>({ keyMap, logger: this.#logger });
    this.#reader = readOnlyView(this.#store);
    const { baseDelayMs, maxDelayMs } = options.retry ?? {};
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
      ...(options.sourceRetryDelayMs !== undefined && { sourceRetryDelayMs: options.sourceRetryDelayMs }),
      ...(options.maxSourceRetryDelayMs !== undefined && { maxSourceRetryDelayMs: options.maxSourceRetryDelayMs }),
      ...(options.sourceHealthyAfterMs !== undefined && { sourceHealthyAfterMs: options.sourceHealthyAfterMs }),
      clock: this.#clock,
      logger: this.#logger,
    });
    this.#runner = new ReconcileRunner<T, P>({
      reconcile: reconcile as Reconcile<T, P>,
      store: this.#store,
      reader: this.#reader,
      scheduler: this.#scheduler,
      frames: this.#frames,
      reconcileTimeoutMs: this.#settings.reconcileTimeoutMs,
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
   * Always settles: after `syncTimeoutMs` (default 2 min) at the latest. A start that fails tears
   * everything down itself — no stream, timer or pending promise is left and the state is
   * `stopped` — so nobody has to call `stop()` after it (a later `stop()` returns quietly).
   *
   * @throws {LoopAlreadyStartedError} on a second call (a loop runs once).
   * @throws the source's permanent error (e.g. a reflector's 400 with its `Status`) at once.
   * @throws {SyncTimeoutError} when `syncTimeoutMs` passes before the first replace; `cause` is the source's last error.
   * @throws {LoopStoppedError} when `stop()` is called before the start completes.
   */
  async start(): Promise<void> {
    if (this.#state !== 'idle') {
      throw new LoopAlreadyStartedError(`start() called on a ${this.#state} loop; a ReconcileLoop runs once, create a new one`);
    }
    this.#state = 'starting';
    this.#startedAt = this.#clock.now();
    const signal = this.#controller.signal;
    this.#logger.debug({ source: this.#source.name }, 'reconcile loop starting');
    this.#driverRun = this.#driver.run(signal).then(noop, (error: unknown) => this.#onDriverFailed(error));
    void this.#driverRun.finally(() => (this.#driverDone = true));
    try {
      await this.#waitForSync(signal);
      // stop() may land between the sync and this continuation.
      if (signal.aborted) throw signal.reason;
    } catch (error) {
      if (!(error instanceof LoopStoppedError)) {
        this.#error = error;
        this.#logger.error({ source: this.#source.name, err: error }, 'reconcile loop failed to start');
      }
      await this.#teardownOnce(this.#settings.gracefulShutdownTimeoutMs);
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
   * timer, and closes the source stream. Waits at most `graceMs` (default `gracefulShutdownTimeoutMs`,
   * 30 s): then it resolves anyway, logs a warning, and reports the reconciles and sources it
   * abandoned. Idempotent; concurrent calls share one teardown (and the first call's grace).
   *
   * Before `start()` it retires the loop without starting anything; after a failed `start()` it
   * returns quietly. Inside a running reconcile it begins the stop but rejects at once with a
   * pre-handled {@link StopInsideReconcileError} instead of deadlocking: write `void loop.stop()`.
   */
  stop(options: StopOptions = {}): Promise<StopReport<P>> {
    const graceMs =
      options.graceMs === undefined ? this.#settings.gracefulShutdownTimeoutMs : duration('graceMs', options.graceMs, true, true);
    const frame = this.#frames.getStore();
    const stopping = this.#beginStop(graceMs);
    if (frame?.active) {
      const refused = Promise.reject(new StopInsideReconcileError());
      refused.catch(noop);
      return refused;
    }
    return stopping;
  }

  /**
   * `await using loop = new ReconcileLoop(...)`: the scope's end stops the loop (see
   * {@link ReconcileLoop.stop}) within the grace period, so a hung reconcile cannot hold the scope —
   * and the error the scope is unwinding — forever. Never rejects for what the stop abandoned.
   */
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

  /**
   * A snapshot for probes and dashboards: state, sync, per-source status (last error with its
   * Status, failures, quarantined keys, streaming, time since the last frame), queue depth,
   * in-flight reconciles and their age, and the `ready` / `alive` verdicts. Synchronous and cheap.
   */
  health(): LoopHealth<P> {
    const now = this.#clock.now();
    const driver = this.#driver.health();
    const source: SourceStatus = {
      ...driver,
      msSinceLastEvent: driver.lastEventAt === undefined ? undefined : now - driver.lastEventAt,
    };
    const sources = [source];
    const inFlight = this.#runner.inFlight();
    const { ready, alive } = verdicts({ state: this.#state, now, inFlight, sources, error: this.#error, limits: this.#settings.health });
    const syncTimes = sources.map((s) => s.lastSyncAt);
    return {
      state: this.#state,
      synced: sources.every((s) => s.synced),
      at: now,
      startedAt: this.#startedAt,
      lastSyncAt: syncTimes.includes(undefined) ? undefined : Math.min(...(syncTimes as number[])),
      queueDepth: this.#queue.size,
      retriesPending: this.#scheduler.pending,
      inFlight,
      sources: Object.fromEntries(sources.map((s) => [s.source, s])),
      error: this.#error,
      ready,
      alive,
    };
  }

  #beginStop(graceMs: number): Promise<StopReport<P>> {
    switch (this.#state) {
      case 'idle':
        // Nothing runs yet; retire the loop so a later start() cannot leak past its owner's scope.
        this.#state = 'stopped';
        this.#controller.abort(new LoopStoppedError('the reconcile loop was stopped before it started'));
        this.#queue.stop();
        this.#scheduler.shutdown();
        return Promise.resolve(cleanStop<P>());
      case 'stopped':
        return this.#teardown ?? Promise.resolve(cleanStop<P>());
      default:
        return this.#teardownOnce(graceMs);
    }
  }

  #teardownOnce(graceMs: number): Promise<StopReport<P>> {
    this.#teardown ??= this.#doTeardown(graceMs);
    return this.#teardown;
  }

  async #doTeardown(graceMs: number): Promise<StopReport<P>> {
    this.#state = 'stopping';
    this.#logger.debug({ source: this.#source.name }, 'reconcile loop stopping');
    this.#controller.abort(new LoopStoppedError('the reconcile loop is stopping'));
    if (this.#resyncHandle !== undefined) this.#clock.clearTimeout(this.#resyncHandle);
    this.#resyncHandle = undefined;
    this.#queue.stop();
    this.#scheduler.shutdown();
    const everything = Promise.allSettled([this.#driverRun, this.#worker, this.#runner.settled()]);
    let timer: unknown;
    const graceOver = new Promise<'grace over'>((resolve) => {
      if (graceMs !== Infinity) timer = this.#clock.setTimeout(() => resolve('grace over'), graceMs);
    });
    const outcome = await Promise.race([everything, graceOver]);
    if (timer !== undefined) this.#clock.clearTimeout(timer);
    let report = cleanStop<P>();
    if (outcome === 'grace over') {
      report = {
        abandoned: this.#runner.inFlight().map((c) => c.parentKey),
        abandonedSources: this.#driverDone ? [] : [this.#source.name],
      };
      this.#logger.warn(
        { source: this.#source.name, graceMs, abandoned: report.abandoned.map(String), abandonedSources: report.abandonedSources },
        'reconcile loop stopped after its grace period; abandoned work still running in the background',
      );
    }
    this.#state = 'stopped';
    this.#logger.info({ source: this.#source.name }, 'reconcile loop stopped');
    return report;
  }

  /** The driver stopped for good (a permanent source error). Before sync, start() reports it. */
  #onDriverFailed(error: unknown): void {
    if (this.#state !== 'running') return; // start() rejects with it, or a stop is already under way
    this.#error = error;
    this.#logger.error({ source: this.#source.name, err: error }, 'source failed permanently; stopping the reconcile loop');
    void this.#teardownOnce(this.#settings.gracefulShutdownTimeoutMs);
    try {
      this.#onError?.(error);
    } catch (callbackError) {
      this.#logger.error({ err: callbackError }, 'onError threw; ignored');
    }
  }

  async #waitForSync(signal: AbortSignal): Promise<void> {
    const timeoutMs = this.#settings.syncTimeoutMs;
    if (timeoutMs === Infinity) return this.#driver.waitForSync(signal);
    const local = new AbortController();
    const onStop = (): void => local.abort(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    const handle = this.#clock.setTimeout(() => {
      // The source's own last error (a 403 retried inside a reflector) is why it never synced.
      local.abort(new SyncTimeoutError(this.#source.name, timeoutMs, this.#driver.health().lastError));
    }, timeoutMs);
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
        await this.#runner.run(key, signal);
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

  #armResync(): void {
    if (this.#settings.resyncPeriodMs === 0) return;
    this.#resyncHandle = this.#clock.setTimeout(() => {
      this.#resyncHandle = undefined;
      if (this.#state !== 'running') return;
      // Go's limit: only parents that still have members; one that lost its last member is not re-driven.
      const parents = this.#store.parents();
      for (const parent of parents) this.#queue.add(parent);
      this.#logger.debug({ parents: parents.length }, 'resync');
      this.#armResync();
    }, this.#settings.resyncPeriodMs);
  }
}

function cleanStop<P extends ParentKey>(): StopReport<P> {
  return { abandoned: [], abandonedSources: [] };
}
