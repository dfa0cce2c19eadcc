import type { KubeStatus } from './status.js';

/**
 * A write through the typed control API was refused with the same Status the HTTP API would send
 * (404, 409, 422, ...). `code` is stable across ESM/CJS builds; `status` carries the Status body.
 */
export class ApiStatusError extends Error {
  /** Stable discriminator, usable where `instanceof` is defeated by dual builds. */
  readonly code = 'ERR_API_STATUS' as const;
  /** The Status the HTTP API would have answered with. */
  readonly status: KubeStatus;
  constructor(status: KubeStatus) {
    super(status.message ?? `${status.code} ${status.reason ?? ''}`.trim());
    this.name = 'ApiStatusError';
    this.status = status;
  }
}

/** Misuse of the embedded apiserver: a bad option, an unknown resource, or a call after `close()`. */
export class ApiServerUsageError extends Error {
  /** `ERR_APISERVER_CLOSED`, `ERR_BAD_OPTION` or `ERR_UNKNOWN_RESOURCE`. */
  readonly code: 'ERR_APISERVER_CLOSED' | 'ERR_BAD_OPTION' | 'ERR_UNKNOWN_RESOURCE';
  constructor(code: ApiServerUsageError['code'], message: string) {
    super(message);
    this.name = 'ApiServerUsageError';
    this.code = code;
  }
}

/** True when `e` carries the {@link ApiStatusError} code, whichever build created it. */
export function isApiStatusError(e: unknown): e is ApiStatusError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ERR_API_STATUS';
}
