/**
 * @reconcile-loop/leader-election: leader election on a coordination.k8s.io/v1 Lease with client-go's
 * semantics. A `LeaderElector` is the loop's `LeaderGate` (structurally), so it drives a loop that
 * stays warm on standby replicas; `runWhenLeader` runs any work only while leading.
 */

// The elector and its options (client-go's defaults and checks).
// The defaults are the numbers in the README's option table; they are not exported.
export { LeaderElector } from './elector.js';
export type { LeaderElectorOptions } from './options.js';

// The lock: a Lease through kube-client, or any ResourceLock.
export { LeaseLock, type LeaseLockOptions, type LockCallOptions, type ResourceLock } from './lease-lock.js';
export { LeaseObservation, type LeaderElectionRecord } from './record.js';

// Running work only while leading.
export { runWhenLeader, type RunWhenLeaderOptions } from './run-when-leader.js';

// Errors: every one extends primitives' ReconcileLoopError (codes RL_LEADER_*).
export { ElectorAlreadyRunningError, LeadershipLostError, LeadershipWaitTimeoutError } from './errors.js';
