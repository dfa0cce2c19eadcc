import { ALL_VERBS, type ApiServerVerb } from '../options.js';

/**
 * Request counts by verb and the waiters of `waitFor*`: every count or watch-set change calls
 * {@link notify}, and each waiter re-checks its condition, so tests await state instead of sleeping.
 */
export class RequestCounters {
  readonly #counts = new Map<ApiServerVerb, number>();
  readonly #waiters = new Set<() => void>();
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor() {
    this.reset();
  }

  /** Counts one request and wakes waiters. */
  count(v: ApiServerVerb): void {
    this.#counts.set(v, (this.#counts.get(v) ?? 0) + 1);
    this.notify();
  }

  /** The count for one verb. */
  get(v: ApiServerVerb): number {
    return this.#counts.get(v) ?? 0;
  }

  /** Every verb's count. */
  snapshot(): Readonly<Record<ApiServerVerb, number>> {
    const out = {} as Record<ApiServerVerb, number>;
    for (const v of ALL_VERBS) out[v] = this.#counts.get(v) ?? 0;
    return out;
  }

  /** Zeroes every count. */
  reset(): void {
    for (const v of ALL_VERBS) this.#counts.set(v, 0);
  }

  /** Wakes every waiter to re-check its condition. */
  notify(): void {
    for (const w of [...this.#waiters]) w();
  }

  /** Resolves once `cond()` holds (checked now and at each notify); rejects after `timeoutMs`. */
  waitUntil(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!cond()) return;
        clearTimeout(timer);
        this.#timers.delete(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.#timers.add(timer);
      this.#waiters.add(check);
    });
  }
}
