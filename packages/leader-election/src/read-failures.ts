import type { Logger } from '@reconcile-loop/primitives';

/**
 * The log of failed Lease reads, one streak at a time. While the apiserver (or its etcd) is down a
 * candidate fails a read on every retry; logging each at error level buries the one line that
 * matters. Invariant: the first failure of a streak is logged at error, the repeats at debug (still
 * there, with their count), and the first successful request after it logs the recovery once at
 * info, with how many reads failed and for how long; so an outage is exactly two lines above debug,
 * and a new outage starts a new streak.
 */
export class ReadFailureLog {
  #failures = 0;
  #since = 0;

  constructor(
    readonly logger: Logger | undefined,
    readonly now: () => number,
  ) {}

  /** Failed reads in the current streak (0 when the last request succeeded). */
  get failures(): number {
    return this.#failures;
  }

  /** A read of the Lease failed. */
  failed(fields: Record<string, unknown>, error: unknown): void {
    if (this.#failures++ === 0) {
      this.#since = this.now();
      this.logger?.error({ ...fields, err: error }, 'error retrieving the lease');
    } else {
      this.logger?.debug(
        { ...fields, err: error, failures: this.#failures },
        'error retrieving the lease (repeated; logged at error once per streak)',
      );
    }
  }

  /** A request to the Lease succeeded: ends a streak, if any. */
  succeeded(fields: Record<string, unknown>): void {
    if (this.#failures === 0) return;
    this.logger?.info({ ...fields, failures: this.#failures, downMs: this.now() - this.#since }, 'the lease can be read again');
    this.#failures = 0;
  }
}
