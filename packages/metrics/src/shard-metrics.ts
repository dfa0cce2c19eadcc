/**
 * A sharded replica's series: its share of the ring (from a `ShardMember`'s `ShardObserver` hooks)
 * and its sharded loops' admissions (from each loop's `health().shard`, read at scrape time). This
 * package does not depend on `@reconcile-loop/sharding`: the hooks' shape is structural.
 */
import { Counter, Gauge, Histogram, register, type Registry } from 'prom-client';
import type { LoopHealth } from '@reconcile-loop/loop';
import { OptionsError, type Key } from '@reconcile-loop/primitives';
import type { MetricDefinition } from './definitions.js';

const def = (type: MetricDefinition['type'], name: string, labelNames: readonly string[], help: string, buckets?: number[]) =>
  Object.freeze({
    name,
    help,
    type,
    labelNames: Object.freeze([...labelNames]),
    ...(buckets && { buckets: Object.freeze(buckets) }),
  });

/** The series of {@link shardMetrics} (the README's table). */
export const SHARD_METRICS = Object.freeze({
  ranges: def(
    'gauge',
    'reconcile_loop_shard_ranges',
    ['ring'],
    'Ranges of the hash space this replica owns in its view of the ring.',
  ),
  share: def(
    'gauge',
    'reconcile_loop_shard_share',
    ['ring'],
    "This replica's share of the hash space (0-1) in its view of the ring.",
  ),
  members: def('gauge', 'reconcile_loop_shard_members', ['ring'], 'Live members in the view of the ring of this replica.'),
  handovers: def('counter', 'reconcile_loop_shard_handovers_total', ['ring'], 'Handovers into this replica that completed.'),
  handoverWait: def(
    'histogram',
    'reconcile_loop_shard_handover_wait_seconds',
    ['ring', 'reason'],
    'Seconds a completed handover waited, once under each reason it waited for (lease, ring-read, own-claim, peer-claim, settling; none).',
    [0.1, 0.5, 1, 2, 4, 6, 8, 10, 15, 20, 30, 60, 120],
  ),
  expired: def(
    'counter',
    'reconcile_loop_shard_members_expired_total',
    ['ring'],
    'Members a handover waited for that left by Lease expiry.',
  ),
  acknowledged: def(
    'counter',
    'reconcile_loop_shard_acknowledgements_total',
    ['ring'],
    'Rings this replica acknowledged in its Lease.',
  ),
  keysOwned: def('gauge', 'reconcile_loop_shard_keys_owned', ['controller'], 'Parent keys cached whose hash is in the ranges.'),
  refused: def(
    'counter',
    'reconcile_loop_shard_admissions_refused_total',
    ['controller'],
    'Reconciles the shard gate did not admit for a hash in the ranges (asked again later).',
  ),
  dropped: def(
    'counter',
    'reconcile_loop_shard_keys_dropped_total',
    ['controller'],
    'Keys turned away: their hash outside the ranges, or unknown.',
  ),
  aborted: def(
    'counter',
    'reconcile_loop_shard_reconciles_aborted_total',
    ['controller'],
    'Reconciles aborted because their hash stopped being admitted (ranges moved, Lease lost).',
  ),
} satisfies Record<string, MetricDefinition>);

/** A loop whose `health().shard` is read at scrape time, and the `controller` label it gets. */
export interface ShardedLoop {
  readonly name: string;
  health(): Pick<LoopHealth<Key>, 'shard'>;
}

/** Options of {@link shardMetrics}. */
export interface ShardMetricsOptions {
  /** The ring's name: the `ring` label. */
  readonly ring: string;
  /** The sharded loops of this replica. Default none. */
  readonly loops?: readonly ShardedLoop[] | undefined;
  /** Where the series are registered. Default prom-client's global `register`. */
  readonly registry?: Registry | undefined;
}

/** The hooks a `ShardMember` takes as its `observer` option (`ShardObserver`, structurally). */
export interface ShardMetricsObserver {
  onRanges(event: { readonly ranges: readonly unknown[]; readonly share: number; readonly members: readonly string[] }): void;
  onHandover(event: {
    readonly waitedMs: number;
    readonly waitedFor: readonly string[];
    readonly expired: readonly string[];
  }): void;
  onAcknowledged(event: unknown): void;
}

/**
 * The series of one ring on this replica: give the result to `ShardMember`'s `observer` option.
 * @throws {OptionsError} for an empty ring name or a registry that is not a prom-client `Registry`.
 */
export function shardMetrics(options: ShardMetricsOptions): ShardMetricsObserver {
  const { ring } = options;
  if (typeof ring !== 'string' || ring === '') throw new OptionsError('shardMetrics', 'ring must be a non-empty string');
  const registry = options.registry ?? register;
  if (typeof (registry as Partial<Registry>)?.registerMetric !== 'function')
    throw new OptionsError('shardMetrics', 'registry must be a prom-client Registry');
  const registers = [registry];
  const labels = { ring };
  // Ring events are rare (a membership change, a handover): prom-client's own types suffice here.
  const gauge = (d: MetricDefinition): Gauge<string> =>
    new Gauge({ name: d.name, help: d.help, labelNames: [...d.labelNames], registers });
  const counter = (d: MetricDefinition): Counter<string> =>
    new Counter({ name: d.name, help: d.help, labelNames: [...d.labelNames], registers });
  const ranges = gauge(SHARD_METRICS.ranges);
  const share = gauge(SHARD_METRICS.share);
  const members = gauge(SHARD_METRICS.members);
  const handovers = counter(SHARD_METRICS.handovers);
  const expired = counter(SHARD_METRICS.expired);
  const acknowledged = counter(SHARD_METRICS.acknowledged);
  const wait = SHARD_METRICS.handoverWait;
  const waited = new Histogram({
    name: wait.name,
    help: wait.help,
    labelNames: [...wait.labelNames],
    buckets: [...wait.buckets!],
    registers,
  });
  // Every series at 0 from the start, so a rate over the first handover is not lost.
  handovers.inc(labels, 0);
  expired.inc(labels, 0);
  acknowledged.inc(labels, 0);

  // Scrape-time series from each loop's `health().shard` (a loop without a gate has none).
  const loops = options.loops ?? [];
  const perLoop = (d: MetricDefinition, read: (shard: NonNullable<LoopHealth<Key>['shard']>) => number): void => {
    const Kind = d.type === 'gauge' ? Gauge : Counter;
    new Kind({
      name: d.name,
      help: d.help,
      labelNames: [...d.labelNames],
      registers,
      collect(this: Gauge<string> | Counter<string>) {
        this.reset();
        for (const loop of loops) {
          const shard = loop.health().shard;
          if (shard === undefined) continue;
          if (this instanceof Gauge) this.set({ controller: loop.name }, read(shard));
          else this.inc({ controller: loop.name }, read(shard));
        }
      },
    });
  };
  perLoop(SHARD_METRICS.keysOwned, (s) => s.keysOwned);
  perLoop(SHARD_METRICS.refused, (s) => s.refused);
  perLoop(SHARD_METRICS.dropped, (s) => s.dropped);
  perLoop(SHARD_METRICS.aborted, (s) => s.aborted);

  return {
    onRanges: (event) => {
      ranges.set(labels, event.ranges.length);
      share.set(labels, event.share);
      members.set(labels, event.members.length);
    },
    onHandover: (event) => {
      handovers.inc(labels);
      expired.inc(labels, event.expired.length);
      const seconds = event.waitedMs / 1000;
      const reasons = event.waitedFor.length === 0 ? ['none'] : new Set(event.waitedFor);
      for (const reason of reasons) waited.observe({ ring, reason }, seconds);
    },
    onAcknowledged: () => acknowledged.inc(labels),
  };
}
