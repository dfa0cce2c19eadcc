import type { Clock } from '../src/index.js';

interface Timer {
  id: number;
  fireAt: number;
  callback: () => void;
}

/**
 * Deterministic clock: time moves only in `advance`, each timer fires with `now` set to its fire
 * time, ties in creation order. `earlyMs` makes timers fire that much before their delay elapses.
 */
export class FakeClock implements Clock {
  nowMs: number;
  earlyMs = 0;
  setTimeoutCalls = 0;
  clearTimeoutCalls = 0;
  maxActive = 0;
  readonly delays: number[] = [];
  #timers = new Map<number, Timer>();
  #nextId = 1;

  constructor(start = 0) {
    this.nowMs = start;
  }

  now(): number {
    return this.nowMs;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    this.setTimeoutCalls += 1;
    this.delays.push(delayMs);
    const id = this.#nextId++;
    // Early only by less than the whole delay, so a re-armed remainder still moves time forward.
    const fireAt = this.nowMs + (delayMs > this.earlyMs ? delayMs - this.earlyMs : delayMs);
    this.#timers.set(id, { id, fireAt, callback });
    this.maxActive = Math.max(this.maxActive, this.#timers.size);
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.clearTimeoutCalls += 1;
    this.#timers.delete(handle as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get active(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that comes due on the way. */
  advance(ms: number): void {
    const target = this.nowMs + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers.values()) {
        if (t.fireAt <= target && (next === undefined || t.fireAt < next.fireAt || (t.fireAt === next.fireAt && t.id < next.id))) {
          next = t;
        }
      }
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.nowMs = Math.max(this.nowMs, next.fireAt);
      next.callback();
    }
    this.nowMs = Math.max(this.nowMs, target);
  }

  /** Fires only the next timer (moving time to it if it lies ahead); false when none is armed. */
  runNext(): boolean {
    let next: Timer | undefined;
    for (const t of this.#timers.values()) {
      if (next === undefined || t.fireAt < next.fireAt || (t.fireAt === next.fireAt && t.id < next.id)) next = t;
    }
    if (next === undefined) return false;
    this.#timers.delete(next.id);
    this.nowMs = Math.max(this.nowMs, next.fireAt);
    next.callback();
    return true;
  }
}
