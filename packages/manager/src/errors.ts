import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** Typed errors of this package: each extends `ReconcileLoopError` with an `RL_MANAGER_*` code (bad options are primitives' `OptionsError`). */

/** `run()` was called a second time, or a controller, source or recorder was added after `run()`: a manager runs once, with what it was given. */
export class ManagerAlreadyStartedError extends ReconcileLoopError {
  readonly code = 'RL_MANAGER_ALREADY_STARTED' as const;
  constructor(what: string) {
    super(`${what}: the manager has already been started; a manager runs once, with the controllers it was given before run()`);
  }
}

/** The shutdown's grace ran out with work still pending; `pending` names it (reconciles, sources, the Lease release, Events). */
export class ShutdownTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_MANAGER_SHUTDOWN_TIMEOUT' as const;
  /** What had not finished at the deadline, one entry each (`pods-by-pool: reconcile of ml/engines`, `lease release`, …). */
  readonly pending: readonly string[];
  constructor(graceMs: number, pending: readonly string[]) {
    super(`stopped after the grace period (${graceMs} ms); abandoned ${pending.join(', ')}`);
    this.pending = Object.freeze([...pending]);
  }
}
