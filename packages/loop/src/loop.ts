import { setMaxListeners } from 'node:events';
import type { StoreReader } from '@reconcile-loop/object-store';
import {
  OptionsError,
  linkSignals,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
  type Key,
} from '@reconcile-loop/primitives';
import { RetryScheduler, type ParkedKey } from '@reconcile-loop/retry-scheduler';
import { WorkQueue, type WorkQueuePriority } from '@reconcile-loop/work-queue';
import type { Reconcile, SecondaryReaders } from './context.js';
import { LoopAlreadyStartedError, LoopStoppedError, StopInsideReconcileError, SyncTimeoutError } from './errors.js';
import { verdicts, type LoopHealth, type ReconcileLoopState, type SourceStatus } from './health.js';
import { duration, validateLoopOptions, type LoopSettings, type ReconcileLoopOptions } from './options.js';
import { Debouncer } from './debounce.js';
import { Gate, Workers, offerThrough, type Offer } from './dispatch.js';
import { Expectations } from './expectations.js';
import { Releases } from './released.js';
import { Leadership } from './leadership.js';
import { ShardAdmission } from './shard.js';
import { ReconcileRunner, outcomeCounts, reconcileScopes, type OutcomeCounts } from './runner.js';
import { buildStores, wireSources, type Stores, type WiredSource, type Wiring } from './sources.js';
import { controllerName, retryObserver, runnerHooks } from './observer.js';
import { bindObserver } from './snapshot.js';

/** Options of one `stop()` call. */
export interface StopOptions {
  /** Overrides the `shutdown.timeoutMs` option for this stop (only the first stop's value counts). */
  graceMs?: number | undefined;
}

/** What `stop()` left behind when the grace period ran out (both empty after a clean stop). */
export interface StopReport<P extends Key> {
  /** Parent keys whose reconcile calls had not settled; they still run in the background. */
  readonly abandoned: readonly P[];
  /** Sources whose stream had not closed. */
  readonly abandonedSources: readonly string[];
}

const noop = (): void => {};

/** Each loop's parts that the package's own tests inspect ({@link expectationsOf}, {@link releasesOf}); not exported by the index. */
const INTERNALS = new WeakMap<object, { readonly expectations: Expectations<Key>; readonly releases: Releases<unknown, Key> }>();

/**
 * Internal, for tests: the loop's expectations log (its open-context count shows a context that a
 * refusal left open). Not part of the public API (the package index does not export it).
 */
export function expectationsOf(loop: object): Expectations<Key> | undefined {
  return INTERNALS.get(loop)?.expectations;
}

/** Internal, for tests: the loop's set of parents released by a reshard. Not exported by the index. */
export function releasesOf(loop: object): Releases<unknown, Key> | undefined {
  return INTERNALS.get(loop)?.releases;
}

/**
 * The controller: keeps one store per source synced (the primary source, the parent kind, plus any
 * secondary sources mapped to parent keys by owner reference or a key map), and reconciles each
 * affected parent key on up to `controller.concurrency` workers (default 1), never twice at once for one key,
 * retrying failures with per-key backoff (or a retry budget that parks a key), running requested
 * requeues, and re-driving every parent once per resync period. `health()` reports what a probe
 * needs; `start()` always settles.
 *
 * ```ts
 * await using loop = new ReconcileLoop({ source, keyMap, reconcile });
 * await loop.start(); // resolves once every store holds its first listing
 * ```
 */
export class ReconcileLoop<T, P extends Key, S = Record<never, never>> implements AsyncDisposable {
  readonly #settings: LoopSettings;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #wiring: Wiring<T, P, S>;
  readonly #sources: readonly WiredSource<P>[];
  readonly #name: string;
  /** The gate every enqueue path but a retry passes (expectations of a gone parent dropped first). */
  readonly #offer: Offer<P>;
  readonly #workers: Workers<T, P, S>;
  /**
   * Exclusive: a key is held by one worker from `get` to `done`; an add meanwhile marks it dirty.
   * With `queue.priority`, listings, resyncs and new terms add at `low`, everything else at `normal`.
   */
  readonly #queue: WorkQueue<P>;
  /** Per source name, for the sources with a `debounce` option. */
  readonly #debouncers: ReadonlyMap<string, Debouncer<P>>;
  readonly #scheduler: RetryScheduler<P>;
  readonly #expectations: Expectations<P>;
  readonly #runner: ReconcileRunner<T, P, S>;
  /** With `leadership.gate`: the terms in which workers may dispatch. */
  readonly #leadership: Leadership | undefined;
  /** With `shard.gate`: the admission of each reconcile by its parent's hash. */
  readonly #shard: ShardAdmission<P> | undefined;
  /** Aborted by `stop()`: ends the drivers, waiting `get`s, the sync wait and in-flight reconciles. */
  readonly #controller = new AbortController();
  #state: ReconcileLoopState = 'idle';
  #startedAt: number | undefined;
  /** The failure that ended the loop (never a plain stop). */
  #error: unknown;
  /** The running workers and the leadership loop (after `start()`). */
  #running: Promise<void>[] = [];
  #resyncHandle: unknown;
  #teardown: Promise<StopReport<P>> | undefined;

  /**
   * @throws {OptionsError} for unusable options; nothing is started.
   *
   * Assembles the parts in dependency order, each built from parts built before it and given them
   * explicitly (controller-runtime builds its queue in `Start` for the same reason):
   *
   *   queue → outcome counts → retry scheduler → stores → gate → expectations → offer →
   *   shard admission → debouncers → source drivers → runner → leadership → workers
   *
   * Invariant: no closure created here mentions `this` or a local declared after it, so no callback
   * a part is given can reach a part that does not exist yet (a direct read of an unassigned field
   * is already a type error; a closure's is not). `test/assembly.test.ts` › `[loop: Assembly order]`
   * checks this file. The cycles the parts have are cut by what each needs: the scheduler counts
   * releases in the counts record, not through the runner; expectations re-offer through the gate,
   * which needs no expectations; leadership's new term uses the gate and the offer, not the workers.
   */
  constructor(options: ReconcileLoopOptions<T, P, S>) {
    const settings = validateLoopOptions(options);
    const clock = options.clock ?? systemClock;
    const logger = options.logger ?? silentLogger;
    const queue = new WorkQueue<P>({
      observer: options.observer?.queue,
      clock,
      onError: (error) => logger.error({ err: error }, 'work queue hook failed'),
      priority: settings.queue.priority,
      agingMs: settings.queue.agingMs,
    });
    const counts = outcomeCounts();
    const scheduler = retryScheduler(options, { queue, counts, clock, logger });
    const stores = buildStores(options, logger);
    const gate = new Gate<T, P>({ queue, scheduler, primary: stores.primary, fingerprint: options.retry?.fingerprint, logger });
    const expectations = new Expectations<P>({
      ...{ stores: stores.secondaries, clock, logger, ttlMs: settings.expectationsTtlMs },
      onReady: (parent) => gate.offer(parent),
    });
    const offer = offerThrough(gate, expectations, stores.primary);
    const shard = shardAdmission(options, { gate, stores, offer, clock, logger, retryDelayMs: settings.shardRetryDelayMs });
    const debouncers = debouncersFor(options, clock, offer);
    const releases = new Releases<T, P>({
      ...{ primary: stores.primary, gate, queue, scheduler, expectations, logger },
      debouncers: [...debouncers.values()],
    });
    const wiring = wireSources(options, stores, {
      // Called after the store holds the event (cache before notify). A listing is queued at once at
      // low priority (it is already one coalesced event per object); a change at normal priority,
      // through the source's debouncer when it has one.
      onAffected: (parents, source, listing) => {
        const debouncer = listing ? undefined : debouncers.get(source);
        const priority: WorkQueuePriority = listing ? 'low' : 'normal';
        for (const parent of parents) releases.returned(parent);
        if (shard !== undefined) for (const parent of parents) shard.observe(parent);
        if (debouncer === undefined) for (const parent of parents) offer(parent, priority);
        else for (const parent of parents) debouncer.push(parent);
      },
      // A release (a sharded source's ranges changed) is never offered: see Releases.
      onReleased: (parents, source) => {
        releases.release(parents, source);
        if (shard !== undefined) for (const parent of parents) shard.released(parent);
      },
      onApplied: (name, event, deleted) => expectations.observe(name, event, deleted),
      wantsDeleted: () => expectations.recording,
      shard,
      clock,
      logger,
    });
    const sources = wiring.sources;
    // Listeners on the stop signal: one per source driver and sync wait, one per waiting worker and
    // one per running reconcile (a timed-out one included). Raise Node's leak warning above that
    // bound (not to unlimited), so a real leak still warns with `concurrency` > 10.
    setMaxListeners(4 * settings.concurrency + 2 * sources.length + 10, this.#controller.signal);
    const runner = new ReconcileRunner<T, P, S>({
      reconcile: options.reconcile as Reconcile<T, P, S>,
      counts,
      scheduler,
      reconcileTimeoutMs: settings.reconcileTimeoutMs,
      clock,
      logger,
      observer: runnerHooks(options.observer, controllerName(options), logger),
    });
    const leadership =
      options.leadership &&
      new Leadership({
        gate: options.leadership.gate,
        clock,
        logger,
        concurrency: settings.concurrency,
        onTerm: () => beginTerm({ sources, gate, scheduler, queue, offer, logger }),
      });
    const workers = new Workers<T, P, S>({
      ...{ queue, scheduler, gate, runner, wiring, logger },
      ...{ leadership, expectations, releases, shard },
    });
    const { concurrency, queue: queueSettings } = settings;
    bindObserver(options, {
      concurrency,
      queue,
      prioritized: queueSettings.priority,
      scheduler,
      expectations,
      runner,
      wiring,
      now: () => clock.now(),
    });

    this.#settings = settings;
    this.#name = options.source.name;
    this.#onError = options.onError;
    this.#clock = clock;
    this.#logger = logger;
    this.#queue = queue;
    this.#scheduler = scheduler;
    this.#expectations = expectations;
    INTERNALS.set(this, {
      expectations: expectations as Expectations<Key>,
      releases: releases as unknown as Releases<unknown, Key>,
    });
    this.#offer = offer;
    this.#debouncers = debouncers;
    this.#wiring = wiring;
    this.#sources = sources;
    this.#runner = runner;
    this.#leadership = leadership;
    this.#shard = shard;
    this.#workers = workers;
  }

  /** Read-only view of the primary source's cache. Valid from construction; filled once the source syncs. */
  get store(): StoreReader<T, P> {
    return this.#wiring.primary.reader;
  }

  /** Read-only views of the secondary sources' caches, by the names given in `secondary`. */
  get stores(): SecondaryReaders<S, P> {
    return this.#wiring.readers;
  }

  /** Where the loop is in its one-way lifecycle. */
  get state(): ReconcileLoopState {
    return this.#state;
  }

  /** True once every source's store holds its first replace. */
  get synced(): boolean {
    return this.#sources.every((s) => s.driver.synced);
  }

  /**
   * Starts every source's stream, waits until each store holds its first listing (sync), then
   * starts the workers and the resync timer. Parent keys affected by the listings are already
   * queued, so every parent is reconciled once after start, against complete stores.
   *
   * Always settles: after `sources.syncTimeoutMs` (default 2 min) at the latest. A start that fails tears
   * everything down itself — no stream, timer or pending promise is left and the state is
   * `stopped` — so nobody has to call `stop()` after it (a later `stop()` returns quietly).
   *
   * @throws {LoopAlreadyStartedError} on a second call (a loop runs once).
   * @throws a source's permanent error (e.g. a reflector's 400 with its `Status`) at once.
   * @throws {SyncTimeoutError} when `sources.syncTimeoutMs` passes before every source synced; it names the
   * first unsynced source, and `cause` is that source's last error.
   * @throws {LoopStoppedError} when `stop()` is called before the start completes.
   */
  async start(): Promise<void> {
    if (this.#state !== 'idle') {
      throw new LoopAlreadyStartedError(`start() called on a ${this.#state} loop; a ReconcileLoop runs once, create a new one`);
    }
    this.#state = 'starting';
    this.#startedAt = this.#clock.now();
    const signal = this.#controller.signal;
    this.#logger.debug({ source: this.#name, sources: this.#sources.map((s) => s.name) }, 'reconcile loop starting');
    // From here the ranges are followed, before any source opens: every change reaches the sources.
    this.#shard?.start();
    for (const source of this.#sources) {
      source.run = source.driver.run(signal).then(noop, (error: unknown) => this.#onDriverFailed(error, source.name));
      void source.run.finally(() => (source.done = true));
    }
    try {
      await this.#waitForSync(signal);
      // stop() may land between the sync and this continuation.
      if (signal.aborted) throw signal.reason;
    } catch (error) {
      if (!(error instanceof LoopStoppedError)) {
        this.#error = error;
        this.#logger.error({ source: this.#name, err: error }, 'reconcile loop failed to start');
      }
      await this.#teardownOnce(this.#settings.gracefulShutdownTimeoutMs);
      throw error;
    }
    // A warm standby is started too: synced, workers waiting for a term (see Leadership).
    if (this.#leadership !== undefined) this.#running.push(this.#leadership.run(signal));
    for (let i = 0; i < this.#settings.concurrency; i++) this.#running.push(this.#workers.work(signal));
    this.#armResync();
    this.#state = 'running';
    this.#logger.info(
      { source: this.#name, parents: this.#queue.size, concurrency: this.#settings.concurrency },
      'reconcile loop started',
    );
  }

  /**
   * Cancels everything, then waits for it to end: aborts the in-flight reconciles' signals, stops the
   * work queue (queued keys are dropped: no drain), shuts down the retry scheduler and the resync
   * timer, and closes every source stream. Waits at most `graceMs` (default `shutdown.timeoutMs`,
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
    const scope = reconcileScopes.getStore();
    const stopping = this.#beginStop(graceMs);
    if (scope?.owner === this.#runner && scope.active) {
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
   * Accepted before `start()` (reconciled after sync); ignored once the loop is stopping, and for a
   * key parked at its parent's current fingerprint (use `release`).
   *
   * @throws {WorkQueueKeyError} (code `RL_QUEUE_INVALID_KEY`) for a key that is not a primitive.
   */
  enqueue(parentKey: P): void {
    this.#offer(parentKey);
  }

  /** Parked (dead-lettered) parent keys, oldest first: `{ key, fingerprint, failures, lastError, parkedAt }`. Empty without `retry.budget`. */
  parked(): ParkedKey<P>[] {
    return this.#scheduler.parked();
  }

  /**
   * Releases a parked parent key by hand, with a fresh retry budget, and queues it for a reconcile.
   * Returns `false` (and queues nothing) when it was not parked.
   */
  release(parentKey: P): boolean {
    if (!this.#scheduler.release(parentKey)) return false;
    this.#queue.add(parentKey);
    return true;
  }

  /**
   * A snapshot for probes and dashboards: state, sync, per-source status (last error with its
   * Status, failures, quarantined keys, streaming, time since the last frame), queue depth,
   * in-flight reconciles and their age, and the `ready` / `alive` verdicts. Synchronous and cheap.
   */
  health(): LoopHealth<P> {
    const now = this.#clock.now();
    const sources: SourceStatus[] = this.#sources.map(({ driver, cost }) => {
      const health = driver.health();
      const msSinceLastEvent = health.lastEventAt === undefined ? undefined : now - health.lastEventAt;
      return { ...health, msSinceLastEvent, cache: cost() };
    });
    const inFlight = this.#runner.inFlight();
    const parked = this.#scheduler.parkedCount;
    const leader = this.#leadership === undefined ? undefined : this.#leadership.leading;
    const { ready, alive } = verdicts({
      state: this.#state,
      now,
      inFlight,
      sources,
      error: this.#error,
      limits: this.#settings.health,
      parked,
      leader,
      shard: this.#shard?.ready(),
    });
    const syncTimes = sources.map((s) => s.lastSyncAt);
    return {
      state: this.#state,
      synced: sources.every((s) => s.synced),
      at: now,
      startedAt: this.#startedAt,
      lastSyncAt: syncTimes.includes(undefined) ? undefined : Math.min(...(syncTimes as number[])),
      queueDepth: this.#queue.size,
      retriesPending: this.#scheduler.pending,
      parked,
      expectations: this.#expectations.reading(now),
      concurrency: this.#settings.concurrency,
      reconciles: this.#runner.counters(),
      inFlight,
      sources: Object.fromEntries(sources.map((s) => [s.source, s])),
      error: this.#error,
      leader: leader ?? true,
      shard: this.#shard?.health(),
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
        for (const debouncer of this.#debouncers.values()) debouncer.clear();
        this.#scheduler.shutdown();
        this.#shard?.stop();
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
    this.#logger.debug({ source: this.#name }, 'reconcile loop stopping');
    this.#controller.abort(new LoopStoppedError('the reconcile loop is stopping'));
    if (this.#resyncHandle !== undefined) this.#clock.clearTimeout(this.#resyncHandle);
    this.#resyncHandle = undefined;
    this.#queue.stop();
    for (const debouncer of this.#debouncers.values()) debouncer.clear();
    this.#scheduler.shutdown();
    this.#shard?.stop();
    this.#expectations.clear();
    const everything = Promise.allSettled([...this.#sources.map((s) => s.run), ...this.#running, this.#runner.settled()]);
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
        abandonedSources: this.#sources.filter((s) => s.run !== undefined && !s.done).map((s) => s.name),
      };
      this.#logger.warn(
        { source: this.#name, graceMs, abandoned: report.abandoned.map(String), abandonedSources: report.abandonedSources },
        'reconcile loop stopped after its grace period; abandoned work still running in the background',
      );
    }
    this.#state = 'stopped';
    this.#logger.info({ source: this.#name }, 'reconcile loop stopped');
    return report;
  }

  /** A driver stopped for good (a permanent source error): the loop ends. Before sync, start() reports it. */
  #onDriverFailed(error: unknown, source: string): void {
    if (this.#state !== 'running') return; // start() rejects with it, or a stop is already under way
    this.#error = error;
    this.#logger.error({ source, err: error }, 'source failed permanently; stopping the reconcile loop');
    void this.#teardownOnce(this.#settings.gracefulShutdownTimeoutMs);
    try {
      this.#onError?.(error);
    } catch (callbackError) {
      this.#logger.error({ err: callbackError }, 'onError threw; ignored');
    }
  }

  /** Waits until every source has synced; a permanent error of any source rejects at once. */
  async #waitForSync(signal: AbortSignal): Promise<void> {
    const timeoutMs = this.#settings.syncTimeoutMs;
    const done = new AbortController();
    const link = linkSignals([signal, done.signal], {
      clock: this.#clock,
      timeoutMs: timeoutMs === Infinity ? undefined : timeoutMs,
      // The first source still unsynced names the timeout; its own last error (a 403 retried
      // inside a reflector) is why it never synced.
      timeoutReason: () => {
        const late = this.#sources.find((s) => !s.driver.synced) ?? this.#sources[0]!;
        return new SyncTimeoutError(late.name, timeoutMs, late.driver.health().lastError);
      },
    });
    try {
      await Promise.all(this.#sources.map((s) => s.driver.waitForSync(link.signal)));
    } finally {
      done.abort(); // releases the other sources' waits after a rejection; the link then detaches itself
      link.dispose();
    }
  }

  #armResync(): void {
    if (this.#settings.resyncPeriodMs === 0) return;
    this.#resyncHandle = this.#clock.setTimeout(() => {
      this.#resyncHandle = undefined;
      if (this.#state !== 'running') return;
      redrive(this.#offer, this.#logger, 'resync', parentsWithObjects(this.#sources));
      this.#armResync();
    }, this.#settings.resyncPeriodMs);
  }
}

/** What the start of a leadership term works on. */
interface TermParts<T, P extends Key> {
  readonly sources: readonly WiredSource<P>[];
  readonly gate: Gate<T, P>;
  readonly scheduler: RetryScheduler<P>;
  readonly queue: WorkQueue<P>;
  readonly offer: Offer<P>;
  readonly logger: Logger;
}

/** At the start of every term, before any worker is woken: drop gone parents, release parked keys, re-drive every parent. */
function beginTerm<T, P extends Key>(parts: TermParts<T, P>): void {
  const parents = parentsWithObjects(parts.sources);
  dropGoneParents(parts, parents);
  releaseParked(parts);
  redrive(parts.offer, parts.logger, 'new leadership term', parents);
}

/**
 * At each new leadership term, every parked key is released with a fresh budget and queued: the
 * dead-letter state is per term, re-derived by the new leader. A park is in-memory state of one
 * replica; once another replica may have led (and reconciled the key, or seen it fixed), an old
 * park is a stale verdict, and keeping it would make whether a parent is reconciled depend on
 * which replica wins. Costs one budget per parked key per term, as a restart does.
 */
function releaseParked<T, P extends Key>({ scheduler, queue, logger }: TermParts<T, P>): void {
  const parked = scheduler.parked();
  for (const { key } of parked) if (scheduler.release(key)) queue.add(key);
  if (parked.length > 0) logger.info({ parked: parked.length }, 'new leadership term: parked keys released to be re-derived');
}

/** Parent keys with an object in some store: the primary object or its members, or an owned/mapped secondary object. */
function parentsWithObjects<P extends Key>(sources: readonly WiredSource<P>[]): Set<P> {
  const parents = new Set<P>();
  for (const source of sources) for (const parent of source.parents()) parents.add(parent);
  return parents;
}

/**
 * At the start of a term, queued keys whose parent has no object in any store are dropped: what
 * a controller-runtime replica would hold when it starts leading, since it starts its event
 * handlers only then and the initial replay enqueues only live objects (plus, through owner
 * handlers, the owners of objects still cached). Keys queued while standby for parents deleted
 * meanwhile — or left from an earlier term — would otherwise each run a reconcile of nothing.
 */
function dropGoneParents<T, P extends Key>({ gate, logger }: TermParts<T, P>, parents: ReadonlySet<P>): void {
  const dropped = gate.dropQueued((key) => !parents.has(key));
  if (dropped > 0) logger.info({ dropped }, 'new leadership term: dropped queued keys whose parents are gone from every store');
}

/**
 * Enqueues every parent once (resync, a new leadership term), at low priority: controller-runtime
 * queues resync and the initial replay a new leader's handlers see at `LowPriority`, so a change
 * made meanwhile is not held behind every parent.
 */
function redrive<P extends Key>(offer: Offer<P>, logger: Logger, why: string, parents: ReadonlySet<P>): void {
  // Go's limit: only parents with an object in some store; one that lost its last object (and
  // its parent object) is not re-driven. Parked keys stay parked: the gate turns them away.
  for (const parent of parents) offer(parent, 'low');
  logger.debug({ parents: parents.size, why }, 're-driving every parent');
}

/** The retry scheduler: retries re-enter the queue directly (past the gate); a release is counted and logged. */
function retryScheduler<T, P extends Key, S>(
  options: ReconcileLoopOptions<T, P, S>,
  { queue, counts, clock, logger }: { queue: WorkQueue<P>; counts: OutcomeCounts; clock: Clock; logger: Logger },
): RetryScheduler<P> {
  const { backoff, budget } = options.retry ?? {};
  try {
    return new RetryScheduler<P>({
      onRetry: (key) => queue.add(key),
      onError: (error, key) => logger.error({ err: error, parentKey: String(key) }, 're-enqueueing a retry failed'),
      clock,
      observer: retryObserver(options.observer, {
        onRelease: ({ key, reason }) => {
          counts.released += 1;
          logger.info({ parentKey: String(key), reason }, 'parked parent key released');
        },
      }),
      backoff,
      budget: budget === undefined ? undefined : { delaysMs: [...budget.delaysMs] },
    });
  } catch (error) {
    throw new OptionsError('ReconcileLoop', `retry: ${(error as Error).message}`, { cause: error });
  }
}

/** With `shard.gate`: the admission (hash per parent key from its uid; a refusal queued again through `offer`). */
function shardAdmission<T, P extends Key, S>(
  options: ReconcileLoopOptions<T, P, S>,
  parts: {
    gate: Gate<T, P>;
    stores: Stores<T, P, S>;
    offer: Offer<P>;
    clock: Clock;
    logger: Logger;
    retryDelayMs: number;
  },
): ShardAdmission<P> | undefined {
  if (options.shard === undefined) return undefined;
  const { gate, stores, offer, clock, logger, retryDelayMs } = parts;
  return new ShardAdmission<P>({
    gate: options.shard.gate,
    retryDelayMs,
    valueOf: (key) => {
      const metadata = (gate.parentObject(key) as { metadata?: { uid?: unknown; namespace?: unknown } } | undefined)?.metadata;
      if (options.shard?.field !== 'namespace')
        return typeof metadata?.uid === 'string' && metadata.uid !== '' ? metadata.uid : undefined;
      if (typeof metadata?.namespace === 'string') return metadata.namespace;
      // A gone parent: its key (`namespace/name`, or a bare name for a cluster-scoped parent) names its namespace.
      const own = String(key);
      return own.includes('/') ? own.slice(0, own.indexOf('/')) : '';
    },
    held: (key) => stores.primary.hasMembers(key) || [...stores.secondaries.values()].some((store) => store.hasMembers(key)),
    requeue: (key, low) => offer(key, low ? 'low' : 'normal'),
    clock,
    logger,
  });
}

/** One debouncer per source with a `debounce` option, by source name; each offers through `offer`. */
function debouncersFor<T, P extends Key, S>(
  options: ReconcileLoopOptions<T, P, S>,
  clock: Clock,
  offer: Offer<P>,
): ReadonlyMap<string, Debouncer<P>> {
  type Debounce = ReconcileLoopOptions<T, P, S>['debounce'];
  const secondary = Object.values((options.secondary ?? {}) as Record<string, { source: { name: string }; debounce?: Debounce }>);
  const debounced: Array<[string, Debounce]> = [
    [options.source.name, options.debounce],
    ...secondary.map((spec): [string, Debounce] => [spec.source.name, spec.debounce]),
  ];
  const debouncers = new Map<string, Debouncer<P>>();
  for (const [name, debounce] of debounced) {
    if (debounce === undefined) continue;
    const { delayMs, maxWaitMs } = debounce;
    debouncers.set(name, new Debouncer<P>({ delayMs, maxWaitMs, clock, offer: (key) => offer(key) }));
  }
  return debouncers;
}

function cleanStop<P extends Key>(): StopReport<P> {
  return { abandoned: [], abandonedSources: [] };
}
