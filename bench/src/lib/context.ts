/** What every benchmark is given: the mode and how many times to repeat a measurement. */
export interface BenchContext {
  /** Tiny sizes, one run each: proves the benchmark still works, measures nothing. */
  readonly smoke: boolean;
  /** Repetitions per measurement (min / median / max are reported). */
  readonly runs: number;
  /** When set, only these pod counts (N) run in the benchmarks that take several sizes. */
  readonly pods?: ReadonlySet<number>;
}

/** Throws unless `value` is a finite number ≥ 0: a benchmark result that is not is malformed. */
export function checkNumber(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new Error(`malformed benchmark result: ${path} = ${String(value)} (expected a finite number >= 0)`);
  }
  return value;
}

/** Checks every number in a (nested) result object; arrays and nested objects are walked. */
export function checkNumbers(path: string, value: unknown): void {
  if (typeof value === 'number') {
    checkNumber(path, value);
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) checkNumbers(`${path}[${i}]`, v);
    return;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) checkNumbers(`${path}.${k}`, v);
  }
}
