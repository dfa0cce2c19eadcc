/**
 * One stream, from open to close: the driver's inner loop. Kept apart from the retry policy so each
 * holds one idea: this file owns "cache before notify" and "every close is bounded"; the driver owns
 * when to reopen.
 */
import type { Source, SourceEvent } from '@reconcile-loop/object-store';
import type { Clock, Logger, Key } from '@reconcile-loop/primitives';
import type { StoreWriter } from './options.js';
import { StreamDidNotOpenWithReplaceError } from './errors.js';

const ABORTED: unique symbol = Symbol('aborted');
const CLOSED: unique symbol = Symbol('closed');
const noop = (): void => {};

/** How one stream ended. Times are clock ms. */
export type StreamResult =
  | { readonly end: 'aborted'; readonly openedAt: number; readonly listedAt: number | undefined }
  | { readonly end: 'ended'; readonly openedAt: number; readonly listedAt: number | undefined }
  | { readonly end: 'failed'; readonly error: unknown; readonly openedAt: number; readonly listedAt: number | undefined };

/** What the pump knows about the current (or last) stream. */
export interface PumpStatus {
  readonly open: boolean;
  readonly openedAt: number | undefined;
  /** When the current stream applied its listing; undefined until it does. */
  readonly listedAt: number | undefined;
  readonly lastReplaceAt: number | undefined;
  readonly lastEventAt: number | undefined;
}

export interface StreamPumpOptions<T, P extends Key> {
  source: Source<T>;
  store: StoreWriter<T, P>;
  onAffected: (parents: ReadonlySet<P>, type: SourceEvent<T>['type']) => void;
  /** Called after each replace has been applied to the store. */
  onListed: () => void;
  closeTimeoutMs: number;
  clock: Clock;
  logger: Logger;
}

/** Runs one stream at a time; see {@link StreamPump.run}. */
export class StreamPump<T, P extends Key> {
  readonly #o: StreamPumpOptions<T, P>;
  #open = false;
  #openedAt: number | undefined;
  #listedAt: number | undefined;
  #lastReplaceAt: number | undefined;
  #lastEventAt: number | undefined;

  constructor(options: StreamPumpOptions<T, P>) {
    this.#o = options;
  }

  get status(): PumpStatus {
    return {
      open: this.#open,
      openedAt: this.#openedAt,
      listedAt: this.#listedAt,
      lastReplaceAt: this.#lastReplaceAt,
      lastEventAt: this.#lastEventAt,
    };
  }

  /** Opens one stream and pumps it until it ends, fails or `signal` aborts; never throws. */
  async run(signal: AbortSignal): Promise<StreamResult> {
    const { source, clock, logger } = this.#o;
    const openedAt = clock.now();
    this.#openedAt = openedAt;
    this.#listedAt = undefined;
    this.#open = true;
    logger.debug({ source: source.name }, 'opening source stream');
    let iterator: AsyncIterator<SourceEvent<T>> | undefined;
    // One abort listener per stream rather than one per event (this is the watch hot path).
    const race = new AbortRace(signal);
    // Set when the abort won the race against a pending next(): the iterator is still busy.
    let busy = false;
    const result = (end: 'aborted' | 'ended'): StreamResult => ({ end, openedAt, listedAt: this.#listedAt });
    try {
      iterator = source.open(signal)[Symbol.asyncIterator]();
      let first = true;
      // Outside the loop so they can be cleared: a suspended async function keeps its locals, and
      // the last event held across the next wait would be a replace's whole listing after a LIST.
      let next: IteratorResult<SourceEvent<T>> | typeof ABORTED | undefined;
      let event: SourceEvent<T> | undefined;
      for (;;) {
        if (signal.aborted) return result('aborted');
        next = await race.next(iterator);
        if (next === ABORTED) {
          busy = true;
          return result('aborted');
        }
        if (next.done) return result('ended');
        event = next.value;
        if (first) {
          // A release may come before the listing: a sharded source whose ranges changed while no
          // stream was open removes what it no longer owns before the listing of what it owns now.
          if (!isReplace(event) && !isRelease(event))
            throw new StreamDidNotOpenWithReplaceError(source.name, describeType(event));
          if (!isRelease(event)) first = false;
        }
        this.#apply(event);
        next = undefined;
        event = undefined;
      }
    } catch (error) {
      if (signal.aborted) return result('aborted');
      return { end: 'failed', error, openedAt, listedAt: this.#listedAt };
    } finally {
      race.dispose();
      this.#open = false;
      // An async generator queues return() behind its pending next(); a source that ignores the
      // abort would then hold the driver (and the loop's stop()) forever. JS cannot cancel that
      // await, so the close is requested but not waited for; it still logs if it fails.
      if (iterator !== undefined) await this.#close(iterator, busy);
    }
  }

  #apply(event: SourceEvent<T>): void {
    const now = this.#o.clock.now();
    this.#lastEventAt = now;
    // Cache before notify: the store holds the event before anyone hears of it, and a replace
    // counts as a listing (sync) only once apply has returned; an apply that throws lists nothing.
    const affected = this.#o.store.apply(event);
    if (event.type === 'replace') {
      this.#lastReplaceAt = now;
      this.#listedAt ??= now;
      this.#o.onListed();
    }
    if (affected.size > 0) this.#notify(affected, event.type);
  }

  #notify(affected: ReadonlySet<P>, type: SourceEvent<T>['type']): void {
    try {
      this.#o.onAffected(affected, type);
    } catch (error) {
      // The store is already current; resync re-drives whatever this notification lost.
      this.#o.logger.error({ source: this.#o.source.name, err: error }, 'onAffected threw; continuing');
    }
  }

  /**
   * The single close path. Logs a failing close and never throws: a close failure must not mask the
   * error (or the abort) being unwound, nor re-raise the failure the outer retry exists to recover
   * from. Never waits unbounded: a close still pending after `closeTimeoutMs` is abandoned and logged.
   */
  async #close(iterator: AsyncIterator<SourceEvent<T>>, busy: boolean): Promise<void> {
    const { source, clock, logger, closeTimeoutMs } = this.#o;
    if (typeof iterator.return !== 'function') return;
    let closing: Promise<unknown>;
    try {
      closing = Promise.resolve(iterator.return());
    } catch (error) {
      logger.warn({ source: source.name, err: error }, 'closing source stream failed; ignored');
      return;
    }
    const closed = closing.then(
      () => CLOSED,
      (error: unknown) => {
        logger.warn({ source: source.name, err: error }, 'closing source stream failed; ignored');
        return CLOSED;
      },
    );
    if (busy) return;
    let timer: unknown;
    const deadline = new Promise<'timeout'>((resolve) => (timer = clock.setTimeout(() => resolve('timeout'), closeTimeoutMs)));
    const outcome = await Promise.race([closed, deadline]);
    clock.clearTimeout(timer);
    if (outcome === 'timeout') {
      logger.warn({ source: source.name, closeTimeoutMs }, 'source stream did not close within the close timeout; abandoned');
      closed.then(noop, noop);
    }
  }
}

function isReplace(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'replace';
}

function isRelease(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'release';
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
