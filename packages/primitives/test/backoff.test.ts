import { describe, expect, it } from 'vitest';
import { Backoff, ManualClock, OptionsError, backoffDelay, checkBackoffPolicy } from '../src/index.js';

describe('primitives: backoff', () => {
  it('[primitives: backoff] doubles from the initial delay up to the cap, and jitter stretches by up to its fraction', () => {
    const policy = { initialMs: 800, maxMs: 30_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 60, 5_000].map((n) => backoffDelay(policy, n))).toEqual([
      800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000,
    ]);
    expect(backoffDelay({ ...policy, jitter: 1 }, 2, () => 0.5)).toBe(2_400);
    expect(backoffDelay({ ...policy, jitter: 1 }, 2, () => 0)).toBe(1_600);
    expect(backoffDelay({ initialMs: 10, maxMs: 1_000, factor: 5 }, 3)).toBe(250);
    expect(backoffDelay({ initialMs: 0, maxMs: 1_000 }, 2_000)).toBe(0);
  });

  it('[primitives: backoff] counts failures, honours Retry-After within [initial, max], and reset starts over', () => {
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 30_000 });
    expect(backoff.nextMs).toBe(1_000);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([1_000, 2_000, 4_000]);
    expect(backoff.failures).toBe(3);
    expect(backoff.next(0)).toBe(1_000);
    expect(backoff.next(90_000)).toBe(30_000);
    expect(backoff.next(5_000)).toBe(5_000);
    expect(backoff.nextMs).toBe(30_000);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(1_000);
  });

  it('[primitives: backoff] a failure resetAfterMs after the previous one starts over (client-go BackoffManager), a closer one climbs', () => {
    const clock = new ManualClock();
    const backoff = new Backoff({ initialMs: 800, maxMs: 30_000, resetAfterMs: 120_000 }, { clock });
    expect(backoff.next()).toBe(800);
    clock.advance(119_999);
    expect(backoff.next()).toBe(1_600);
    clock.advance(120_000);
    expect(backoff.next()).toBe(800);
    expect(() => new Backoff({ initialMs: 1, maxMs: 2, resetAfterMs: 5 })).toThrow(OptionsError);
  });

  it('[primitives: backoff] checkBackoffPolicy refuses what would loop hot or never end, naming the option', () => {
    const bad = [
      { initialMs: -1, maxMs: 10 },
      { initialMs: Number.NaN, maxMs: 10 },
      { initialMs: 10, maxMs: 5 },
      { initialMs: 10, maxMs: 50, factor: 0.5 },
      { initialMs: 10, maxMs: 50, jitter: -1 },
      { initialMs: 10, maxMs: 50, resetAfterMs: 0 },
    ];
    for (const policy of bad) {
      expect(() => checkBackoffPolicy(policy, 'Reflector', 'retry')).toThrow(/^Reflector: retry\./);
    }
    expect(() => checkBackoffPolicy({ initialMs: 0, maxMs: Number.POSITIVE_INFINITY }, 'X', 'retry')).not.toThrow();
  });
});
