/** Summary of repeated measurements: every comparison in the report uses the median. */
export interface Summary {
  min: number;
  median: number;
  max: number;
  runs: number;
}

/** min / median / max of `values` (at least one). */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error('summarize: no values');
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0]!, median: quantile(sorted, 0.5), max: sorted[sorted.length - 1]!, runs: values.length };
}

/** The `q` quantile of ascending `sorted`, by linear interpolation between closest ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** p50 / p99 / max of latency samples. */
export function percentiles(samples: readonly number[]): { p50: number; p99: number; max: number; count: number } {
  const sorted = Float64Array.from(samples).sort();
  const arr = Array.from(sorted);
  return { p50: quantile(arr, 0.5), p99: quantile(arr, 0.99), max: arr[arr.length - 1] ?? Number.NaN, count: arr.length };
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt(value: number, unit = ''): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const text = abs >= 100 ? Math.round(value).toLocaleString('en-US') : abs >= 1 ? value.toFixed(2) : value.toPrecision(3);
  return unit ? `${text} ${unit}` : text;
}

/** `s` in a larger unit (bytes to KB, ops to M ops): every field divided by `divisor`. */
export function scaled(s: Summary, divisor: number): Summary {
  return { min: s.min / divisor, median: s.median / divisor, max: s.max / divisor, runs: s.runs };
}

/** `min / median / max` for a table cell. */
export function fmtSummary(s: Summary, unit = ''): string {
  return `${fmt(s.min)} / ${fmt(s.median)} / ${fmt(s.max)}${unit ? ` ${unit}` : ''}`;
}

/** Prints a plain-text table with a title. */
export function printTable(title: string, header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** Milliseconds on the shared wall clock with sub-millisecond resolution, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}
