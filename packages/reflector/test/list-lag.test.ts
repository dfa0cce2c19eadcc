/**
 * The list-lag figures (`list-lag.ts`): resourceVersions compared only when both are decimal, the
 * lag in revisions, and `caughtUpAt` as the time of the newest probe the stream reached.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ListLag, revisionsBehind } from '../src/list-lag.js';

describe('list lag', () => {
  it('[k8s_reflector: List lag] revisionsBehind is the difference of two decimal resourceVersions (0 when not behind) and undefined when either is not decimal', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 70n }), fc.bigInt({ min: 0n, max: 2n ** 70n }), (a, b) => {
        const got = revisionsBehind(String(a), String(b));
        expect(got).toBe(a > b ? Number(a - b) : 0);
      }),
    );
    for (const opaque of ['', 'abc', '12a', '-3', '007', '1.5', ' 12'])
      expect([revisionsBehind(opaque, '1'), revisionsBehind('1', opaque)]).toEqual([undefined, undefined]);
    expect(revisionsBehind('5', undefined)).toBeUndefined();
  });

  it('[k8s_reflector: List lag] caughtUpAt is the time of the newest probe the stream has reached, and stays there while the stream is behind a newer one', () => {
    const lag = new ListLag();
    expect(lag.read('10')).toBeUndefined();
    lag.probed('12', 1_000, '10');
    expect(lag.read('10')).toEqual({
      listResourceVersion: '12',
      probedAt: 1_000,
      streamResourceVersion: '10',
      revisions: 2,
      caughtUpAt: undefined,
    });
    lag.advanced('11');
    expect(lag.read('11')?.caughtUpAt).toBeUndefined();
    lag.advanced('12');
    expect(lag.read('12')).toMatchObject({ revisions: 0, caughtUpAt: 1_000 });
    // A newer probe the stream has not reached: the bound stays at the older probe's time.
    lag.probed('20', 2_000, '12');
    expect(lag.read('12')).toMatchObject({ revisions: 8, caughtUpAt: 1_000 });
    lag.advanced('25');
    expect(lag.read('25')).toMatchObject({ revisions: 0, caughtUpAt: 2_000 });
    // Already there when the probe answers.
    lag.probed('25', 3_000, '25');
    expect(lag.read('25')).toMatchObject({ revisions: 0, caughtUpAt: 3_000 });
  });

  it('[k8s_reflector: List lag] opaque resourceVersions: the probe is reported, nothing is compared', () => {
    const lag = new ListLag();
    lag.probed('opaque-b', 1_000, 'opaque-a');
    lag.advanced('opaque-c');
    expect(lag.read('opaque-c')).toEqual({
      listResourceVersion: 'opaque-b',
      probedAt: 1_000,
      streamResourceVersion: 'opaque-c',
      revisions: undefined,
      caughtUpAt: undefined,
    });
  });
});
