import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** `run()` was called a second time; a driver runs once. */
export class StreamDriverAlreadyRunError extends ReconcileLoopError {
  readonly code = 'RL_DRIVER_ALREADY_RUN' as const;
}

/** `waitForSync()` cannot succeed: the driver's `run()` ended (its signal aborted) before the first sync. */
export class StreamDriverStoppedError extends ReconcileLoopError {
  readonly code = 'RL_DRIVER_STOPPED' as const;
}

/** True when `error` is a {@link StreamDriverStoppedError} (from any copy of this package). */
export function isDriverStopped(error: unknown): error is StreamDriverStoppedError {
  return error instanceof StreamDriverStoppedError;
}

/**
 * A stream whose first event was not a replace (the listing). Never thrown to callers: the driver
 * logs it with this error, closes the stream and reopens it after the source's backoff.
 */
export class StreamDidNotOpenWithReplaceError extends ReconcileLoopError {
  readonly code = 'RL_DRIVER_NO_INITIAL_REPLACE' as const;
  constructor(
    readonly sourceName: string,
    readonly firstEventType: string,
  ) {
    super(`source "${sourceName}" opened with a ${firstEventType} event; a stream must open with a replace (the listing)`);
  }
}
