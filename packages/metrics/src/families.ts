/**
 * Counter and histogram families whose hot path is a few array writes: an event increments plain
 * numbers, and prom-client reads them only when a scrape asks (`get()`, the interface its
 * `Registry` calls on every registered metric). prom-client's own `Counter`/`Histogram` hash the
 * label set on every call, which would cost the loop several times more per event (see
 * BENCHMARKS.md, "Metrics"). The exposition is the one prom-client prints for its own types:
 * `_bucket{le}` cumulative, `_sum`, `_count`.
 *
 * Invariant: one series per label set, created by `series()` (at bind time) and removed by
 * `remove()`; the hot path holds its series object, so it never looks anything up.
 */
import type { MetricDefinition } from './definitions.js';

type Labels = Readonly<Record<string, string>>;

/** One counter series: `inc()` adds 1. */
export interface CounterSeries {
  inc(): void;
}

/** One histogram series: `observe(v)` counts one sample. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface MetricValue {
  readonly value: number;
  readonly labels: Labels;
  readonly metricName?: string | undefined;
}

/** What prom-client's `Registry` reads from a registered metric. */
export interface RegistrableMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: MetricValue[] }>;
  reset(): void;
}

const keyOf = (labels: Labels): string => JSON.stringify(Object.values(labels));

/** A counter family (label names fixed by its definition). */
export class CounterFamily implements RegistrableMetric {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter' as const;
  readonly aggregator = 'sum' as const;
  readonly #series = new Map<string, { labels: Labels; value: number }>();

  constructor(def: MetricDefinition) {
    this.name = def.name;
    this.help = def.help;
  }

  /** The series of `labels` (created at 0 on first use). */
  series(labels: Labels): CounterSeries {
    const key = keyOf(labels);
    let s = this.#series.get(key);
    if (s === undefined) this.#series.set(key, (s = { labels: { ...labels }, value: 0 }));
    const series = s;
    return { inc: () => void (series.value += 1) };
  }

  remove(labels: Labels): void {
    this.#series.delete(keyOf(labels));
  }

  reset(): void {
    for (const s of this.#series.values()) s.value = 0;
  }

  async get() {
    const values = [...this.#series.values()].map((s) => ({ value: s.value, labels: s.labels }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A histogram family with fixed upper bounds (`+Inf` implied). */
export class HistogramFamily implements RegistrableMetric {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, { labels: Labels; counts: Float64Array; sum: number; count: number }>();

  constructor(def: MetricDefinition) {
    this.name = def.name;
    this.help = def.help;
    this.#bounds = [...(def.buckets ?? [])];
  }

  series(labels: Labels): HistogramSeries {
    const key = keyOf(labels);
    let s = this.#series.get(key);
    if (s === undefined)
      this.#series.set(key, (s = { labels: { ...labels }, counts: new Float64Array(this.#bounds.length), sum: 0, count: 0 }));
    const series = s;
    const bounds = this.#bounds;
    return {
      observe: (value) => {
        // Non-cumulative per bucket here; cumulated at scrape time. A value above every bound is only in +Inf (the count).
        for (let i = 0; i < bounds.length; i++) {
          if (value <= bounds[i]!) {
            series.counts[i]! += 1;
            break;
          }
        }
        series.sum += value;
        series.count += 1;
      },
    };
  }

  remove(labels: Labels): void {
    this.#series.delete(keyOf(labels));
  }

  reset(): void {
    for (const s of this.#series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  async get() {
    const values: MetricValue[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({
          value: cumulative,
          labels: { ...s.labels, le: le as unknown as string },
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({ value: s.count, labels: { ...s.labels, le: '+Inf' }, metricName: `${this.name}_bucket` });
      values.push({ value: s.sum, labels: s.labels, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: s.labels, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
