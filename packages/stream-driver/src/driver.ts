import {
  DEFAULT_SOURCE_RETRY,
  isPermanentSourceError,
  reportsHealth,
  type Source,
  type QuarantinedObject,
  type SourceHealth,
} from '@reconcile-loop/object-store';
import {
  Backoff,
  abortReason,
  silentLogger,
  sleep,
  systemClock,
  type Clock,
  type Logger,
  type Key,
} from '@reconcile-loop/primitives';
import { FailureWatch, type StreamDriverHealth } from './driver-health.js';
import { StreamDriverAlreadyRunError, StreamDriverStoppedError } from './errors.js';
import { StreamPump, type StreamResult } from './pump.js';
import {
  DEFAULT_CLOSE_TIMEOUT_MS,
  DEFAULT_HEALTHY_STREAM_MS,
  validateDriverOptions,
  type StreamDriverOptions,
} from './options.js';

interface SyncWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Opens a source's stream, requires it to open with a replace (the listing), applies every source
 * event to the store and only then notifies `onAffected`; reopens the stream whenever it ends or
 * fails, after the source's own `retry` policy (default `DEFAULT_SOURCE_RETRY`) that only a healthy
 * stretch resets, and stops for good on a permanent source error. The informer's `Run` / `processLoop`, with `waitForSync()` as
 * its `WaitForCacheSync` (the `SyncingSource` shape), and `health()` for probes.
 */
export class StreamDriver<T, P extends Key> {
  readonly #source: Source<T>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #backoff: Backoff;
  /** A stream that listed and stayed open this long resets {@link StreamDriver.#backoff} when it ends. */
  readonly #healthyAfterMs: number;
  readonly #pump: StreamPump<T, P>;
  readonly #failures: FailureWatch;
  readonly #waiters = new Set<SyncWaiter>();
  #synced = false;
  #state: 'idle' | 'running' | 'ended' = 'idle';
  #permanentError: unknown;
  #lastStreamError: unknown;
  #retryAt: number | undefined;
  #opens = 0;

  constructor(options: StreamDriverOptions<T, P>) {
    const settings = validateDriverOptions(options, { closeTimeoutMs: DEFAULT_CLOSE_TIMEOUT_MS });
    this.#source = options.source;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#failures = new FailureWatch(this.#clock);
    // The policy's resetAfterMs is the healthy stretch here, applied with reset() below (a stream must
    // also have listed); the Backoff itself gets none, so a long sleep between failures resets nothing.
    const { resetAfterMs, ...policy } = settings.retry;
    this.#healthyAfterMs = resetAfterMs ?? DEFAULT_HEALTHY_STREAM_MS;
    this.#backoff = new Backoff(policy, { random: options.random ?? Math.random });
    this.#pump = new StreamPump<T, P>({
      source: options.source,
      store: options.store,
      onAffected: options.onAffected,
      onListed: () => this.#onListed(),
      closeTimeoutMs: settings.closeTimeoutMs,
      clock: this.#clock,
      logger: this.#logger,
    });
  }

  /** True once the first replace has been applied to the store; stays true across reopens. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The failure that made the driver stop reopening (a `PermanentSourceError`), if any. */
  get permanentError(): unknown {
    return this.#permanentError;
  }

  /**
   * Pumps the source into the store until `signal` aborts, reopening the stream after every end or
   * failure with exponential backoff. Resolves once the signal has aborted and the current stream is
   * closed (or its close deadline passed). Rejects only with a permanent source error (one marked
   * `permanent: true`, see `isPermanentSourceError`): the driver then stops reopening, and every
   * `waitForSync()` rejects with it too. A driver runs once: a second call rejects with
   * {@link StreamDriverAlreadyRunError}.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#state !== 'idle') throw new StreamDriverAlreadyRunError('StreamDriver.run() may be called once');
    this.#state = 'running';
    const log = { source: this.#source.name };
    try {
      while (!signal.aborted) {
        this.#opens += 1;
        const result = await this.#pump.run(signal);
        if (result.end === 'aborted') break;
        if (result.end === 'failed' && isPermanentSourceError(result.error)) {
          this.#permanentError = result.error;
          this.#failures.observe(1);
          this.#logger.error({ ...log, err: result.error }, 'source failed permanently; not reopening it');
          throw result.error;
        }
        if (!(await this.#backOff(result, signal))) break;
      }
    } finally {
      this.#end();
    }
  }

  /**
   * Resolves once the first replace has been applied (immediately if it already has). Rejects with
   * the signal's reason if `signal` aborts first, with the permanent source error if the source
   * failed for good, and with {@link StreamDriverStoppedError} if `run()` ended before the first sync.
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (this.#state === 'ended') return Promise.reject(this.#endError());
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        reject(abortReason(signal!));
      };
      const waiter: SyncWaiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * A snapshot of the source as the driver sees it, merged with the source's own `health()` when it
   * has one. Cheap and synchronous; safe to call from a probe at any time, also after `run()` ended.
   */
  health(): StreamDriverHealth {
    const now = this.#clock.now();
    const own = this.#sourceHealth();
    const pump = this.#pump.status;
    // A stream that is open and listed is working; otherwise every stream that ended since the last
    // healthy stretch counts, so a source that lists and dies at once keeps counting up (and its
    // failingSince stays at the first failure) instead of looking healed by each brief listing.
    const listedNow = pump.open && pump.listedAt !== undefined;
    const driverFailures = listedNow ? 0 : this.#backoff.failures;
    const failures = Math.max(own?.consecutiveFailures ?? 0, driverFailures, this.#permanentError === undefined ? 0 : 1);
    const neverListed = pump.listedAt === undefined && pump.openedAt !== undefined;
    const failingSince = this.#failures.observe(failures, neverListed ? pump.openedAt : undefined);
    const lastEventAt = latest(pump.lastEventAt, own?.lastEventAt);
    const lastError = this.#permanentError ?? (own?.lastError !== undefined ? own.lastError : this.#lastStreamError);
    return {
      source: this.#source.name,
      synced: this.#synced,
      streaming: listedNow && (own === undefined || own.streaming),
      lastSyncAt: latest(pump.lastReplaceAt, own?.lastListAt),
      lastEventAt,
      lastError,
      consecutiveFailures: failures,
      failingSince,
      retryInMs: this.#retryAt === undefined ? undefined : Math.max(0, this.#retryAt - now),
      opens: this.#opens,
      permanentError: this.#permanentError,
      quarantined: own?.quarantined ?? [],
      sourceHealth: own,
    };
  }

  /** Counts a stream that ended or failed, logs it, and waits out the backoff; false when aborted meanwhile. */
  async #backOff(result: StreamResult, signal: AbortSignal): Promise<boolean> {
    if (result.end === 'failed') this.#lastStreamError = result.error;
    // Reset only by a healthy stretch: a source that lists and fails at once keeps backing off
    // instead of re-listing at the first delay forever.
    if (result.listedAt !== undefined && this.#clock.now() - result.openedAt >= this.#healthyAfterMs) this.#backoff.reset();
    const retryInMs = this.#backoff.next();
    this.#failures.observe(this.#backoff.failures);
    const fields = { source: this.#source.name, retryInMs, failures: this.#backoff.failures };
    if (result.end === 'failed') {
      this.#logger.error({ ...fields, err: result.error }, 'source stream failed; reopening after backoff');
    } else {
      this.#logger.warn(fields, 'source stream ended; reopening after backoff');
    }
    this.#retryAt = this.#clock.now() + retryInMs;
    try {
      await sleep(this.#clock, retryInMs, signal);
      return true;
    } catch {
      return false; // only the signal rejects sleep
    } finally {
      this.#retryAt = undefined;
    }
  }

  /** Called by the pump after a replace was applied to the store (never before: cache before notify). */
  #onListed(): void {
    this.#lastStreamError = undefined;
    if (this.#synced) return;
    this.#synced = true;
    this.#logger.info({ source: this.#source.name }, 'source synced');
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters.clear();
  }

  #end(): void {
    this.#state = 'ended';
    if (!this.#synced) {
      const error = this.#endError();
      for (const waiter of this.#waiters) waiter.reject(error);
    }
    this.#waiters.clear();
    this.#logger.debug({ source: this.#source.name }, 'stream driver stopped');
  }

  #endError(): unknown {
    return this.#permanentError ?? new StreamDriverStoppedError(`source "${this.#source.name}" stopped before its first sync`);
  }

  /**
   * The source's quarantined objects now (none when it reports no health): what a reconcile context
   * shows. Unlike {@link StreamDriver.health} it builds no snapshot and starts no failure clock, so a
   * reconcile reading it neither pays for nor changes the health report.
   */
  quarantined(): readonly QuarantinedObject[] {
    return this.#sourceHealth()?.quarantined ?? [];
  }

  #sourceHealth(): SourceHealth | undefined {
    if (!reportsHealth(this.#source)) return undefined;
    try {
      return this.#source.health();
    } catch (error) {
      // A probe must answer even when the source's report is broken; the driver's own view remains.
      this.#logger.warn({ source: this.#source.name, err: error }, 'source health() threw; using the driver view only');
      return undefined;
    }
  }
}

function latest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}
