/**
 * Warm standby: the loop's view of leadership. Sources sync on every replica; workers dispatch only
 * inside a term of the {@link LeaderGate}. A term begins when `waitForLeadership` resolves (and the
 * gate still answers `isLeader()`), and ends at the first of: the term's signal aborts, `onLost`
 * fires, a worker finds `isLeader()` false, or the loop stops. Its end aborts every in-flight
 * reconcile; the next term re-drives every parent once (level-triggered).
 *
 * The loop imports no Kubernetes package: the gate is structural, and `LeaderElector` of
 * `@reconcile-loop/leader-election` satisfies it as is.
 */
import { setMaxListeners } from 'node:events';
import { Backoff, OptionsError, raceAbort, sleep, type BackoffPolicy, type Clock, type Logger } from '@reconcile-loop/primitives';
import { LeadershipEndedError, LoopStoppedError } from './errors.js';

/**
 * What the loop needs from a leader elector; `LeaderElector` of `@reconcile-loop/leader-election`
 * has exactly these members (leader-election does not depend on the loop, so the match is structural).
 */
export interface LeaderGate {
  /**
   * True only while this replica may act as leader. Called synchronously right before each
   * reconcile, so it must be computed from the clock on every call, not read from a flag a timer
   * flips (a frozen-then-resumed process must answer false before any of its timers ran).
   */
  isLeader(): boolean;
  /** Resolves once this replica leads, with the term's signal (aborted when the term ends) if the gate has one. */
  waitForLeadership(signal?: AbortSignal): Promise<AbortSignal | void>;
  /** Calls `listener` each time leadership is lost; returns the unsubscribe function. */
  onLost(listener: (reason: unknown) => void): () => void;
  /** Optional: work of the current term (each reconcile); a graceful release waits for it to settle. */
  track?(work: Promise<unknown>): void;
}

/**
 * After a failed or empty `waitForLeadership`, ask again after 1 s, doubling up to 30 s; a term that
 * begins resets it. The same shape as a source's default retry: a stopped elector is asked about as
 * often as a dead stream is reopened.
 */
export const LEADERSHIP_RETRY: BackoffPolicy = Object.freeze({ initialMs: 1_000, maxMs: 30_000 });

interface Term {
  readonly controller: AbortController;
  readonly dispose: () => void;
}

/** @throws {OptionsError} when `gate` lacks a method. */
export function validateLeaderGate(gate: unknown): void {
  if (gate === undefined) return;
  const g = gate as Partial<LeaderGate> | null;
  for (const method of ['isLeader', 'waitForLeadership', 'onLost'] as const) {
    if (typeof g?.[method] !== 'function')
      throw new OptionsError('ReconcileLoop', `leadership.gate.${method} must be a function`);
  }
  if (g!.track !== undefined && typeof g!.track !== 'function')
    throw new OptionsError('ReconcileLoop', 'leadership.gate.track must be a function');
}

export interface LeadershipOptions {
  gate: LeaderGate;
  clock: Clock;
  logger: Logger;
  /** Workers: each running reconcile listens on the term's signal once. */
  concurrency: number;
  /** Called at the start of every term, before any worker is woken: enqueue every parent. */
  onTerm: () => void;
}

export class Leadership {
  readonly #o: LeadershipOptions;
  #term: Term | undefined;
  /** Workers waiting for a term; resolved (and replaced) when one begins. */
  #waiting: { promise: Promise<void>; resolve: () => void } = deferred();
  #terms = 0;

  constructor(options: LeadershipOptions) {
    this.#o = options;
  }

  /** In a term and the gate agrees now. */
  get leading(): boolean {
    return this.#term !== undefined && this.#isLeader();
  }

  /** Terms begun so far. */
  get terms(): number {
    return this.#terms;
  }

  /**
   * Runs terms until `signal` aborts: waits for leadership, begins a term, waits for its end.
   * Never rejects; a gate failure is logged and asked again after a backoff.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { gate, logger } = this.#o;
    const backoff = new Backoff(LEADERSHIP_RETRY);
    while (!signal.aborted) {
      let termSignal: AbortSignal | void;
      try {
        termSignal = await raceAbort(gate.waitForLeadership(signal), signal);
      } catch (error) {
        if (signal.aborted) break;
        const retryInMs = backoff.next();
        logger.error({ err: error, retryInMs }, 'waiting for leadership failed; asking again after a delay');
        if (!(await this.#sleep(retryInMs, signal))) break;
        continue;
      }
      if (signal.aborted) break;
      if (termSignal?.aborted || !this.#isLeader()) {
        // A term over before it began (or a gate that resolves without leading): no busy loop.
        logger.debug({}, 'leadership ended before the term began; waiting again');
        if (!(await this.#sleep(backoff.next(), signal))) break;
        continue;
      }
      backoff.reset();
      const ended = this.#begin(termSignal ?? undefined, signal);
      await ended;
    }
    this.end(signal.reason);
  }

  /**
   * The term's signal, once one is active (at once when it is); rejects when `signal` aborts.
   */
  async term(signal: AbortSignal): Promise<AbortSignal> {
    for (;;) {
      const term = this.#term;
      if (term !== undefined) return term.controller.signal;
      await raceAbort(this.#waiting.promise, signal);
    }
  }

  /**
   * The synchronous check right before a reconcile: the gate's `isLeader()` now. False ends the
   * local term at once (in-flight reconciles aborted) without waiting for `onLost`.
   */
  confirm(termSignal: AbortSignal): boolean {
    if (termSignal.aborted) return false;
    if (this.#isLeader()) return true;
    this.end(new LeadershipEndedError('isLeader() answered false before a reconcile'));
    return false;
  }

  /** Hands a reconcile's settling to the gate (a graceful release waits for it). */
  track(work: Promise<unknown>): void {
    try {
      this.#o.gate.track?.(work);
    } catch (error) {
      this.#o.logger.error({ err: error }, 'leadership.gate.track threw; ignored');
    }
  }

  /** Ends the current term, if any: aborts its signal (every in-flight reconcile's too). */
  end(reason: unknown): void {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    term.dispose();
    const error =
      reason instanceof LeadershipEndedError || reason instanceof LoopStoppedError
        ? reason
        : new LeadershipEndedError('leadership lost', { cause: reason });
    this.#o.logger.info({ reason: (error as Error)?.message }, 'leadership term ended: dispatching stopped, caches stay warm');
    term.controller.abort(error);
  }

  #begin(termSignal: AbortSignal | undefined, loopSignal: AbortSignal): Promise<void> {
    const controller = new AbortController();
    // One listener per running reconcile plus this term's own: raise Node's leak warning above that bound only.
    setMaxListeners(2 * this.#o.concurrency + 10, controller.signal);
    const ended = new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    const onTermEnd = (): void => this.end(termSignal?.reason);
    const onStop = (): void => this.end(loopSignal.reason);
    termSignal?.addEventListener('abort', onTermEnd, { once: true });
    loopSignal.addEventListener('abort', onStop, { once: true });
    let unsubscribe: () => void = () => {};
    const dispose = (): void => {
      termSignal?.removeEventListener('abort', onTermEnd);
      loopSignal.removeEventListener('abort', onStop);
      try {
        unsubscribe();
      } catch (error) {
        this.#o.logger.error({ err: error }, 'leadership.gate.onLost unsubscribe threw; ignored');
      }
    };
    this.#term = { controller, dispose };
    this.#terms += 1;
    try {
      unsubscribe = this.#o.gate.onLost((reason) => this.end(reason));
    } catch (error) {
      this.#o.logger.error({ err: error }, 'leadership.gate.onLost threw; the term ends on isLeader() or the term signal only');
    }
    this.#o.logger.info({ term: this.#terms }, 'leading: re-driving every parent');
    try {
      this.#o.onTerm();
    } catch (error) {
      this.#o.logger.error({ err: error }, 're-driving parents at the start of a term failed');
    }
    const waiting = this.#waiting;
    this.#waiting = deferred();
    waiting.resolve();
    return ended;
  }

  #isLeader(): boolean {
    try {
      return this.#o.gate.isLeader() === true;
    } catch (error) {
      this.#o.logger.error({ err: error }, 'leadership.gate.isLeader threw; treated as not leading');
      return false;
    }
  }

  /** False when `signal` aborted first. */
  #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    return sleep(this.#o.clock, ms, signal).then(
      () => true,
      () => false,
    );
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
