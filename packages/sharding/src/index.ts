/**
 * @reconcile-loop/sharding: a ring of replicas on Leases, each owning about 1/N of the 64-bit
 * `shardHash` space, and a handover that never lets two replicas reconcile one key. A `ShardMember`
 * gives its sources the ranges to watch (`ranges`, `onRangesChanged`) and its loop an admission
 * gate (`enter(hash)` before a reconcile, the returned release after it).
 */

// The pure ring: members with virtual nodes, each member's ranges as `ShardRange[]`.
export { HashRing } from './ring.js';

// Membership on Leases and the admission gate of the handover protocol.
export { ShardMember, type ShardMemberOptions } from './member.js';

// Hooks for metrics and health.
export type { ShardObserver, HandoverWait } from './observer.js';
