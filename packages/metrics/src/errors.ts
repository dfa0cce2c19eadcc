/** Typed errors of the metrics package; each has a stable `code`. */

/** Codes of {@link MetricsError}. */
export type MetricsErrorCode = 'METRICS_OPTIONS' | 'METRICS_DUPLICATE_CONTROLLER' | 'METRICS_OBSERVER_REUSED';

/**
 * A misuse caught at wiring time: a bad option, a second loop with a controller name already
 * registered on the same registry (two loops would silently share one series), or one observer
 * passed to two loops.
 */
export class MetricsError extends Error {
  override readonly name = 'MetricsError';
  readonly code: MetricsErrorCode;

  constructor(code: MetricsErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
