/**
 * The loop's errors. Each extends primitives' `ReconcileLoopError`, so `instanceof` (and the guards
 * below) hold across duplicate copies of this package; options errors are primitives' `OptionsError`.
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** `start()` was called on a loop that was already started (or stopped): a loop starts once. */
export class LoopAlreadyStartedError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_ALREADY_STARTED' as const;
}

/**
 * The loop was stopped. `start()` rejects with it when `stop()` interrupts the start, and it is the
 * abort reason the in-flight reconcile's signal carries during `stop()`.
 */
export class LoopStoppedError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_STOPPED' as const;
}

/** True when `error` is a {@link LoopStoppedError} (from any copy of this package). */
export function isLoopStopped(error: unknown): error is LoopStoppedError {
  return error instanceof LoopStoppedError;
}

/**
 * The leadership term ended (the gate's term signal aborted, `onLost` fired, or `isLeader()` answered
 * false before a reconcile): the abort reason of every reconcile in flight at that moment. Such a
 * reconcile is not retried and not counted as failed; the next leader re-drives every parent.
 */
export class LeadershipEndedError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_LEADERSHIP_ENDED' as const;
}

/** True when `error` is a {@link LeadershipEndedError} (from any copy of this package). */
export function isLeadershipEnded(error: unknown): error is LeadershipEndedError {
  return error instanceof LeadershipEndedError;
}

/**
 * The shard gate stopped admitting the hash of a running reconcile (the ranges moved to another
 * replica, or the gate's Lease was lost): the abort reason of that reconcile's signal. Not retried
 * and not counted as failed; the key is asked again later only while its hash is in this replica's
 * ranges.
 */
export class ShardMovedError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_SHARD_MOVED' as const;
}

/**
 * `start()` gave up: the source did not deliver its first replace (the listing) within
 * `sources.syncTimeoutMs`. `cause` is the source's last error at that moment (for a reflector, the
 * kube-client's `KubeApiError` carrying the apiserver's `Status`, e.g. a 403), or undefined when it reported none.
 */
export class SyncTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_SYNC_TIMEOUT' as const;
  constructor(
    readonly sourceName: string,
    readonly timeoutMs: number,
    cause?: unknown,
  ) {
    super(
      `source "${sourceName}" did not sync within ${timeoutMs} ms; nothing was reconciled and the loop is stopped` +
        (cause === undefined ? '' : `; last error: ${describeError(cause)}`),
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * One line for an error: `403 Forbidden: pods is forbidden: …` when it carries a Kubernetes
 * `Status` (or an HTTP `statusCode`), else its message. Never includes request headers.
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { status, statusCode } = error as {
    status?: { code?: unknown; reason?: unknown; message?: unknown } | undefined;
    statusCode?: unknown | undefined;
  };
  const code = typeof status?.code === 'number' ? status.code : typeof statusCode === 'number' ? statusCode : undefined;
  if (code === undefined) {
    // A wrapper (say a permanent error around a KubeApiError) may carry the Status on its cause.
    const { cause } = error as { cause?: unknown };
    return cause instanceof Error && cause !== error && !(error instanceof SyncTimeoutError) && hasStatus(cause)
      ? `${error.message} (${describeError(cause)})`
      : error.message;
  }
  // A permanent error whose own message already names the HTTP status (the reflector's ListRejectedError
  // names the source, the Status and the request) describes itself better than the bare Status does.
  if ((error as { permanent?: unknown }).permanent === true && new RegExp(`\\b${code}\\b`).test(error.message))
    return error.message;
  const reason = typeof status?.reason === 'string' && status.reason !== '' ? ` ${status.reason}` : '';
  const message = typeof status?.message === 'string' && status.message !== '' ? status.message : error.message;
  return `${code}${reason}: ${message}`;
}

/**
 * A reconcile ran longer than `controller.reconcileTimeoutMs`. It is the abort reason of that reconcile's
 * signal, and the failure the retry scheduler backs off from.
 */
export class ReconcileTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_RECONCILE_TIMEOUT' as const;
  constructor(
    readonly parentKey: string,
    readonly timeoutMs: number,
  ) {
    super(`reconcile of parent key ${parentKey} did not finish within ${timeoutMs} ms`);
  }
}

/**
 * `stop()` was called from inside a reconcile that is still running. The stop goes ahead, but its
 * promise rejects with this instead of waiting: waiting would wait for the very reconcile that is
 * awaiting it. The rejection is pre-handled, so `void loop.stop()` is the way to stop from a reconcile.
 */
export class StopInsideReconcileError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_STOP_INSIDE_RECONCILE' as const;
  constructor() {
    super(
      'stop() cannot be awaited inside reconcile: it waits for the in-flight reconcile, which is the caller. ' +
        'The stop has begun; write `void loop.stop()` and return from reconcile.',
    );
  }
}

function hasStatus(error: Error): boolean {
  const { status, statusCode } = error as { status?: { code?: unknown }; statusCode?: unknown };
  return typeof status?.code === 'number' || typeof statusCode === 'number';
}

/**
 * Thrown (or rejected) from a reconcile to say that retrying cannot help — the spec is invalid, a
 * quota is permanently exceeded: controller-runtime's `reconcile.TerminalError`. The key is not
 * retried (its backoff is forgotten), the error is logged at error level and counted. A later event,
 * resync or `enqueue` still reconciles the key again. A `TerminalError` anywhere in an error's
 * `cause` chain counts too (controller-runtime matches it with `errors.Is`).
 */
export class TerminalError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_TERMINAL' as const;
}

/** Whether `error` is, or wraps (through `cause`), a {@link TerminalError} (from any copy of this package). */
export function isTerminalError(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    if (e instanceof TerminalError) return true;
    seen.add(e);
  }
  return false;
}

/**
 * A reconcile returned something that is not a result: not `undefined`, and not an object whose
 * `requeueAfterMs` is absent or a finite number (at most 2³¹−1). It counts as a failure of that
 * reconcile, so the mistake is retried with backoff and visible in the log instead of silently ignored.
 */
export class InvalidReconcileResultError extends ReconcileLoopError {
  readonly code = 'RL_LOOP_INVALID_RESULT' as const;
  constructor(
    readonly parentKey: string,
    readonly result: unknown,
  ) {
    super(
      `reconcile of parent key ${parentKey} returned ${describeValue(result)}; ` +
        'return nothing, or { requeueAfterMs } with a finite number of milliseconds <= 2147483647',
    );
  }
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return `${typeof value} ${String(value)}`;
  const { requeueAfterMs } = value as { requeueAfterMs?: unknown };
  return `an object with requeueAfterMs ${typeof requeueAfterMs === 'number' ? requeueAfterMs : typeof requeueAfterMs}`;
}
