/** The metrics package's errors: misuse caught when a loop binds its observer. Bad options throw primitives' `OptionsError`. */
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/**
 * A second loop bound with a controller name already registered on the same registry: two loops
 * would silently share one series. `observer.unregister()` on the old loop frees the name.
 */
export class DuplicateControllerError extends ReconcileLoopError {
  readonly code = 'RL_METRICS_DUPLICATE_CONTROLLER' as const;
  /** The controller name already registered. */
  readonly controller: string;
  constructor(controller: string) {
    super(
      `a loop named "${controller}" is already registered on this registry; give each loop a distinct name (or unregister() the old one)`,
    );
    this.controller = controller;
  }
}

/** One observer passed to two loops (or re-bound after `unregister()`): call `controllerMetrics()` once per loop. */
export class ObserverReusedError extends ReconcileLoopError {
  readonly code = 'RL_METRICS_OBSERVER_REUSED' as const;
  constructor() {
    super('this metrics observer already belongs to a loop; call controllerMetrics() once per loop');
  }
}
