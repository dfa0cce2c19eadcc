import type { ShardRange } from '@reconcile-loop/primitives';

/**
 * What a handover into this member waited for:
 * - `lease`: this member's own Lease was not valid (not yet acquired, or renewals failed past the renew deadline);
 * - `ring-read`: no read of the ring had started since its current term began (after a freeze, a restart);
 * - `own-claim`: its own acknowledgement of the new ring was not yet written, or not yet followed by a read;
 * - `peer-claim`: a live member still claimed part of the ranges (had not acknowledged, or not drained);
 * - `settling`: at start-up, the member had not yet seen the ring settle (`settleMs`, `expectedMembers`).
 */
export type HandoverWait = 'lease' | 'ring-read' | 'own-claim' | 'peer-claim' | 'settling';

/**
 * Hooks a metrics implementation (or a test) receives from a `ShardMember`. Every hook is optional
 * and guarded: a throw is logged, never fatal. No metrics library here: `@reconcile-loop/metrics`
 * maps these to series.
 */
export interface ShardObserver {
  /** This member's view of the ring changed: the ranges it now watches, and their share of the space (0–1). */
  onRanges?(event: {
    readonly identity: string;
    readonly members: readonly string[];
    readonly ranges: readonly ShardRange[];
    readonly share: number;
  }): void;
  /**
   * A handover into this member completed: every hash it owns in its view is admitted. `waitedMs`
   * from the view change to then; `waitedFor` every reason seen while waiting; `expired` the
   * members that blocked it and left by Lease expiry (by this member's clock) rather than by
   * acknowledging.
   */
  onHandover?(event: {
    readonly identity: string;
    readonly members: readonly string[];
    readonly gained: readonly ShardRange[];
    readonly waitedMs: number;
    readonly waitedFor: readonly HandoverWait[];
    readonly expired: readonly string[];
  }): void;
  /** This member published (acknowledged) a new ring in its Lease. */
  onAcknowledged?(event: { readonly identity: string; readonly members: readonly string[] }): void;
}
