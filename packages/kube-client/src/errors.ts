import type { Status } from '@reconcile-loop/k8s-types';
import { OptionsError, ReconcileLoopError } from '@reconcile-loop/primitives';

/**
 * Typed errors of this package: each extends `ReconcileLoopError` and has an `RL_KUBE_*` code (a bad
 * option or argument is primitives' `OptionsError`). No error carries a header, a token or the
 * server URL's credentials: only the verb, the request path (with its query) and what the server said.
 */

/** The Kubernetes verbs this client issues (server-side apply is a `patch`). */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** `StatusReason` for an HTTP code when the body carried none (apimachinery's `NewGenericServerResponse`). */
const REASON_BY_CODE: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The `StatusReason`s apimachinery knows; a reason outside them falls back to the HTTP code in the `is*` helpers. */
const KNOWN_REASONS = new Set([
  'Unauthorized',
  'Forbidden',
  'NotFound',
  'AlreadyExists',
  'Conflict',
  'Gone',
  'Invalid',
  'ServerTimeout',
  'StoreReadError',
  'Timeout',
  'TooManyRequests',
  'BadRequest',
  'MethodNotAllowed',
  'NotAcceptable',
  'RequestEntityTooLarge',
  'UnsupportedMediaType',
  'InternalError',
  'Expired',
  'ServiceUnavailable',
]);

/**
 * The apiserver answered with a non-2xx status (or an in-band watch `ERROR` frame, see
 * {@link statusError}). `reason` is the `Status` reason, or the one apimachinery derives from the
 * HTTP code when the body had none.
 */
export class KubeApiError extends ReconcileLoopError {
  readonly code = 'RL_KUBE_API_ERROR' as const;
  /** The HTTP status code (the `Status` code for an in-band error). */
  readonly statusCode: number;
  /** `NotFound`, `Conflict`, `AlreadyExists`, `Invalid`, `Expired`, ... or `Unknown`. */
  readonly reason: string;
  /** The parsed `Status` body, when the response carried a readable one. */
  readonly status: Status | undefined;
  /** What was asked: the Kubernetes verb. */
  readonly verb: Verb;
  /** The request path and query (never the server's host, userinfo or any header). */
  readonly path: string;
  /** Seconds the server asked to wait (`Retry-After` or `details.retryAfterSeconds`), if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(details: {
    statusCode: number;
    status?: Status | undefined;
    verb: Verb;
    path: string;
    retryAfterSeconds?: number | undefined;
  }) {
    const { statusCode, status, verb, path } = details;
    const reason = status?.reason || REASON_BY_CODE[statusCode] || 'Unknown';
    super(`${verb} ${path}: HTTP ${statusCode} ${reason}${status?.message ? `: ${status.message}` : ''}`);
    this.statusCode = statusCode;
    this.reason = reason;
    this.status = status;
    this.verb = verb;
    this.path = path;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

/** An answer that breaks the protocol: a body that is not JSON, an object without metadata, a watch cut mid-frame. */
export class KubeProtocolError extends ReconcileLoopError {
  readonly code = 'RL_KUBE_PROTOCOL' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * One watch line longer than the frame cap (`maxFrameBytes`): the stream is ended rather than buffered
 * without bound. A reflector relists on it (reopening at the same resourceVersion would meet the same frame).
 */
export class WatchFrameTooLargeError extends ReconcileLoopError {
  readonly code = 'RL_KUBE_WATCH_FRAME_TOO_LARGE' as const;
  /** The cap, in bytes. */
  readonly maxFrameBytes: number;
  constructor(maxFrameBytes: number) {
    super(`a watch frame is longer than the ${maxFrameBytes}-byte cap (maxFrameBytes)`);
    this.maxFrameBytes = maxFrameBytes;
  }
}

/** The request's deadline passed: while waiting for the rate limiter, a `Retry-After`, or the server. */
export class KubeRequestTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_KUBE_REQUEST_TIMEOUT' as const;
  readonly verb: Verb;
  readonly path: string;
  readonly timeoutMs: number;
  constructor(verb: Verb, path: string, timeoutMs: number, during: string) {
    super(`${verb} ${path}: no answer within ${timeoutMs} ms (${during})`);
    this.verb = verb;
    this.path = path;
    this.timeoutMs = timeoutMs;
  }
}

/** The request never got an HTTP answer: connection refused or reset, TLS failure, DNS. `cause` is the transport's error. */
export class KubeTransportError extends ReconcileLoopError {
  readonly code = 'RL_KUBE_TRANSPORT' as const;
  readonly verb: Verb;
  readonly path: string;
  constructor(verb: Verb, path: string, cause: unknown) {
    super(`${verb} ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.verb = verb;
    this.path = path;
  }
}

/**
 * True for an error this package raises itself (an answer, a protocol break, a deadline, a transport
 * failure, a refused option), from any copy of it: what a body reader passes through unwrapped.
 */
export function isKubeClientError(error: unknown): boolean {
  return (
    error instanceof KubeApiError ||
    error instanceof KubeProtocolError ||
    error instanceof WatchFrameTooLargeError ||
    error instanceof KubeRequestTimeoutError ||
    error instanceof KubeTransportError ||
    (error instanceof OptionsError && error.component === 'KubeClient')
  );
}

/**
 * A {@link KubeApiError} for a `Status` that arrived in-band (a watch `ERROR` frame), so the same
 * `is*` helpers classify it.
 */
export function statusError(status: Status, verb: Verb, path: string): KubeApiError {
  return new KubeApiError({
    statusCode: status.code ?? 500,
    status,
    verb,
    path,
    retryAfterSeconds: status.details?.retryAfterSeconds,
  });
}

/** True when `error` is a {@link KubeApiError}, from any copy of this package. */
export function isKubeApiError(error: unknown): error is KubeApiError {
  return error instanceof KubeApiError;
}

function reasonIs(error: unknown, reason: string, httpCode?: number): boolean {
  if (!isKubeApiError(error)) return false;
  if (error.reason === reason) return true;
  // apimachinery: an unknown reason is classified by the HTTP code alone.
  return httpCode !== undefined && !KNOWN_REASONS.has(error.reason) && error.statusCode === httpCode;
}

/** apimachinery's older rule, kept by `IsTooManyRequests` and `IsRequestEntityTooLargeError`: the code decides whatever the reason. */
function reasonOrCode(error: unknown, reason: string, httpCode: number): boolean {
  return isKubeApiError(error) && (error.reason === reason || error.statusCode === httpCode);
}

/** 404 `NotFound` (apimachinery `IsNotFound`). */
export const isNotFound = (error: unknown): boolean => reasonIs(error, 'NotFound', 404);
/** 409 `AlreadyExists` on create (`IsAlreadyExists`); not a {@link isConflict}. */
export const isAlreadyExists = (error: unknown): boolean => reasonIs(error, 'AlreadyExists');
/** 409 `Conflict`: a stale `resourceVersion`, a failed delete precondition, an apply conflict (`IsConflict`). */
export const isConflict = (error: unknown): boolean => reasonIs(error, 'Conflict', 409);
/** 422 `Invalid` (`IsInvalid`). */
export const isInvalid = (error: unknown): boolean => reasonIs(error, 'Invalid', 422);
/** 403 `Forbidden` (`IsForbidden`). */
export const isForbidden = (error: unknown): boolean => reasonIs(error, 'Forbidden', 403);
/** 401 `Unauthorized` (`IsUnauthorized`). */
export const isUnauthorized = (error: unknown): boolean => reasonIs(error, 'Unauthorized', 401);
/** 410 `Gone` (`IsGone`). An expired cursor is {@link isExpired}. */
export const isGone = (error: unknown): boolean => reasonIs(error, 'Gone', 410);
/** 410 `Expired`: a compacted `resourceVersion` or continue token (`IsResourceExpired`). */
export const isExpired = (error: unknown): boolean => reasonIs(error, 'Expired');
/** `TooManyRequests`, or any 429 whatever its reason (`IsTooManyRequests`). */
export const isTooManyRequests = (error: unknown): boolean => reasonOrCode(error, 'TooManyRequests', 429);
/** `RequestEntityTooLarge`, or any 413 whatever its reason (`IsRequestEntityTooLargeError`). */
export const isRequestEntityTooLarge = (error: unknown): boolean => reasonOrCode(error, 'RequestEntityTooLarge', 413);
/** 500 `InternalError` (`IsInternalError`). */
export const isInternalError = (error: unknown): boolean => reasonIs(error, 'InternalError', 500);
/** 503 `ServiceUnavailable` (`IsServiceUnavailable`). */
export const isServiceUnavailable = (error: unknown): boolean => reasonIs(error, 'ServiceUnavailable', 503);
/** 405 `MethodNotAllowed` (`IsMethodNotSupported`). */
export const isMethodNotSupported = (error: unknown): boolean => reasonIs(error, 'MethodNotAllowed', 405);
/** 406 `NotAcceptable` (`IsNotAcceptable`). */
export const isNotAcceptable = (error: unknown): boolean => reasonIs(error, 'NotAcceptable', 406);
/** 415 `UnsupportedMediaType` (`IsUnsupportedMediaType`), e.g. an apply to a server without server-side apply. */
export const isUnsupportedMediaType = (error: unknown): boolean => reasonIs(error, 'UnsupportedMediaType', 415);
/** 504 `Timeout`: the server could not finish in time, e.g. `ResourceVersionTooLarge` (`IsTimeout`). */
export const isTimeout = (error: unknown): boolean => reasonIs(error, 'Timeout', 504);
/** 500 `ServerTimeout` (`IsServerTimeout`). */
export const isServerTimeout = (error: unknown): boolean => reasonIs(error, 'ServerTimeout');
/** 400 `BadRequest` (`IsBadRequest`). */
export const isBadRequest = (error: unknown): boolean => reasonIs(error, 'BadRequest', 400);
