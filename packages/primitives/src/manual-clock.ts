import { ReconcileLoopError } from './errors.js';
import type { Clock, TimerOptions } from './clock.js';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * Thrown by {@link ManualClock.advance}, {@link ManualClock.advanceAsync} and
 * {@link ManualClock.jump} for a step that is negative or not finite: time never goes backwards,
 * and an endless step would never return while a timer re-arms itself.
 */
export class InvalidClockStepError extends ReconcileLoopError {
  readonly code = 'RL_INVALID_CLOCK_STEP' as const;
  /** The rejected step, in milliseconds. */
  readonly ms: number;
  constructor(ms: number) {
    super(`a clock step must be a finite number of milliseconds >= 0, got ${String(ms)}`);
    this.ms = ms;
  }
}

/**
 * A {@link Clock} that moves only when the test tells it to, for testing a controller (or anything
 * else that takes a `Clock`) without real sleeps or `vi.useFakeTimers()`.
 *
 * Invariants:
 * - Time moves only through {@link ManualClock.advance}, {@link ManualClock.advanceAsync},
 *   {@link ManualClock.runNext} and {@link ManualClock.jump}, and never goes backwards.
 * - Timers fire one at a time, earliest deadline first, ties in scheduling order, each with
 *   {@link ManualClock.now} at its deadline.
 * - A timer scheduled while time moves fires in the same step if it comes due on the way.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, Timer>();
  /**
   * Makes every timer fire this much before its delay elapses, as a coarse real timer may. Only
   * when the delay is longer than this, so a re-armed remainder still moves time forward.
   */
  earlyMs = 0;
  /** How many times {@link ManualClock.setTimeout} was called. */
  setTimeoutCalls = 0;
  /** How many of those asked to keep the process alive (`TimerOptions.keepAlive`). */
  keepAliveCalls = 0;
  /** How many times {@link ManualClock.clearTimeout} was called, also for handles that already fired. */
  clearTimeoutCalls = 0;
  /** The most timers pending at once so far. */
  maxPending = 0;
  /** Every delay {@link ManualClock.setTimeout} was given, in call order, as given (before clamping). */
  readonly delays: number[] = [];

  /** @param start the initial {@link ManualClock.now}, in milliseconds. */
  constructor(start = 0) {
    this.#now = start;
  }

  /** The current time in milliseconds; changes only when the test moves it. */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `callback` at `now() + delayMs` (a negative delay counts as zero; see
   * {@link ManualClock.earlyMs}). Nothing fires until time is moved.
   * @returns a handle for {@link ManualClock.clearTimeout}.
   */
  setTimeout(callback: () => void, delayMs: number, options?: TimerOptions): unknown {
    this.setTimeoutCalls += 1;
    if (options?.keepAlive === true) this.keepAliveCalls += 1;
    this.delays.push(delayMs);
    const id = this.#nextId++;
    const delay = delayMs > this.earlyMs ? delayMs - this.earlyMs : delayMs;
    this.#timers.set(id, { id, at: this.#now + Math.max(0, delay), callback });
    this.maxPending = Math.max(this.maxPending, this.#timers.size);
    return id;
  }

  /** Cancels a pending timer; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: unknown): void {
    this.clearTimeoutCalls += 1;
    this.#timers.delete(handle as number);
  }

  /** Timers scheduled and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /**
   * Moves time forward by `ms`, firing every timer that comes due on the way, synchronously: promise
   * continuations a timer starts run only after this returns (use {@link ManualClock.advanceAsync}).
   * @throws {@link InvalidClockStepError} when `ms` is negative or not finite.
   */
  advance(ms: number): void {
    const target = this.#target(ms);
    for (let timer = this.#earliest(target); timer; timer = this.#earliest(target)) this.#fire(timer);
    this.#now = Math.max(this.#now, target);
  }

  /**
   * Moves time forward by `ms` like {@link ManualClock.advance}, but lets pending promise chains
   * run before each timer and once more at the end, so work a timer starts can schedule the next
   * one within the same step. Takes real event-loop turns (`setImmediate`), never real time.
   * @throws {@link InvalidClockStepError} when `ms` is negative or not finite.
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.#target(ms);
    for (;;) {
      await letPromisesRun();
      const timer = this.#earliest(target);
      if (!timer) break;
      this.#fire(timer);
    }
    this.#now = Math.max(this.#now, target);
    await letPromisesRun();
  }

  /**
   * Fires only the earliest timer, moving time to its deadline if that lies ahead.
   * @returns false when no timer is pending.
   */
  runNext(): boolean {
    const timer = this.#earliest(Number.POSITIVE_INFINITY);
    if (!timer) return false;
    this.#fire(timer);
    return true;
  }

  /**
   * Moves time forward by `ms` without firing any timer, as a blocked event loop would: timers
   * that came due stay pending until time is moved again.
   * @throws {@link InvalidClockStepError} when `ms` is negative or not finite.
   */
  jump(ms: number): void {
    this.#now = this.#target(ms);
  }

  #target(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) throw new InvalidClockStepError(ms);
    return this.#now + ms;
  }

  #earliest(limit: number): Timer | undefined {
    let earliest: Timer | undefined;
    // Map order is scheduling order, and only a strictly earlier deadline wins: ties fire in scheduling order.
    for (const timer of this.#timers.values()) {
      if (timer.at <= limit && (!earliest || timer.at < earliest.at)) earliest = timer;
    }
    return earliest;
  }

  #fire(timer: Timer): void {
    this.#timers.delete(timer.id);
    this.#now = Math.max(this.#now, timer.at);
    timer.callback();
  }
}

/** Real macrotask turns, so promise chains and I/O callbacks run; no time passes on any clock. */
async function letPromisesRun(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
