import {
  abortReason,
  silentLogger,
  sleep,
  systemClock,
  type Clock,
  type Logger,
  type ParentKey,
  type Source,
  type SourceEvent,
} from '@reconcile-loop/object-store';
import {
  StreamDidNotOpenWithReplaceError,
  StreamDriverAlreadyRunError,
  StreamDriverOptionsError,
  StreamDriverStoppedError,
} from './errors.js';

/**
 * The one store method the driver needs. `ObjectStore` satisfies it; it returns the parent keys an
 * event affected, computed after the store is updated.
 */
export interface StoreWriter<T, P extends ParentKey> {
  apply(event: SourceEvent<T>): ReadonlySet<P>;
}

/** Default wait before reopening a stream that ended or failed. */
export const DEFAULT_SOURCE_RETRY_DELAY_MS = 1_000;

/** Options for {@link StreamDriver}. */
export interface StreamDriverOptions<T, P extends ParentKey> {
  /** Where the source events come from (a reflector, an in-process registry, a test). */
  source: Source<T>;
  /** The cache every event is applied to, before anyone is notified. */
  store: StoreWriter<T, P>;
  /**
   * Called with the parent keys an event affected, only after the store holds the event
   * (cache before notify). Not called for an empty set. Must not throw; a throw is logged.
   */
  onAffected: (parents: ReadonlySet<P>) => void;
  /** Outer retry: wait this long before reopening a stream that ended or failed. Default 1000 ms. */
  sourceRetryDelayMs?: number;
  /** Time source for the retry delay. Default {@link systemClock}. */
  clock?: Clock;
  /** Default: silent. */
  logger?: Logger;
}

const ABORTED: unique symbol = Symbol('aborted');

interface SyncWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Opens a source's stream, requires it to open with a replace (the listing), applies every source
 * event to the store and only then notifies `onAffected`; reopens the stream after
 * `sourceRetryDelayMs` whenever it ends or fails (the outer retry). The informer's `Run` /
 * `processLoop`, with `waitForSync()` as its `WaitForCacheSync` (the `SyncingSource` shape).
 */
export class StreamDriver<T, P extends ParentKey> {
  readonly #source: Source<T>;
  readonly #store: StoreWriter<T, P>;
  readonly #onAffected: (parents: ReadonlySet<P>) => void;
  readonly #retryDelayMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #synced = false;
  #state: 'idle' | 'running' | 'ended' = 'idle';
  readonly #waiters = new Set<SyncWaiter>();

  constructor(options: StreamDriverOptions<T, P>) {
    const { source, store, onAffected } = options;
    if (typeof source?.open !== 'function') throw new StreamDriverOptionsError('source must have an open(signal) method');
    if (typeof store?.apply !== 'function') throw new StreamDriverOptionsError('store must have an apply(event) method');
    if (typeof onAffected !== 'function') throw new StreamDriverOptionsError('onAffected must be a function');
    const retryDelayMs = options.sourceRetryDelayMs ?? DEFAULT_SOURCE_RETRY_DELAY_MS;
    if (!Number.isFinite(retryDelayMs) || retryDelayMs < 0) {
      throw new StreamDriverOptionsError(`sourceRetryDelayMs must be a finite number >= 0, got ${String(retryDelayMs)}`);
    }
    this.#source = source;
    this.#store = store;
    this.#onAffected = onAffected;
    this.#retryDelayMs = retryDelayMs;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /** True once the first replace has been applied to the store; stays true across reopens. */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * Pumps the source into the store until `signal` aborts, reopening the stream after every end or
   * failure. Resolves once the signal has aborted and the current stream is closed; never rejects
   * for a stream failure. A driver runs once: a second call rejects with
   * {@link StreamDriverAlreadyRunError}.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#state !== 'idle') throw new StreamDriverAlreadyRunError('StreamDriver.run() may be called once');
    this.#state = 'running';
    const log = { source: this.#source.name };
    try {
      while (!signal.aborted) {
        try {
          const outcome = await this.#pump(signal);
          if (outcome === 'aborted') break;
          this.#logger.warn({ ...log, retryDelayMs: this.#retryDelayMs }, 'source stream ended; reopening after the source retry delay');
        } catch (error) {
          if (signal.aborted) break;
          this.#logger.error({ ...log, err: error, retryDelayMs: this.#retryDelayMs }, 'source stream failed; reopening after the source retry delay');
        }
        try {
          await sleep(this.#clock, this.#retryDelayMs, signal);
        } catch {
          break; // only the signal rejects sleep
        }
      }
    } finally {
      this.#state = 'ended';
      if (!this.#synced) {
        const error = new StreamDriverStoppedError(`source "${this.#source.name}" stopped before its first sync`);
        for (const waiter of this.#waiters) waiter.reject(error);
      }
      this.#waiters.clear();
      this.#logger.debug(log, 'stream driver stopped');
    }
  }

  /**
   * Resolves once the first replace has been applied (immediately if it already has). Rejects with
   * the signal's reason if `signal` aborts first, and with {@link StreamDriverStoppedError} if
   * `run()` ends before the first sync.
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (this.#state === 'ended') {
      return Promise.reject(new StreamDriverStoppedError(`source "${this.#source.name}" stopped before its first sync`));
    }
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

  /** One stream, from open to close. Resolves 'ended' when the stream ends, 'aborted' on the signal. */
  async #pump(signal: AbortSignal): Promise<'ended' | 'aborted'> {
    const name = this.#source.name;
    this.#logger.debug({ source: name }, 'opening source stream');
    const iterator = this.#source.open(signal)[Symbol.asyncIterator]();
    // One abort listener per stream rather than one per event (this is the watch hot path).
    const race = new AbortRace(signal);
    // Set when the abort won the race against a pending next(): the iterator is still busy.
    let busy = false;
    try {
      let first = true;
      for (;;) {
        if (signal.aborted) return 'aborted';
        const result = await race.next(iterator);
        if (result === ABORTED) {
          busy = true;
          return 'aborted';
        }
        if (result.done) return 'ended';
        const event = result.value;
        if (first) {
          if (!isReplace(event)) throw new StreamDidNotOpenWithReplaceError(name, describeType(event));
          first = false;
        }
        // Cache before notify: the store holds the event before any parent key is handed on.
        const affected = this.#store.apply(event);
        if (!this.#synced && event.type === 'replace') this.#markSynced();
        if (affected.size > 0) this.#notify(affected);
      }
    } finally {
      race.dispose();
      // An async generator queues return() behind its pending next(); a source that ignores the
      // abort would then hold the driver (and the loop's stop()) forever. JS cannot cancel that
      // await, so the close is requested but not waited for; it still logs if it fails.
      if (busy) void this.#close(iterator);
      else await this.#close(iterator);
    }
  }

  #markSynced(): void {
    this.#synced = true;
    this.#logger.info({ source: this.#source.name }, 'source synced');
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters.clear();
  }

  #notify(affected: ReadonlySet<P>): void {
    try {
      this.#onAffected(affected);
    } catch (error) {
      // The store is already current; resync re-drives whatever this notification lost.
      this.#logger.error({ source: this.#source.name, err: error }, 'onAffected threw; continuing');
    }
  }

  /**
   * The single close path. Logs a failing close and never throws: a close failure must not mask the
   * error (or the abort) being unwound, nor re-raise the failure the outer retry exists to recover from.
   */
  async #close(iterator: AsyncIterator<SourceEvent<T>>): Promise<void> {
    if (typeof iterator.return !== 'function') return;
    try {
      await iterator.return();
    } catch (error) {
      this.#logger.warn({ source: this.#source.name, err: error }, 'closing source stream failed; ignored');
    }
  }
}

function isReplace(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'replace';
}

function describeType(event: unknown): string {
  if (typeof event === 'object' && event !== null && typeof (event as { type?: unknown }).type === 'string') {
    return (event as { type: string }).type;
  }
  return event === null ? 'null' : typeof event;
}

/**
 * `iterator.next()`, or {@link ABORTED} as soon as the signal aborts while it is pending, so a source
 * that is slow to notice the abort cannot hold the driver. `raceAbort` semantics, but with one abort
 * listener for the whole stream instead of an add/remove per event. A `next()` that loses the race
 * is still observed, so its later rejection is never unhandled.
 */
class AbortRace {
  readonly #signal: AbortSignal;
  /** Settles the pending race; a stale one (already settled) ignores the call. */
  #settle: ((value: typeof ABORTED) => void) | undefined;
  readonly #onAbort = (): void => this.#settle?.(ABORTED);

  constructor(signal: AbortSignal) {
    this.#signal = signal;
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Call only while the signal is not yet aborted. */
  next<V>(iterator: AsyncIterator<V>): Promise<IteratorResult<V> | typeof ABORTED> {
    const signal = this.#signal;
    return new Promise((resolve, reject) => {
      this.#settle = resolve;
      iterator.next().then(resolve, (error: unknown) => {
        // A source that rejects with the signal's own reason is reporting the abort, not failing.
        if (signal.aborted && error === signal.reason) resolve(ABORTED);
        else reject(error);
      });
    });
  }

  dispose(): void {
    this.#settle = undefined;
    this.#signal.removeEventListener('abort', this.#onAbort);
  }
}
