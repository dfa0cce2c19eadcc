import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { OptionsError } from '@reconcile-loop/primitives';
import { shardMetrics } from '../src/index.js';

describe('[metrics: Shard series] a sharded replica: ring share and handovers from the ShardObserver hooks, admissions from each loop’s health().shard', () => {
  it('maps onRanges, onHandover (one wait sample per reason) and onAcknowledged, and reads keys owned, refusals, drops and aborts at scrape time', async () => {
    const registry = new Registry();
    let shard: { keysOwned: number; refused: number; dropped: number; aborted: number } | undefined = {
      keysOwned: 40,
      refused: 3,
      dropped: 2,
      aborted: 1,
    };
    const loop = { name: 'cellsets', health: () => ({ shard: shard as never }) };
    const observer = shardMetrics({ ring: 'cells', registry, loops: [loop] });
    let text = await registry.metrics();
    expect(text).toContain('reconcile_loop_shard_handovers_total{ring="cells"} 0');

    observer.onRanges({ ranges: [{}, {}, {}], share: 0.31, members: ['a', 'b', 'c'] });
    observer.onHandover({ waitedMs: 4_500, waitedFor: ['own-claim', 'peer-claim'], expired: [] });
    observer.onHandover({ waitedMs: 16_000, waitedFor: ['peer-claim'], expired: ['b'] });
    observer.onHandover({ waitedMs: 0, waitedFor: [], expired: [] });
    observer.onAcknowledged({});
    text = await registry.metrics();
    expect(text).toContain('reconcile_loop_shard_ranges{ring="cells"} 3');
    expect(text).toContain('reconcile_loop_shard_share{ring="cells"} 0.31');
    expect(text).toContain('reconcile_loop_shard_members{ring="cells"} 3');
    expect(text).toContain('reconcile_loop_shard_handovers_total{ring="cells"} 3');
    expect(text).toContain('reconcile_loop_shard_members_expired_total{ring="cells"} 1');
    expect(text).toContain('reconcile_loop_shard_acknowledgements_total{ring="cells"} 1');
    expect(text).toContain('reconcile_loop_shard_handover_wait_seconds_count{ring="cells",reason="peer-claim"} 2');
    expect(text).toContain('reconcile_loop_shard_handover_wait_seconds_sum{ring="cells",reason="peer-claim"} 20.5');
    expect(text).toContain('reconcile_loop_shard_handover_wait_seconds_bucket{le="6",ring="cells",reason="own-claim"} 1');
    expect(text).toContain('reconcile_loop_shard_handover_wait_seconds_count{ring="cells",reason="none"} 1');
    expect(text).toContain('reconcile_loop_shard_keys_owned{controller="cellsets"} 40');
    expect(text).toContain('reconcile_loop_shard_admissions_refused_total{controller="cellsets"} 3');
    expect(text).toContain('reconcile_loop_shard_keys_dropped_total{controller="cellsets"} 2');
    expect(text).toContain('reconcile_loop_shard_reconciles_aborted_total{controller="cellsets"} 1');

    // A loop without a shard gate has no per-loop series.
    shard = undefined;
    text = await registry.metrics();
    expect(text).not.toContain('reconcile_loop_shard_keys_owned{');
  });

  it('rejects an empty ring name and a registry that is not a prom-client Registry (OptionsError)', () => {
    expect(() => shardMetrics({ ring: '' })).toThrow(OptionsError);
    expect(() => shardMetrics({ ring: 'r', registry: {} as never })).toThrow(OptionsError);
  });
});
