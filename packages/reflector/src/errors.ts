import type { ApiStatus } from '@reconcile-loop/k8s-types';

/**
 * Typed errors of this package. Each carries a stable string `code`, because a dual ESM/CJS install
 * can load two copies of a class and defeat `instanceof`.
 */

/** The request an error refers to: its verb and URL. The URL never carries credentials (they travel in headers). */
export interface ApiRequestInfo {
  readonly verb: 'list' | 'watch';
  /** Full URL with query, user info stripped. */
  readonly url: string;
}

/**
 * The apiserver answered a request with a non-2xx HTTP status. Thrown by {@link KubeApiClient} for
 * kube-client's `KubeApiError` (kept as `cause`), so code matching on this class or its `code`
 * keeps working over the shared client.
 */
export class ApiStatusError extends Error {
  readonly code = 'API_STATUS' as const;
  /** The HTTP status code (always a number, as is the `code` inside a `Status`). */
  readonly statusCode: number;
  /** The `Status` body, when the response carried a readable one. */
  readonly status: ApiStatus | undefined;
  /** The request that failed, when the client knows it. */
  readonly request: ApiRequestInfo | undefined;
  /** The server's `Retry-After` (header, else `details.retryAfterSeconds`), in seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    statusCode: number,
    status?: ApiStatus,
    message?: string,
    extra: { request?: ApiRequestInfo; retryAfterSeconds?: number | undefined; cause?: unknown } = {},
  ) {
    super(
      message ??
        `apiserver answered HTTP ${statusCode}${status?.reason ? ` ${status.reason}` : ''}${status?.message ? `: ${status.message}` : ''}${
          extra.request ? ` (${extra.request.verb.toUpperCase()} ${extra.request.url})` : ''
        }`,
      extra.cause === undefined ? undefined : { cause: extra.cause },
    );
    this.name = 'ApiStatusError';
    this.statusCode = statusCode;
    this.status = status;
    this.request = extra.request;
    this.retryAfterSeconds = extra.retryAfterSeconds ?? status?.details?.retryAfterSeconds;
  }
}

/**
 * The apiserver's answer broke the protocol: a LIST body without `items` or a cursor, a watch cut
 * mid-frame. Wraps kube-client's `KubeProtocolError` (`KUBE_PROTOCOL`) as `cause`.
 */
export class KubeApiProtocolError extends Error {
  readonly code = 'KUBE_API_PROTOCOL' as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeApiProtocolError';
  }
}

/**
 * One watch frame longer than the cap (`maxFrameSize`): refused before it is buffered whole. A
 * protocol error: the watch is torn down and the reflector relists (reopening at the same cursor
 * would meet the same frame). Wraps kube-client's `WatchFrameTooLargeError`
 * (`KUBE_WATCH_FRAME_TOO_LARGE`) as `cause` when the shared client refused the frame.
 */
export class WatchFrameTooLargeError extends Error {
  readonly code = 'WATCH_FRAME_TOO_LARGE' as const;
  /** The cap, in bytes of the UTF-8 line (characters, for the ASCII JSON the apiserver writes). */
  readonly limit: number;

  constructor(limit: number, options?: { cause?: unknown }) {
    super(`watch frame longer than the ${limit}-byte cap (maxFrameSize); tearing the watch down`, options);
    this.name = 'WatchFrameTooLargeError';
    this.limit = limit;
  }
}

/** A LIST that did not complete within `listTimeoutMs` (relists included). Retried after the backoff. */
export class ListTimeoutError extends Error {
  readonly code = 'LIST_TIMEOUT' as const;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`LIST did not complete within ${timeoutMs} ms (listTimeoutMs)`);
    this.name = 'ListTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The client cannot build a request at all: the `KubeConfig` has no current cluster, or its server
 * URL is unreadable or not http(s). Permanent (`permanent: true`): no retry changes a `KubeConfig`
 * object, so the reflector's stream throws it and the stream driver stops reopening.
 */
export class KubeClientConfigError extends Error {
  readonly code = 'KUBE_CLIENT_CONFIG' as const;
  readonly permanent = true as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeClientConfigError';
  }
}

/**
 * The reflector's first LIST was answered 400 or 422: a selector or parameter the server will never
 * accept. Permanent (`permanent: true`); carries the apiserver's `Status` and the request, and the
 * {@link ApiStatusError} as `cause`. After a first successful listing the same codes are retried.
 */
export class ListRejectedError extends Error {
  readonly code = 'LIST_REJECTED' as const;
  readonly permanent = true as const;
  readonly statusCode: number;
  readonly status: ApiStatus | undefined;
  readonly request: ApiRequestInfo | undefined;

  constructor(cause: ApiStatusError, reflector: string) {
    super(
      `reflector "${reflector}": the first LIST was rejected with HTTP ${cause.statusCode}${cause.status?.reason ? ` ${cause.status.reason}` : ''}${
        cause.status?.message ? `: ${cause.status.message}` : ''
      }${cause.request ? ` (GET ${cause.request.url})` : ''}; check the namespace, label and field selectors — no retry can fix this`,
      { cause },
    );
    this.name = 'ListRejectedError';
    this.statusCode = cause.statusCode;
    this.status = cause.status;
    this.request = cause.request;
  }
}

/** A reflector or client was built with options it cannot run with. */
export class ReflectorOptionsError extends Error {
  readonly code = 'REFLECTOR_OPTIONS' as const;

  constructor(message: string) {
    super(message);
    this.name = 'ReflectorOptionsError';
  }
}

/** True when `error` is an {@link ApiStatusError}, across module copies. */
export function isApiStatusError(error: unknown): error is ApiStatusError {
  return (error as { code?: unknown } | null)?.code === 'API_STATUS';
}
