/**
 * The loop's metrics hooks, without any metrics library: a metrics package (e.g.
 * `@reconcile-loop/metrics`) passes an observer as the `observer` option and turns these events and
 * the pull-style snapshot into Prometheus series. Push events are the ones a counter or histogram
 * needs (a reconcile's outcome and duration, the work queue's adds/gets/dones, the retry
 * scheduler's retries/parks); everything a gauge shows is read at scrape time from `snapshot()`,
 * so an idle loop costs nothing.
 *
 * Invariant: a hook never changes what the loop does. A throwing hook is logged (error level) and
 * the loop carries on, exactly as if no observer were set.
 */
import type { ExpectationsReading } from './expectations.js';
import type { CacheCost, SourceListLag, SourceShard } from '@reconcile-loop/object-store';
import type { Logger, Key } from '@reconcile-loop/primitives';
import type { RetrySchedulerObserver } from '@reconcile-loop/retry-scheduler';
import type { UnfinishedWork, WorkQueueObserver } from '@reconcile-loop/work-queue';

/**
 * How one reconcile call ended, in controller-runtime's `result` label values, plus `stopped` for a
 * call ended by `stop()` (not retried and not counted by the loop's counters either).
 * `requeue` is `{ requeueAfterMs: 0 }` (controller-runtime's rate-limited `Requeue: true`), `requeue_after` a
 * positive `requeueAfterMs`; `error` covers throws, rejections, timeouts, invalid results and
 * `TerminalError`s (see {@link ReconcileEndEvent.terminal}).
 */
export type ReconcileOutcome = 'success' | 'error' | 'requeue' | 'requeue_after' | 'stopped';

/** Payload of {@link ReconcileLoopObserver.onReconcileStart}. */
export interface ReconcileStartEvent<P extends Key> {
  /** The loop's `name` (controller-runtime's `controller` label). */
  readonly controller: string;
  readonly parentKey: P;
  /** Clock ms when the call began. */
  readonly at: number;
}

/** Payload of {@link ReconcileLoopObserver.onReconcileEnd}: emitted once per call, when the worker is done with it. */
export interface ReconcileEndEvent<P extends Key> {
  readonly controller: string;
  readonly parentKey: P;
  /** Clock ms when the worker was done with the call (for a timed-out call: the timeout). */
  readonly at: number;
  /** `at` minus the start: controller-runtime's reconcile time. */
  readonly durationMs: number;
  readonly result: ReconcileOutcome;
  /** The error was a `TerminalError` (not retried). Implies `result: 'error'`. */
  readonly terminal: boolean;
  /** The call outlived `controller.reconcileTimeoutMs` (controller-runtime's reconcile timeout). Implies `result: 'error'`. */
  readonly timedOut: boolean;
  /** This failure exhausted the retry budget and parked (dead-lettered) the key. */
  readonly parked: boolean;
  /** What the call threw or rejected with (the timeout or invalid-result error included); undefined otherwise. */
  readonly error: unknown;
}

/** One source as {@link LoopSnapshot} reports it. */
export interface SourceSnapshot {
  /** The source's name. */
  readonly name: string;
  /** Objects in this source's store (a quarantined one is in it at its last good version, if it had one). */
  readonly objects: number;
  /** Objects the source holds out of the store because they failed validation. */
  readonly quarantined: number;
  /** A stream is open and has applied its listing. */
  readonly streaming: boolean;
  /** Clock ms since the last event or frame (bookmarks count); undefined when none arrived yet. */
  readonly msSinceLastFrame: number | undefined;
  /** Streams the loop's driver opened for this source (1 = never reopened); 0 before `start()`. */
  readonly opens: number;
  /**
   * The numeric fields of the source's own `stats` object when it has one (a reflector's `lists`,
   * `relists`, `healRelists`, `watches`, …), read structurally; undefined for sources without it.
   */
  readonly stats: Readonly<Record<string, number>> | undefined;
  /** What the source's store holds and costs, and its memory budget (`health().sources[name].cache`); a loop always sets it. */
  readonly cache?: CacheCost | undefined;
  /** How far the source's stream is behind a LIST (`health().listLag`: a reflector's with `listLagProbeIntervalMs`), undefined otherwise. */
  readonly listLag?: SourceListLag | undefined;
  /** Clock ms since the newest probe LIST the stream caught up with was taken (`listLag.caughtUpAt`): a bound on the cache's staleness. */
  readonly msBehindList?: number | undefined;
  /**
   * The shard a sharded source holds (`health().shard`: a reflector with the `shard` option), undefined
   * for an unsharded one: `ranges` owned, `filter` (`server` | `client` | `unverified`), `reshards`,
   * `dropped`; the objects it holds are {@link objects}.
   */
  readonly shard?: SourceShard | undefined;
}

/** What the gauges show, read when a scrape asks (synchronous and cheap). */
export interface LoopSnapshot {
  readonly controller: string;
  /** Workers running a reconcile now (a timed-out call still running in the background is not counted: its worker moved on). */
  readonly activeWorkers: number;
  /** The `controller.concurrency` option (controller-runtime's `MaxConcurrentReconciles`). */
  readonly maxConcurrentReconciles: number;
  /** Parent keys queued and not yet handed to a worker. */
  readonly queueDepth: number;
  /**
   * How long queued keys have waited, per priority: `depth` keys queued, the oldest for `oldestMs`.
   * `low` only with `queue.priority` (the default); a FIFO queue reports every key as `normal`.
   */
  readonly queuePriorities?:
    | {
        readonly normal: { readonly depth: number; readonly oldestMs: number };
        readonly low?: { readonly depth: number; readonly oldestMs: number } | undefined;
      }
    | undefined;
  /** Keys held by workers and for how long (client-go's unfinished work and longest running processor). */
  readonly unfinishedWork: UnfinishedWork;
  /** Parent keys waiting for a retry or requeue deadline. */
  readonly retriesPending: number;
  /** Parent keys parked (dead-lettered). */
  readonly parked: number;
  /** Parent keys held back until the cache observes their recorded writes, and the oldest one's wait (ms). */
  readonly expectations: ExpectationsReading;
  /** Every source, primary first. */
  readonly sources: readonly SourceSnapshot[];
}

/** What the loop hands its observer once, at construction. */
export interface LoopBinding {
  /** The loop's `name`. */
  readonly controller: string;
  /** Reads the gauges now. */
  snapshot(): LoopSnapshot;
}

/**
 * The `observer` option of a `ReconcileLoop`. Every member is optional; one observer object belongs
 * to one loop (`bind` is called once, from the loop's constructor).
 */
export interface ReconcileLoopObserver<P extends Key> {
  /** Called once by the loop's constructor with its name and its snapshot function. A throw fails the constructor (e.g. a name already registered). */
  bind?(binding: LoopBinding): void;
  /** A worker began a reconcile call. */
  onReconcileStart?(event: ReconcileStartEvent<P>): void;
  /** A worker is done with a reconcile call (its outcome is booked). */
  onReconcileEnd?(event: ReconcileEndEvent<P>): void;
  /** Forwarded to the loop's work queue (exclusive mode): adds, gets with queue time, dones with work time. */
  queue?: WorkQueueObserver<P> | undefined;
  /** Forwarded to the loop's retry scheduler: failures that scheduled a retry, requeue-afters, parks, releases. */
  retry?: RetrySchedulerObserver<P> | undefined;
}

/** The runner's side of the observer: start and end of a call, each guarded. */
export interface RunnerHooks<P extends Key> {
  start(parentKey: P, at: number): void;
  end(event: Omit<ReconcileEndEvent<P>, 'controller'>): void;
}

/** The controller name: the `controller.name` option, else the primary source's name. */
export function controllerName(options: {
  controller?: { name?: string | undefined } | undefined;
  source: { name: string };
}): string {
  return options.controller?.name ?? options.source.name;
}

/** The runner hooks for `observer`, or undefined without start/end hooks (the runner then skips the bookkeeping). */
export function runnerHooks<P extends Key>(
  observer: ReconcileLoopObserver<P> | undefined,
  controller: string,
  logger: Logger,
): RunnerHooks<P> | undefined {
  if (observer?.onReconcileStart === undefined && observer?.onReconcileEnd === undefined) return undefined;
  const guard = (hook: string, call: () => void): void => {
    try {
      call();
    } catch (error) {
      logger.error({ err: error, hook }, 'reconcile loop observer hook failed; ignored');
    }
  };
  return {
    start: (parentKey, at) => guard('onReconcileStart', () => observer.onReconcileStart?.({ controller, parentKey, at })),
    end: (event) => guard('onReconcileEnd', () => observer.onReconcileEnd?.({ controller, ...event })),
  };
}

/** The loop's own retry hooks with the observer's called after each (the loop's bookkeeping first). */
export function retryObserver<P extends Key>(
  observer: ReconcileLoopObserver<P> | undefined,
  own: RetrySchedulerObserver<P>,
): RetrySchedulerObserver<P> {
  const theirs = observer?.retry;
  if (theirs === undefined) return own;
  return {
    onFailure: (e) => theirs.onFailure?.(e),
    onRequeue: (e) => theirs.onRequeue?.(e),
    onPark: (e) => theirs.onPark?.(e),
    onRelease: (e) => {
      own.onRelease?.(e);
      theirs.onRelease?.(e);
    },
  };
}
