/**
 * What a stream driver knows about its source, merged with what the source reports about itself
 * (`SourceHealth`, when the source has `health()`). A loop keys these by source name.
 */
import type { QuarantinedObject, SourceHealth } from '@reconcile-loop/object-store';
import type { Clock } from '@reconcile-loop/primitives';

/** A snapshot of one driven source; every time is in the driver's clock (ms). */
export interface StreamDriverHealth {
  /** The source's name. */
  readonly source: string;
  /** The first replace (the listing) has been applied; stays true across reopens. */
  readonly synced: boolean;
  /** A stream is open and has applied its listing (events flow into the store). */
  readonly streaming: boolean;
  /** When the last replace was applied (the first sync or any relist). */
  readonly lastSyncAt: number | undefined;
  /** When the last event or frame arrived (the later of the driver's and the source's own). */
  readonly lastEventAt: number | undefined;
  /**
   * The failure that explains the current trouble: the permanent error if there is one, else the
   * source's own `lastError` (with the apiserver's `Status` for a reflector), else the driver's last
   * stream failure. Cleared by the next success.
   */
  readonly lastError: unknown;
  /**
   * Failures since the last success: the larger of the source's own count and the driver's — the
   * streams that ended since the last healthy stretch, or 0 while a stream is open and listed.
   */
  readonly consecutiveFailures: number;
  /** When the current run of failures was first seen (see {@link FailureWatch}); undefined while healthy. */
  readonly failingSince: number | undefined;
  /** Delay before the next reopen when the driver is waiting to reopen, else undefined. */
  readonly retryInMs: number | undefined;
  /** Streams opened so far (1 = never reopened). */
  readonly opens: number;
  /** The failure no retry can heal: the driver stopped reopening. */
  readonly permanentError: unknown;
  /** Objects the source held out of the store because they failed validation. */
  readonly quarantined: readonly QuarantinedObject[];
  /** The source's own report, when it has `health()`. */
  readonly sourceHealth: SourceHealth | undefined;
}

/**
 * Tracks since when a source has been failing. A source's own failures (a 403 retried inside a
 * reflector) are only visible when the driver asks for its health, so their start is the first time
 * they were seen — a probe every N seconds sees it within N seconds — except on a stream that has
 * never listed, where they can only have started when it opened. Failures the driver sees itself
 * (a stream that threw) are timed exactly.
 */
export class FailureWatch {
  readonly #clock: Clock;
  #since: number | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Observes the current failure count; `earliest` bounds the start when nothing was seen before. */
  observe(failures: number, earliest?: number): number | undefined {
    if (failures <= 0) this.#since = undefined;
    else this.#since ??= earliest ?? this.#clock.now();
    return this.#since;
  }

  get since(): number | undefined {
    return this.#since;
  }
}
