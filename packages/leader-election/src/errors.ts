/**
 * Typed errors of this package. Each carries a stable string `code`, because a dual ESM/CJS install
 * can load two copies of a class and defeat `instanceof`.
 */

/** The elector was configured with options it cannot keep its promises under (client-go's `NewLeaderElector` checks, and ours). */
export class LeaderElectionOptionsError extends Error {
  readonly code = 'LEADER_ELECTION_OPTIONS' as const;
  constructor(message: string) {
    super(message);
    this.name = 'LeaderElectionOptionsError';
  }
}

/** Why a term's signal aborted: leadership was lost (renew deadline passed, or another holder was observed). */
export class LeadershipLostError extends Error {
  readonly code = 'LEADERSHIP_LOST' as const;
  /** `renew-deadline`, `other-holder` or `stopped` (the elector's own signal aborted). */
  readonly reason: 'renew-deadline' | 'other-holder' | 'stopped';
  constructor(reason: LeadershipLostError['reason'], message: string) {
    super(message);
    this.name = 'LeadershipLostError';
    this.reason = reason;
  }
}

/** `run()` was called while the elector is already running: one elector drives one election. */
export class ElectorAlreadyRunningError extends Error {
  readonly code = 'LEADER_ELECTOR_RUNNING' as const;
  constructor() {
    super('this LeaderElector is already running; one elector runs one election at a time');
    this.name = 'ElectorAlreadyRunningError';
  }
}

/** A `waitForLeadership` wait passed its deadline without this replica becoming leader. */
export class LeadershipWaitTimeoutError extends Error {
  readonly code = 'LEADERSHIP_WAIT_TIMEOUT' as const;
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`did not become leader within ${timeoutMs} ms`);
    this.name = 'LeadershipWaitTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}
