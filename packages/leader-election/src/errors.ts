import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** Typed errors of this package: each extends `ReconcileLoopError` and has an `RL_LEADER_*` code (bad options are primitives' `OptionsError`). */

/** Why a term's signal aborted: leadership was lost (renew deadline passed, or another holder was observed). */
export class LeadershipLostError extends ReconcileLoopError {
  readonly code = 'RL_LEADER_LOST' as const;
  /** `renew-deadline`, `other-holder` or `stopped` (the elector's own signal aborted). */
  readonly reason: 'renew-deadline' | 'other-holder' | 'stopped';
  constructor(reason: LeadershipLostError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** `run()` was called while the elector is already running: one elector drives one election. */
export class ElectorAlreadyRunningError extends ReconcileLoopError {
  readonly code = 'RL_LEADER_ELECTOR_RUNNING' as const;
  constructor() {
    super('this LeaderElector is already running; one elector runs one election at a time');
  }
}

/** A `waitForLeadership` wait passed its deadline without this replica becoming leader. */
export class LeadershipWaitTimeoutError extends ReconcileLoopError {
  readonly code = 'RL_LEADER_WAIT_TIMEOUT' as const;
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`did not become leader within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}
