/**
 * @reconcile-loop/leader-election: leader election on a coordination.k8s.io/v1 Lease with client-go's
 * semantics. A `LeaderElector` is the loop's `LeaderGate` (structurally), so it drives a loop that
 * stays warm on standby replicas; `runWhenLeader` runs any work only while leading.
 */

// The elector and its options (client-go's defaults and checks).
export { LeaderElector, DEFAULT_HEALTH_TOLERANCE_MS, type LeaderHealth } from './elector.js';
export {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  JITTER_FACTOR,
  type LeaderCallbacks,
  type LeaderElectorOptions,
  type ResolvedTimings,
} from './options.js';

// The lock: a Lease through kube-client, or any ResourceLock.
export { LeaseLock, type LeaseLockOptions, type LockCallOptions, type ResourceLock } from './lease-lock.js';
export type { LeaderElectionRecord } from './record.js';

// Running work only while leading.
export { runWhenLeader, type RunWhenLeaderOptions } from './run-when-leader.js';

// Errors: every one extends primitives' ReconcileLoopError (codes RL_LEADER_*).
export { ElectorAlreadyRunningError, LeadershipLostError, LeadershipWaitTimeoutError } from './errors.js';
