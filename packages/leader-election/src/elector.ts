import { isConflict, isAlreadyExists } from '@reconcile-loop/kube-client/errors';
import type { Clock } from '@reconcile-loop/primitives';
import { ElectorAlreadyRunningError, LeadershipLostError, LeadershipWaitTimeoutError } from './errors.js';
import type { ResourceLock } from './lease-lock.js';
import { checkOptions, JITTER_FACTOR, resolveTimings, type LeaderElectorOptions, type ResolvedTimings } from './options.js';
import { formatMicroTime, LeaseObservation, type LeaderElectionRecord } from './record.js';
import { abortReason, FailureStreak, sleep, systemClock, type Logger, type TimerOptions } from '@reconcile-loop/primitives';
import { settledWithin } from './wait.js';

/** How a leader's health probe reads (client-go's `HealthzAdaptor`). */
export interface LeaderHealth {
  readonly healthy: boolean;
  /** Why not, when unhealthy. */
  readonly reason?: string | undefined;
}

/** client-go controller-manager's `--leader-elect` healthz tolerance: 20 s past the lease duration. */
export const DEFAULT_HEALTH_TOLERANCE_MS = 20_000;

/**
 * Every wait of the elector keeps Node alive: a standby whose only work is waiting for its next try
 * is doing its job, and an unref'd wait would let Node exit under a pending `run()` (exit code 13,
 * "unsettled top-level await").
 */
const KEEP_ALIVE: TimerOptions = Object.freeze({ keepAlive: true });

/** One leadership term: from a successful acquire to the step-down. */
interface Term {
  readonly controller: AbortController;
  /** When the last successful acquire/renew was SENT: the write committed after this instant. */
  renewSentAt: number;
  /** When its answer arrived (the health check's reference, as client-go's `observedTime`). */
  renewObservedAt: number;
  deadlineTimer: unknown;
  readonly work: Set<Promise<unknown>>;
}

interface Waiter {
  resolve(signal: AbortSignal): void;
  reject(error: unknown): void;
}

/**
 * Leader election with client-go's semantics on a {@link ResourceLock} (usually a Lease).
 *
 * Invariant (never two leaders, see the README): a candidate takes over only when the record it
 * observed has not changed for `leaseDuration` on ITS clock since it observed it; a leader counts
 * its renew deadline from SENDING its last successful write, which committed no earlier, so a
 * candidate observed that write no earlier either. `isLeader()` turns false at
 * `renewSentAt + renewDeadline`, a full `leaseDuration − renewDeadline` before any candidate can
 * take over, and it is computed from the clock, so a process frozen past its deadline answers
 * false on its very first call after resuming, before any timer of its own has run.
 *
 * `isLeader()`, `waitForLeadership()`, `onLost()` and `track()` are the loop's `LeaderGate`
 * (structurally: this package does not depend on the loop), so an elector drives a loop as is.
 */
export class LeaderElector {
  readonly timings: ResolvedTimings;
  readonly #lock: ResourceLock;
  readonly #clock: Clock;
  readonly #wallClock: () => number;
  readonly #random: () => number;
  readonly #logger: Logger | undefined;
  /**
   * The failed Lease reads of one outage, as one streak: the first at error, the repeats at debug,
   * the first successful request after them once at info (`the lease can be read again`).
   */
  readonly #readFailures: FailureStreak;
  readonly #releaseOnCancel: boolean;
  readonly #options: LeaderElectorOptions;
  /** The record as last observed and when it last changed, on this replica's clock: the only base of expiry. */
  readonly #observation = new LeaseObservation();
  #reportedLeader: string | undefined;
  #term: Term | undefined;
  #running = false;
  readonly #waiters = new Set<Waiter>();
  readonly #lostListeners = new Set<(error: LeadershipLostError) => void>();

  constructor(options: LeaderElectorOptions) {
    checkOptions(options);
    this.timings = resolveTimings(options);
    this.#options = options;
    this.#lock = options.lock;
    this.#clock = options.clock ?? systemClock;
    this.#wallClock = options.wallClock ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#logger = options.logger;
    this.#readFailures = new FailureStreak({
      logger: options.logger,
      clock: this.#clock,
      failure: 'error retrieving the lease',
      recovery: 'the lease can be read again',
    });
    this.#releaseOnCancel = options.releaseOnCancel ?? true;
  }

  /** This candidate's identity. */
  get identity(): string {
    return this.#lock.identity;
  }

  /** The holder as last observed (`''` released, `undefined` never read). */
  get leader(): string | undefined {
    return this.#observation.record?.holderIdentity;
  }

  /** The record as last observed, and when (on this replica's clock). */
  get observed(): { readonly record: LeaderElectionRecord; readonly observedAt: number } | undefined {
    const record = this.#observation.record;
    return record && { record, observedAt: this.#observation.observedAt };
  }

  isLeader(): boolean {
    const term = this.#term;
    return term !== undefined && this.#clock.now() < term.renewSentAt + this.timings.renewDeadlineMs;
  }

  /**
   * client-go's `Check`: a replica that believes it leads but has not renewed for longer than
   * `leaseDuration + toleranceMs` is unhealthy. The step-down is timer-driven, so this only fires
   * when the event loop is stuck (or a callback blocks it); a standby is always healthy.
   */
  check(toleranceMs = DEFAULT_HEALTH_TOLERANCE_MS): LeaderHealth {
    const term = this.#term;
    if (term === undefined) return { healthy: true };
    const since = this.#clock.now() - term.renewObservedAt;
    if (since > this.timings.leaseDurationMs + toleranceMs) {
      return {
        healthy: false,
        reason: `failed election to renew leadership on lease ${this.#lock.describe()}: last renewal ${Math.round(since)} ms ago`,
      };
    }
    return { healthy: true };
  }

  waitForLeadership(signal?: AbortSignal, timeoutMs?: number): Promise<AbortSignal> {
    const term = this.#term;
    if (term !== undefined && this.isLeader()) return Promise.resolve(term.controller.signal);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<AbortSignal>((resolve, reject) => {
      let timer: unknown;
      const cleanup = (): void => {
        this.#waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
        if (timer !== undefined) this.#clock.clearTimeout(timer);
      };
      const waiter: Waiter = {
        resolve: (s) => (cleanup(), resolve(s)),
        reject: (e) => (cleanup(), reject(e)),
      };
      const onAbort = (): void => waiter.reject(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined)
        timer = this.#clock.setTimeout(() => waiter.reject(new LeadershipWaitTimeoutError(timeoutMs)), timeoutMs, KEEP_ALIVE);
      this.#waiters.add(waiter);
    });
  }

  onLost(listener: (error: LeadershipLostError) => void): () => void {
    this.#lostListeners.add(listener);
    return () => this.#lostListeners.delete(listener);
  }

  /**
   * Adds `work` to the current term's leading work: on a graceful stop with `releaseOnCancel`, the
   * Lease is released only once all of it has settled. Ignored when not leading.
   */
  track(work: Promise<unknown>): void {
    const term = this.#term;
    if (term === undefined) return;
    term.work.add(work);
    void work.then(
      () => term.work.delete(work),
      () => term.work.delete(work),
    );
  }

  /**
   * Competes for the lock until `signal` aborts: acquire (every jittered retry period), lead and
   * renew; a lost term returns this replica to standby and it competes again (client-go's `Run`
   * returns after one term). Resolves once stopped (after the release, when configured); never
   * rejects for an apiserver failure (each is logged and retried).
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new ElectorAlreadyRunningError();
    this.#running = true;
    try {
      while (!signal.aborted) {
        if (!(await this.#acquire(signal))) break;
        await this.#lead(signal);
      }
    } finally {
      this.#running = false;
      this.#stepDown('stopped', 'the elector stopped');
      const stopped = new LeadershipLostError('stopped', 'the elector stopped');
      for (const waiter of [...this.#waiters]) waiter.reject(stopped);
    }
  }

  /** Tries every jittered retry period until acquired (true) or aborted (false). */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    this.#logger?.info({ lock: this.#lock.describe(), identity: this.identity }, 'attempting to acquire leader lease');
    for (;;) {
      const attempt = await this.#tryAcquireOrRenew(signal, this.#clock.now() + this.timings.renewDeadlineMs, undefined);
      this.#reportTransition();
      if (attempt.ok && signal.aborted) {
        // Stopped while the winning write was in flight: no term starts, and what it took is handed back.
        if (this.#releaseOnCancel) await this.#release();
        return false;
      }
      if (attempt.ok) {
        // An answer later than the renew deadline after sending gives a term already over: try again.
        if (this.#clock.now() < attempt.sentAt + this.timings.renewDeadlineMs) {
          this.#startTerm(attempt.sentAt);
          return true;
        }
        this.#logger?.warn(
          { lock: this.#lock.describe() },
          'acquired the lease, but the answer came after the renew deadline: not leading on it',
        );
      }
      const waitMs = this.timings.retryPeriodMs * (1 + this.#random() * JITTER_FACTOR);
      try {
        await sleep(this.#clock, waitMs, { signal, ...KEEP_ALIVE });
      } catch {
        return false;
      }
    }
  }

  /** Renews every retry period until the term ends (lost: back to standby) or `signal` aborts (graceful stop). */
  async #lead(signal: AbortSignal): Promise<void> {
    const term = this.#term!;
    const both = AbortSignal.any([signal, term.controller.signal]);
    while (this.#term === term) {
      try {
        await sleep(this.#clock, this.timings.retryPeriodMs, { signal: both, ...KEEP_ALIVE });
      } catch {
        break;
      }
      const deadlineAt = term.renewSentAt + this.timings.renewDeadlineMs;
      const attempt = await this.#tryAcquireOrRenew(both, deadlineAt, term.controller.signal);
      this.#reportTransition();
      if (this.#term !== term) break;
      if (attempt.ok && this.#clock.now() < deadlineAt) {
        term.renewSentAt = attempt.sentAt;
        term.renewObservedAt = this.#clock.now();
        this.#armDeadline(term);
      } else if (attempt.ok) {
        // A success answered after the deadline must not revive a term isLeader() already ended.
        this.#stepDown('renew-deadline', 'the renewal was answered after the renew deadline');
      } else if (
        this.#observation.record !== undefined &&
        this.#observation.record.holderIdentity !== this.identity &&
        this.#observation.record.holderIdentity !== '' &&
        this.#leaseValid()
      ) {
        this.#stepDown('other-holder', `the lease is held by ${this.#observation.record.holderIdentity}`);
      }
      // Any other failure: retry after a retry period; the deadline timer ends the term if none succeeds.
    }
    if (signal.aborted && this.#term === term) await this.#gracefulStop(term);
  }

  async #gracefulStop(term: Term): Promise<void> {
    const deadlineAt = term.renewSentAt + this.timings.renewDeadlineMs;
    this.#stepDown('stopped', 'the elector was stopped');
    if (!this.#releaseOnCancel) return;
    // Release only once the leading work stopped: a standby takes over about a retry period after
    // the release. Work still running at the renew deadline keeps the lease until it expires.
    if (!(await settledWithin(this.#clock, term.work, deadlineAt - this.#clock.now()))) {
      this.#logger?.warn(
        { lock: this.#lock.describe(), pending: term.work.size },
        'leading work did not settle before the renew deadline: not releasing, the lease will expire',
      );
      return;
    }
    await this.#release();
  }

  /** client-go's `release`: no holder, a 1 s duration, the transitions count kept. */
  async #release(): Promise<void> {
    const observed = this.#observation.record;
    if (observed === undefined || observed.holderIdentity !== this.identity) return;
    const now = formatMicroTime(this.#wallClock());
    const record: LeaderElectionRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: observed.leaseTransitions,
    };
    try {
      await this.#lock.update(record, { timeoutMs: this.timings.renewDeadlineMs });
      this.#setObserved(record);
      this.#reportTransition();
      this.#logger?.info({ lock: this.#lock.describe() }, 'released the leader lease');
    } catch (error) {
      this.#logger?.error({ lock: this.#lock.describe(), err: error }, 'failed to release the leader lease; it will expire');
    }
  }

  /**
   * client-go's `tryAcquireOrRenew`, with one deadline (`deadlineAt`) for all of its requests.
   * `signal` aborts the reads; a write is aborted only by `writeSignal` (the term's end) and its
   * deadline, never by the stop: the apiserver commits a write whether or not its answer is still
   * awaited, so a write cut off by a SIGTERM could take the Lease (or move its resourceVersion)
   * without this replica knowing, and the release would be skipped or refused with a 409 — the
   * Lease then held for a whole lease duration by a process that has exited.
   */
  async #tryAcquireOrRenew(
    signal: AbortSignal,
    deadlineAt: number,
    writeSignal: AbortSignal | undefined,
  ): Promise<{ ok: boolean; sentAt: number }> {
    const sentAt = this.#clock.now();
    const fail = { ok: false, sentAt };
    const call = (): { signal: AbortSignal; timeoutMs: number } | undefined => {
      const timeoutMs = deadlineAt - this.#clock.now();
      return timeoutMs > 0 ? { signal, timeoutMs } : undefined;
    };
    const write = (): { signal?: AbortSignal; timeoutMs: number } | undefined => {
      if (signal.aborted && writeSignal === undefined) return undefined; // not sent: nothing to hand back
      const timeoutMs = deadlineAt - this.#clock.now();
      if (timeoutMs <= 0) return undefined;
      return writeSignal === undefined ? { timeoutMs } : { signal: writeSignal, timeoutMs };
    };
    const now = formatMicroTime(this.#wallClock());
    const desired = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 0,
    };
    const log = { lock: this.#lock.describe(), identity: this.identity };
    // 1. Fast path: a leader updates the record it last wrote; the resourceVersion guards it.
    const observed = this.#observation.record;
    if (this.#term !== undefined && observed?.holderIdentity === this.identity && this.#leaseValid()) {
      const record = { ...desired, acquireTime: observed.acquireTime, leaseTransitions: observed.leaseTransitions };
      const options = write();
      if (options === undefined) return fail;
      try {
        await this.#lock.update(record, options);
        this.#readFailures.succeeded(log);
        this.#setObserved(record);
        return { ok: true, sentAt };
      } catch (error) {
        if (signal.aborted) return fail;
        this.#logger?.warn({ ...log, err: error }, 'failed to update the lease optimistically, falling back to a read');
      }
    }
    // 2. Read (or create) the record.
    let current: LeaderElectionRecord | undefined;
    try {
      const options = call();
      if (options === undefined) return fail;
      current = await this.#lock.get(options);
      this.#readFailures.succeeded(log);
    } catch (error) {
      if (!signal.aborted) this.#readFailures.failed(error, log);
      return fail;
    }
    if (current === undefined) {
      try {
        const options = write();
        if (options === undefined) return fail;
        await this.#lock.create(desired, options);
        this.#setObserved(desired);
        return { ok: true, sentAt };
      } catch (error) {
        if (!signal.aborted)
          this.#logger?.[isAlreadyExists(error) ? 'info' : 'error']({ ...log, err: error }, 'error creating the lease');
        return fail;
      }
    }
    // 3. Expiry is judged by when THIS replica saw the record change, never by its timestamps.
    this.#observation.update(current, this.#clock.now());
    if (current.holderIdentity !== '' && current.holderIdentity !== this.identity && this.#leaseValid()) {
      this.#logger?.debug({ ...log, holder: current.holderIdentity }, 'the lease is held and has not yet expired');
      return fail;
    }
    // 4. Take it over (or renew it through the slow path).
    const mine = current.holderIdentity === this.identity;
    const record = mine
      ? { ...desired, acquireTime: current.acquireTime, leaseTransitions: current.leaseTransitions }
      : { ...desired, leaseTransitions: current.leaseTransitions + 1 };
    try {
      const options = write();
      if (options === undefined) return fail;
      await this.#lock.update(record, options);
      this.#setObserved(record);
      return { ok: true, sentAt };
    } catch (error) {
      if (!signal.aborted) {
        // 409: another candidate wrote first; it won this round.
        this.#logger?.[isConflict(error) ? 'info' : 'error']({ ...log, err: error }, 'failed to update the lease');
      }
      return fail;
    }
  }

  #leaseValid(): boolean {
    return this.#observation.validAt(this.#clock.now());
  }

  #setObserved(record: LeaderElectionRecord): void {
    this.#observation.set(record, this.#clock.now());
  }

  #reportTransition(): void {
    const holder = this.#observation.record?.holderIdentity;
    if (holder === undefined || holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    this.#logger?.info({ lock: this.#lock.describe(), leader: holder }, 'new leader observed');
    this.#guard('onNewLeader', () => this.#options.onNewLeader?.(holder));
  }

  #startTerm(sentAt: number): void {
    const term: Term = {
      controller: new AbortController(),
      renewSentAt: sentAt,
      renewObservedAt: this.#clock.now(),
      deadlineTimer: undefined,
      work: new Set(),
    };
    this.#term = term;
    this.#armDeadline(term);
    this.#logger?.info({ lock: this.#lock.describe(), identity: this.identity }, 'successfully acquired lease: leading');
    for (const waiter of [...this.#waiters]) waiter.resolve(term.controller.signal);
    this.#guard('onStartedLeading', () => {
      const result = this.#options.onStartedLeading?.(term.controller.signal);
      if (result !== undefined && typeof (result as Promise<unknown>).then === 'function') {
        const work = Promise.resolve(result).catch((error: unknown) => {
          if (!term.controller.signal.aborted) this.#logger?.error({ err: error }, 'onStartedLeading rejected while leading');
        });
        this.track(work);
      }
    });
  }

  /** The step-down fires at the renew deadline even while a renewal is still in flight. */
  #armDeadline(term: Term): void {
    this.#clock.clearTimeout(term.deadlineTimer);
    const delay = term.renewSentAt + this.timings.renewDeadlineMs - this.#clock.now();
    term.deadlineTimer = this.#clock.setTimeout(
      () => {
        if (this.#term === term)
          this.#stepDown(
            'renew-deadline',
            `failed to renew the lease within the renew deadline (${this.timings.renewDeadlineMs} ms)`,
          );
      },
      delay,
      KEEP_ALIVE,
    );
  }

  /** Ends the term: the flag first (isLeader() is false from here), then the signal, then the callbacks. */
  #stepDown(reason: LeadershipLostError['reason'], message: string): void {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    this.#clock.clearTimeout(term.deadlineTimer);
    const error = new LeadershipLostError(reason, message);
    this.#logger?.[reason === 'stopped' ? 'info' : 'warn'](
      { lock: this.#lock.describe(), identity: this.identity, reason },
      `stopped leading: ${message}`,
    );
    term.controller.abort(error);
    for (const listener of [...this.#lostListeners]) this.#guard('onLost listener', () => listener(error));
    this.#guard('onStoppedLeading', () => this.#options.onStoppedLeading?.());
  }

  #guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#logger?.error({ err: error }, `${what} threw`);
    }
  }
}
