/**
 * Per-source debounce of parent keys: a burst of events for one key becomes one offer. kube-rs's
 * controller debounce, with the maximum wait it lacks (its docs warn that a steady stream of events
 * can postpone a reconcile indefinitely).
 */
import type { Clock, Key } from '@reconcile-loop/primitives';

interface Burst {
  /** When the key is offered unless another event moves it: last event + `delayMs`, capped at `deadline`. */
  due: number;
  /** First event of the burst + `maxWaitMs`: `due` never passes it. */
  readonly deadline: number;
  timer: unknown;
}

/**
 * Invariants, on the clock given: a key is offered once per burst; an offer comes `delayMs` after the
 * burst's last event or `maxWaitMs` after its first, whichever is earlier (so never later than
 * `maxWaitMs` after any event it carries, timer lateness aside); an event after the offer starts a new
 * burst. One timer per pending key, re-armed lazily: an event only moves `due`, and a timer that
 * fires before `due` sleeps again for the rest, so a burst of n events costs O(1) timers, not n.
 */
export class Debouncer<P extends Key> {
  readonly #delayMs: number;
  readonly #maxWaitMs: number;
  readonly #clock: Clock;
  readonly #offer: (key: P) => void;
  readonly #bursts = new Map<P, Burst>();

  constructor(options: { delayMs: number; maxWaitMs: number; clock: Clock; offer: (key: P) => void }) {
    this.#delayMs = options.delayMs;
    this.#maxWaitMs = options.maxWaitMs;
    this.#clock = options.clock;
    this.#offer = options.offer;
  }

  /** Keys waiting for their burst to end. */
  get pending(): number {
    return this.#bursts.size;
  }

  /** Whether `key` waits in a burst: it will be offered when the burst ends. */
  holds(key: P): boolean {
    return this.#bursts.has(key);
  }

  /** An event for `key`: starts its burst or extends it, up to the burst's deadline. */
  push(key: P): void {
    const now = this.#clock.now();
    const burst = this.#bursts.get(key);
    if (burst !== undefined) {
      burst.due = Math.min(now + this.#delayMs, burst.deadline);
      return;
    }
    const deadline = now + this.#maxWaitMs;
    const fresh: Burst = { due: Math.min(now + this.#delayMs, deadline), deadline, timer: undefined };
    this.#bursts.set(key, fresh);
    this.#arm(key, fresh, now);
  }

  /** Drops every pending key and its timer (the loop is stopping; its queue drops queued keys too). */
  clear(): void {
    for (const burst of this.#bursts.values()) this.#clock.clearTimeout(burst.timer);
    this.#bursts.clear();
  }

  #arm(key: P, burst: Burst, now: number): void {
    burst.timer = this.#clock.setTimeout(() => this.#expire(key, burst), burst.due - now);
  }

  #expire(key: P, burst: Burst): void {
    if (this.#bursts.get(key) !== burst) return;
    const now = this.#clock.now();
    if (now < burst.due) {
      this.#arm(key, burst, now);
      return;
    }
    this.#bursts.delete(key);
    this.#offer(key);
  }
}
