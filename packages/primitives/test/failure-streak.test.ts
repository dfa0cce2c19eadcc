import { describe, expect, it } from 'vitest';
import { FailureStreak, ManualClock, type Logger } from '../src/index.js';

interface Line {
  readonly level: keyof Logger;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

function recording(): Logger & { readonly lines: Line[]; loud(): Line[] } {
  const lines: Line[] = [];
  const at = (level: keyof Logger) => (fields: Record<string, unknown>, message: string) =>
    void lines.push({ level, fields, message });
  return {
    lines,
    loud: () => lines.filter((l) => l.level !== 'debug'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}

const kindOf = (error: unknown): string => (error as { code?: string }).code ?? 'unknown';

function setup(options: { level?: (error: unknown) => keyof Logger; signature?: (error: unknown) => string } = {}) {
  const clock = new ManualClock(5_000);
  const logger = recording();
  const streak = new FailureStreak({
    logger,
    clock,
    failure: 'error reading the thing',
    recovery: 'the thing can be read again',
    ...options,
  });
  return { clock, logger, streak };
}

describe('primitives: failure streak', () => {
  it('[primitives: failure streak] 50 failures and a recovery are exactly two lines above debug; the repeats are at debug with their count', () => {
    const { clock, logger, streak } = setup();
    const boom = new Error('connection refused');
    for (let i = 1; i <= 50; i++) {
      expect(streak.failed(boom, { request: 'GET' })).toBe(i);
      clock.advance(2_000);
    }
    expect(logger.loud()).toEqual([
      { level: 'error', fields: { request: 'GET', err: boom, consecutiveFailures: 1 }, message: 'error reading the thing' },
    ]);
    const repeats = logger.lines.filter((l) => l.level === 'debug');
    expect(repeats).toHaveLength(49);
    expect(repeats.at(-1)).toEqual({
      level: 'debug',
      fields: { request: 'GET', err: boom, consecutiveFailures: 50 },
      message: 'error reading the thing',
    });
    streak.succeeded({ request: 'GET' });
    streak.succeeded({ request: 'GET' }); // a second success has nothing to recover from
    expect(logger.loud()).toHaveLength(2);
    expect(logger.loud()[1]).toEqual({
      level: 'info',
      fields: { request: 'GET', failures: 50, downMs: 100_000 },
      message: 'the thing can be read again',
    });
  });

  it('[primitives: failure streak] a failure of a new kind in the same streak is logged again at its level; back to the old kind is news too', () => {
    const { logger, streak } = setup({ signature: kindOf, level: (e) => (kindOf(e) === 'FORBIDDEN' ? 'error' : 'warn') });
    const timeout = Object.assign(new Error('timed out'), { code: 'TIMEOUT' });
    const forbidden = Object.assign(new Error('forbidden'), { code: 'FORBIDDEN' });
    for (const error of [timeout, timeout, forbidden, forbidden, forbidden, timeout]) streak.failed(error);
    streak.failed(timeout, {}, { failure: 'error writing the thing' }); // another message is another kind
    streak.failed(timeout, {}, { failure: 'error writing the thing' });
    expect(logger.lines.map((l) => [l.level, l.message, l.fields['consecutiveFailures']])).toEqual([
      ['warn', 'error reading the thing', 1],
      ['debug', 'error reading the thing', 2],
      ['error', 'error reading the thing', 3],
      ['debug', 'error reading the thing', 4],
      ['debug', 'error reading the thing', 5],
      ['warn', 'error reading the thing', 6],
      ['warn', 'error writing the thing', 7],
      ['debug', 'error writing the thing', 8],
    ]);
    streak.succeeded({}, { recovery: 'recovered: written' });
    expect(logger.lines.at(-1)).toMatchObject({ level: 'info', message: 'recovered: written', fields: { failures: 8 } });
  });

  it('[primitives: failure streak] a routine failure (level info) is logged every time and alone calls for no recovery line', () => {
    const { logger, streak } = setup({ signature: kindOf, level: (e) => (kindOf(e) === 'EXPIRED' ? 'info' : 'warn') });
    const expired = Object.assign(new Error('too old'), { code: 'EXPIRED' });
    streak.failed(expired);
    streak.failed(expired);
    expect(streak.failures).toBe(2);
    streak.succeeded();
    expect(logger.lines.map((l) => l.level)).toEqual(['info', 'info']);
    expect(streak.failures).toBe(0);
    // Within a streak that was logged loudly, a routine failure neither hides nor repeats it.
    const down = Object.assign(new Error('down'), { code: 'DOWN' });
    streak.failed(down);
    streak.failed(expired);
    streak.failed(down);
    streak.succeeded();
    expect(logger.lines.slice(2).map((l) => [l.level, l.fields['failures'] ?? l.fields['consecutiveFailures']])).toEqual([
      ['warn', 1],
      ['info', 2],
      ['debug', 3],
      ['info', 3], // the recovery
    ]);
  });

  it('[primitives: failure streak] since is the first failure (or its send time), lastError the latest; a success resets them and the next streak starts over', () => {
    const { clock, logger, streak } = setup();
    expect([streak.failures, streak.since, streak.lastError]).toEqual([0, undefined, undefined]);
    const first = new Error('first');
    const second = new Error('second');
    streak.failed(first, {}, { sentAt: 4_000 });
    clock.advance(3_000);
    streak.failed(second, {}, { sentAt: 7_000 });
    expect([streak.failures, streak.since, streak.lastError]).toEqual([2, 4_000, second]);
    streak.succeeded();
    expect(logger.lines.at(-1)?.fields).toEqual({ failures: 2, downMs: 4_000 }); // from the first send, 4 s before now
    expect([streak.failures, streak.since, streak.lastError]).toEqual([0, undefined, undefined]);
    clock.advance(10_000);
    streak.failed(first);
    expect([streak.failures, streak.since, streak.lastError]).toEqual([1, 18_000, first]);
    expect(logger.lines.at(-1)).toMatchObject({ level: 'error', fields: { consecutiveFailures: 1 } }); // loud again: a new streak
    streak.succeeded();
    expect(logger.loud().map((l) => l.level)).toEqual(['error', 'info', 'error', 'info']);
  });

  it('[primitives: failure streak] without a logger it still counts and times the streak', () => {
    const clock = new ManualClock(0);
    const streak = new FailureStreak({ logger: undefined, clock, failure: 'x', recovery: 'y' });
    expect(streak.failed('a string thrown')).toBe(1);
    clock.advance(500);
    expect(streak.failed(new Error('e'))).toBe(2);
    expect([streak.since, streak.failures]).toEqual([0, 2]);
    streak.succeeded();
    expect([streak.since, streak.failures, streak.lastError]).toEqual([undefined, 0, undefined]);
  });
});
