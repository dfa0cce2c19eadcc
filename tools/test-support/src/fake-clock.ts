import type { Clock } from '@reconcile-loop/object-store';
import { settle } from './settle.js';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A manual {@link Clock}. Time moves only through {@link FakeClock.advance},
 * {@link FakeClock.advanceAsync}, {@link FakeClock.runNext} and {@link FakeClock.jump}; it never
 * moves backward. Timers fire one at a time in deadline order, ties in arming order, each with
 * `now()` at its deadline; a timer armed while time moves fires too if it comes due on the way.
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, Timer>();
  /**
   * Makes every timer fire this much before its delay elapses (a coarse real timer). Only by less
   * than the whole delay, so a re-armed remainder still moves time forward.
   */
  earlyMs = 0;
  /** How many times `setTimeout` was called. */
  setTimeoutCalls = 0;
  /** How many times `clearTimeout` was called (also for handles that already fired). */
  clearTimeoutCalls = 0;
  /** The most timers pending at once so far. */
  maxPending = 0;
  /** Every delay `setTimeout` was given, in call order, as given (before clamping). */
  readonly delays: number[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    this.setTimeoutCalls += 1;
    this.delays.push(delayMs);
    const id = this.#nextId++;
    const delay = delayMs > this.earlyMs ? delayMs - this.earlyMs : delayMs;
    this.#timers.set(id, { id, at: this.#now + Math.max(0, delay), callback });
    this.maxPending = Math.max(this.maxPending, this.#timers.size);
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.clearTimeoutCalls += 1;
    this.#timers.delete(handle as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that comes due on the way, synchronously. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (let timer = this.#earliest(target); timer; timer = this.#earliest(target)) this.#fire(timer);
    this.#now = Math.max(this.#now, target);
  }

  /**
   * Moves time forward by `ms` like {@link FakeClock.advance}, but lets pending promise chains run
   * ({@link settle}) before each timer and at the end, so work a timer starts can arm the next one.
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await settle();
      const timer = this.#earliest(target);
      if (!timer) break;
      this.#fire(timer);
    }
    this.#now = Math.max(this.#now, target);
    await settle();
  }

  /** Fires only the earliest timer, moving time to it if it lies ahead; false when none is armed. */
  runNext(): boolean {
    const timer = this.#earliest(Number.POSITIVE_INFINITY);
    if (!timer) return false;
    this.#fire(timer);
    return true;
  }

  /** Moves time forward by `ms` without firing any timer, as a blocked event loop would. */
  jump(ms: number): void {
    this.#now += ms;
  }

  #earliest(limit: number): Timer | undefined {
    let earliest: Timer | undefined;
    // Map order is arming order, and only a strictly earlier deadline wins: ties fire in arming order.
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
