import type { Clock } from './clock.js';
import type { Logger } from './logger.js';

/** What a {@link FailureStreak} logs with and how it tells failures apart. */
interface FailureStreakOptions {
  /** Where the lines go; undefined logs nothing (the streak still counts). */
  readonly logger: Logger | undefined;
  /** Times the streak (`since`, the recovery's `downMs`). */
  readonly clock: Pick<Clock, 'now'>;
  /** The failure lines' message: what was attempted, e.g. `error retrieving the lease`. */
  readonly failure: string;
  /** The recovery line's message, e.g. `the lease can be read again`. */
  readonly recovery: string;
  /**
   * The level of a failure that starts a streak or changes its kind. Default `error`. A failure put
   * at `info` or `debug` is routine (a 410 the reflector relists on): logged at that level every
   * time, and it alone calls for no recovery line.
   */
  readonly level?: ((error: unknown) => keyof Logger) | undefined;
  /** The kind of a failure: a failure of another kind in the same streak is logged again. Default: all alike. */
  readonly signature?: ((error: unknown) => string) | undefined;
}

/**
 * One request's failures in a row, logged once: a read retried every 2 s through an hour's outage
 * would otherwise write 1,800 warn lines per replica and bury the two that matter, when it began and
 * when it ended. Counts and times the streak for health and readiness too.
 *
 * Invariant: an outage is exactly two lines above debug: its first failure (at the `level` chosen
 * for it) and, at the first success after it, one recovery line at info with `failures` (the
 * streak's count) and `downMs` (since the first failure). Repeats are logged at debug, every failure
 * line carrying `consecutiveFailures`. A failure of a new kind in the same streak (its message or
 * `signature` differs from the last line logged above info) is a new line at its level: a 403 after
 * an hour of timeouts is news. A success resets the streak, so the next outage starts over.
 */
export class FailureStreak {
  readonly #options: FailureStreakOptions;
  #failures = 0;
  #since: number | undefined;
  #lastError: unknown;
  /** The kind of the last failure logged above info in this streak; undefined when none was. */
  #logged: string | undefined;

  constructor(options: FailureStreakOptions) {
    this.#options = options;
  }

  /** Failures since the last success (0 when it succeeded, or before any attempt). */
  get failures(): number {
    return this.#failures;
  }

  /** When the streak's first failure happened, or its request was sent (`sentAt`); undefined without a streak. */
  get since(): number | undefined {
    return this.#since;
  }

  /** The streak's last error, as thrown; undefined without a streak. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /**
   * An attempt failed: counted, logged as the invariant says with `fields`, `err` and
   * `consecutiveFailures`. `failure` replaces the constructor's message for this line (part of the
   * kind); `sentAt` is when the failed request was sent, for a streak timed from its first send.
   * Returns the failures in a row, this one included.
   */
  failed(
    error: unknown,
    fields: Record<string, unknown> = {},
    at: { readonly failure?: string | undefined; readonly sentAt?: number | undefined } = {},
  ): number {
    const { logger, clock, level, signature } = this.#options;
    const message = at.failure ?? this.#options.failure;
    if (this.#failures++ === 0) this.#since = at.sentAt ?? clock.now();
    this.#lastError = error;
    const kind = signature === undefined ? message : `${message}|${signature(error)}`;
    const chosen: keyof Logger = kind === this.#logged ? 'debug' : (level?.(error) ?? 'error');
    if (chosen === 'warn' || chosen === 'error') this.#logged = kind;
    logger?.[chosen]({ ...fields, err: error, consecutiveFailures: this.#failures }, message);
    return this.#failures;
  }

  /**
   * An attempt succeeded: ends the streak, logging the recovery (`recovery` in place of the
   * constructor's message) with `fields` once if a line above info was logged for it.
   */
  succeeded(fields: Record<string, unknown> = {}, at: { readonly recovery?: string | undefined } = {}): void {
    if (this.#failures === 0) return;
    if (this.#logged !== undefined) {
      const now = this.#options.clock.now();
      const downMs = now - (this.#since ?? now);
      this.#options.logger?.info({ ...fields, failures: this.#failures, downMs }, at.recovery ?? this.#options.recovery);
    }
    this.#failures = 0;
    this.#since = undefined;
    this.#lastError = undefined;
    this.#logged = undefined;
  }
}
