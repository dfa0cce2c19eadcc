/** What the story (shards.ts) and its replica processes (shard-replica.ts) agree on. */

/** The ring's name: its member Leases are `cellsets-<identity>`, labelled with it. */
export const RING = 'cellsets';

/**
 * Short Lease timings so the story takes seconds, in client-go's order (lease > renew deadline >
 * retry period): a killed or frozen replica's CellSets move about 4 s after its last renewal.
 */
export const SHARD_TIMINGS = Object.freeze({ leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 });

/**
 * A replica's rebuild delays and source retry: short, so pods rebuild and caches reopen within the
 * story's seconds (the controller's defaults are 0/1/5/30 s and 1 s doubling to 30 s).
 */
export const REPLICA_PACE = Object.freeze({
  rebuildDelaysMs: Object.freeze([0, 250, 1_250, 7_500]),
  sourceRetry: Object.freeze({ initialMs: 300, maxMs: 5_000 }),
});

/** The replica's environment: the kubeconfig's YAML, its identity (also its name in the story), the namespace. */
export const ENV = Object.freeze({
  kubeconfig: 'CELLSET_SHARD_KUBECONFIG',
  identity: 'CELLSET_SHARD_IDENTITY',
  namespace: 'CELLSET_SHARD_NAMESPACE',
});
