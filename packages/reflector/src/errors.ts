import type { KubeApiError } from '@reconcile-loop/kube-client';
import type { Status } from '@reconcile-loop/k8s-types';
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/**
 * Typed errors of this package: each extends `ReconcileLoopError` and has an `RL_REFLECTOR_*` code.
 * kube-client's errors (`KubeApiError` with its `Status`, `KubeProtocolError`, `WatchFrameTooLargeError`,
 * `KubeTransportError`, `KubeRequestTimeoutError`) reach `health().lastError` and the log as they are;
 * the classes here add what only the reflector knows (a phase, a deadline of its own, permanence).
 */

/** A LIST that did not complete within `listTimeoutMs` (relists included). Retried after the backoff. */
export class ListTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_REFLECTOR_LIST_TIMEOUT' as const;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`LIST did not complete within ${timeoutMs} ms (listTimeoutMs)`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The client cannot build a request at all: the `KubeConfig` has no current cluster, or its server
 * URL is unreadable or not http(s) (kube-client's `OptionsError`, when it raised one, is the `cause`).
 * Permanent (`permanent: true`): no retry changes a `KubeConfig` object, so the reflector's stream
 * throws it and the stream driver stops reopening.
 */
export class KubeClientConfigError extends ReconcileLoopError {
  readonly code = 'RL_REFLECTOR_CLIENT_CONFIG' as const;
  readonly permanent = true as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The reflector's first LIST was answered 400 or 422: a selector or parameter the server will never
 * accept. Permanent (`permanent: true`); kube-client's `KubeApiError` is the `cause`, and its
 * `statusCode` and `Status` are repeated here. After a first successful listing the same codes are retried.
 */
export class ListRejectedError extends ReconcileLoopError {
  readonly code = 'RL_REFLECTOR_LIST_REJECTED' as const;
  readonly permanent = true as const;
  readonly statusCode: number;
  readonly status: Status | undefined;

  constructor(cause: KubeApiError, reflector: string) {
    super(
      `reflector "${reflector}": the first LIST was rejected with HTTP ${cause.statusCode} ${cause.reason}${
        cause.status?.message ? `: ${cause.status.message}` : ''
      } (${cause.verb.toUpperCase()} ${cause.path}); check the namespace, label and field selectors — no retry can fix this`,
      { cause },
    );
    this.statusCode = cause.statusCode;
    this.status = cause.status;
  }
}
