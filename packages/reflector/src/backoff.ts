/**
 * The reflector's exponential retry delay. Its level lives on the reflector, not on a stream: a
 * reopened stream continues where the failed one stopped, so a failure that ends streams cannot hold
 * the apiserver at the first delay forever. Only proof of health resets it.
 */
const MAX_LEVEL = 52;

export class Backoff {
  readonly #baseMs: number;
  readonly #maxMs: number;
  #level = 0;

  constructor(baseMs: number, maxMs: number) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  /** The delay the next failure would wait. */
  get nextMs(): number {
    return Math.min(this.#maxMs, this.#baseMs * 2 ** this.#level);
  }

  /**
   * The delay for a failure that just happened, and one level up for the next. A server's
   * `Retry-After` replaces the exponential delay, bounded below by the base (no hot loop on
   * `Retry-After: 0`) and above by the cap.
   */
  take(retryAfterMs?: number): number {
    const delay = retryAfterMs === undefined ? this.nextMs : Math.min(this.#maxMs, Math.max(this.#baseMs, retryAfterMs));
    // Stop climbing at the cap (and at all for a zero base), so 2 ** level never overflows to NaN.
    if (this.#level < MAX_LEVEL && this.#baseMs * 2 ** this.#level < this.#maxMs) this.#level++;
    return delay;
  }

  /** Back to the first delay. */
  reset(): void {
    this.#level = 0;
  }
}
