import type { ApiStatus } from '@reconcile-loop/k8s-types';

/**
 * Typed errors of this package. Each carries a stable string `code`, because a dual ESM/CJS install
 * can load two copies of a class and defeat `instanceof`.
 */

/** The apiserver answered a request with a non-2xx HTTP status. */
export class ApiStatusError extends Error {
  readonly code = 'API_STATUS' as const;
  /** The HTTP status code (always a number, as is the `code` inside a `Status`). */
  readonly statusCode: number;
  /** The `Status` body, when the response carried a readable one. */
  readonly status: ApiStatus | undefined;

  constructor(statusCode: number, status?: ApiStatus, message?: string) {
    super(message ?? `apiserver answered HTTP ${statusCode}${status?.reason ? ` ${status.reason}` : ''}${status?.message ? `: ${status.message}` : ''}`);
    this.name = 'ApiStatusError';
    this.statusCode = statusCode;
    this.status = status;
  }
}

/** The apiserver's answer broke the protocol: a LIST body without `items` or a cursor, a watch cut mid-frame, no cluster. */
export class KubeApiProtocolError extends Error {
  readonly code = 'KUBE_API_PROTOCOL' as const;

  constructor(message: string) {
    super(message);
    this.name = 'KubeApiProtocolError';
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
