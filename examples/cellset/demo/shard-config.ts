/** What the story (shards.ts) and its replica processes (shard-replica.ts) agree on. */

/** The ring's name: its member Leases are `cellsets-<identity>`, labelled with it. */
export const RING = 'cellsets';

/**
 * Short Lease timings so the story takes seconds, in client-go's order (lease > renew deadline >
 * retry period): a killed or frozen replica's CellSets move about 4 s after its last renewal.
 */
export const SHARD_TIMINGS = Object.freeze({ leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 });

/** The replica's environment: the kubeconfig's YAML, its identity (also its name in the story), the namespace. */
export const ENV = Object.freeze({
  kubeconfig: 'CELLSET_SHARD_KUBECONFIG',
  identity: 'CELLSET_SHARD_IDENTITY',
  namespace: 'CELLSET_SHARD_NAMESPACE',
});
