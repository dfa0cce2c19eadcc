/**
 * Typed errors. Each carries a stable string `code`, because a dual ESM/CJS install can load two
 * copies of a class and defeat `instanceof`; match on `code`.
 */

/** Invalid {@link StreamDriverOptions}: thrown by the constructor, before anything runs. */
export class StreamDriverOptionsError extends Error {
  readonly code = 'STREAM_DRIVER_INVALID_OPTIONS' as const;
  override readonly name = 'StreamDriverOptionsError';
}

/** `run()` was called a second time; a driver runs once. */
export class StreamDriverAlreadyRunError extends Error {
  readonly code = 'STREAM_DRIVER_ALREADY_RUN' as const;
  override readonly name = 'StreamDriverAlreadyRunError';
}

/** `waitForSync()` cannot succeed: the driver's `run()` ended (its signal aborted) before the first sync. */
export class StreamDriverStoppedError extends Error {
  readonly code = 'STREAM_DRIVER_STOPPED' as const;
  override readonly name = 'StreamDriverStoppedError';
}

/**
 * A stream whose first event was not a replace (the listing). Never thrown to callers: the driver
 * logs it with this error, closes the stream and reopens it after the outer retry's backoff.
 */
export class StreamDidNotOpenWithReplaceError extends Error {
  readonly code = 'STREAM_DID_NOT_OPEN_WITH_REPLACE' as const;
  override readonly name = 'StreamDidNotOpenWithReplaceError';
  constructor(
    readonly sourceName: string,
    readonly firstEventType: string,
  ) {
    super(`source "${sourceName}" opened with a ${firstEventType} event; a stream must open with a replace (the listing)`);
  }
}
