import { ReconcileLoopError } from '@reconcile-loop/primitives';
import type { KubeStatus } from './status.js';

/**
 * A write through the typed control API was refused with the same Status the HTTP API would send
 * (404, 409, 422, ...); `status` carries that Status body.
 */
export class ApiServerStatusError extends ReconcileLoopError {
  readonly code = 'RL_APISERVER_STATUS' as const;
  /** The Status the HTTP API would have answered with. */
  readonly status: KubeStatus;
  constructor(status: KubeStatus) {
    super(status.message ?? `${status.code} ${status.reason ?? ''}`.trim());
    this.status = status;
  }
}

/**
 * Misuse of the embedded apiserver: a call after `close()` (`RL_APISERVER_CLOSED`) or a typed-control
 * call naming a kind that is not served (`RL_APISERVER_UNKNOWN_RESOURCE`). Bad options throw
 * primitives' `OptionsError` instead.
 */
export class ApiServerUsageError extends ReconcileLoopError {
  readonly code: 'RL_APISERVER_CLOSED' | 'RL_APISERVER_UNKNOWN_RESOURCE';
  constructor(code: ApiServerUsageError['code'], message: string) {
    super(message);
    this.code = code;
  }
}
