import type { Status } from '@reconcile-loop/k8s-types';
import { isKubeApiError } from '@reconcile-loop/kube-client';

/**
 * How the reflector reads a failure. Kept apart from the state machine so each rule is one
 * predicate with one test.
 */

/**
 * True when the `Status` (or the HTTP status) says the cursor is gone: code 410, or a reason
 * `Expired` / `Gone` on a `Status` whose code is absent or 410. A reason contradicted by another
 * code (say 500 `Expired`) is not trusted: that failure is retried from the cursor, and a cursor
 * that really died is answered 410 on the retry.
 */
export function isCursorExpired(status: Status | undefined, httpStatus?: number): boolean {
  if (httpStatus === 410 || status?.code === 410) return true;
  const code = httpStatus ?? status?.code;
  return code === undefined && (status?.reason === 'Expired' || status?.reason === 'Gone');
}

/**
 * True when the cursor is from the future (a rolled-back or lagging backend): code 504, or a cause
 * whose wire `reason` (Go's `StatusCause.Type`) is `ResourceVersionTooLarge`. Go's
 * `isTooLargeResourceVersionError` looks in `Details.Causes[].Type`, which JSON spells
 * `details.causes[].reason`; the top-level `Status.reason` is only ever `Timeout`.
 */
export function isCursorTooLarge(status: Status | undefined, httpStatus?: number): boolean {
  if (httpStatus === 504 || status?.code === 504) return true;
  return status?.details?.causes.some((cause) => cause.reason === 'ResourceVersionTooLarge') ?? false;
}

/** How apimachinery words a field error on the cursor: `field.Invalid(field.NewPath("resourceVersion"), ...)`. */
const INVALID_CURSOR = /\bresourceVersion: Invalid value\b/;

/**
 * True when a WATCH was refused for its cursor: answered 400 or 422 (with a fixed scope that
 * LISTed fine, the only parameter left to refuse is the cursor, e.g. `resourceVersion: "abc"` from a
 * broken bookmark), or any Status saying the resourceVersion is invalid — kube-apiserver 1.35
 * answers an unparseable cursor with **HTTP 500** and the message `resourceVersion: Invalid value:
 * "abc": strconv.ParseUint: ...` (pinned by the e2e layer), which a code-only rule would retry
 * forever. Retrying from the same cursor is refused forever, so the cursor is dropped and the
 * reflector relists.
 */
export function isCursorRejected(status: Status | undefined, httpStatus?: number): boolean {
  const code = httpStatus ?? status?.code;
  if (code === 400 || code === 422) return true;
  if (status?.message !== undefined && INVALID_CURSOR.test(status.message)) return true;
  return (
    status?.details?.causes.some((cause) => cause.field === 'resourceVersion' || cause.field === 'metadata.resourceVersion') ??
    false
  );
}

/** What a failed WATCH leads to. */
export type WatchVerdict = 'relist-expired' | 'relist-too-large' | 'relist-rejected' | 'retry';

/** Reads a failed WATCH (HTTP status or in-band ERROR frame). */
export function watchVerdict(status: Status | undefined, httpStatus?: number): WatchVerdict {
  if (isCursorExpired(status, httpStatus)) return 'relist-expired';
  if (isCursorTooLarge(status, httpStatus)) return 'relist-too-large';
  if (isCursorRejected(status, httpStatus)) return 'relist-rejected';
  return 'retry';
}

/** A `Retry-After` the failure carries (header or `details.retryAfterSeconds`), in ms. */
export function retryAfterMs(error: unknown): number | undefined {
  if (isKubeApiError(error)) return error.retryAfterSeconds === undefined ? undefined : error.retryAfterSeconds * 1000;
  const status = (error as { status?: Status } | null)?.status;
  const seconds = status?.details?.retryAfterSeconds;
  return seconds === undefined ? undefined : seconds * 1000;
}

/**
 * A short stable description of a failure, compared to decide whether a failure "changed" (logged
 * again) or repeats (logged at debug only): the error's code plus the HTTP status and reason.
 */
export function failureSignature(error: unknown): string {
  if (isKubeApiError(error)) return `${error.code}:${error.statusCode}:${error.reason}`;
  const code = (error as { code?: unknown } | null)?.code;
  const name = error instanceof Error ? error.name : typeof error;
  return `${typeof code === 'string' ? code : name}:${(error as { status?: Status } | null)?.status?.code ?? ''}`;
}
