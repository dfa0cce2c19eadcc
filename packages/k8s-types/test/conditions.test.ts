import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReconcileLoopError } from '@reconcile-loop/primitives';
import {
  InvalidConditionError,
  findStatusCondition,
  removeStatusCondition,
  setStatusCondition,
  type Condition,
} from '../src/index.js';

const NOW = Date.UTC(2026, 11, 2, 23, 38, 45, 678); // 2026-12-02T23:38:45.678Z
const EARLIER = '2026-01-01T00:00:00Z';
const ready: Condition = {
  type: 'Ready',
  status: 'False',
  observedGeneration: 3,
  lastTransitionTime: EARLIER,
  reason: 'Starting',
  message: '0/2 ready',
};
const reviewed: Condition = { type: 'Reviewed', status: 'True', lastTransitionTime: EARLIER, reason: 'Dashboard', message: '' };

/** A deep-frozen copy: a write that touches it throws in strict mode. */
const frozen = <T>(value: T): T => {
  const copy = structuredClone(value);
  const freeze = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    Object.freeze(v);
    for (const inner of Object.values(v)) freeze(inner);
  };
  freeze(copy);
  return copy;
};

describe('status conditions', () => {
  it('[k8s_types: Status conditions] a new type is appended with lastTransitionTime now, as metav1.Time writes it (RFC 3339, whole seconds), from a Date or epoch ms', () => {
    const set = { type: 'Ready', status: 'True', reason: 'AllReady', message: '2/2 ready' } as const;
    const fromMs = setStatusCondition([reviewed], set, NOW);
    expect(fromMs.changed).toBe(true);
    expect(fromMs.conditions).toEqual([reviewed, { ...set, lastTransitionTime: '2026-12-02T23:38:45Z' }]);
    expect(setStatusCondition(undefined, set, new Date(NOW)).conditions).toEqual([
      { ...set, lastTransitionTime: '2026-12-02T23:38:45Z' },
    ]);
    // Before 1970 too: the seconds are cut, never rounded.
    expect(setStatusCondition(null, set, -500).conditions[0]?.lastTransitionTime).toBe('1969-12-31T23:59:59Z');
  });

  it("[k8s_types: Status conditions] a new type keeps its own lastTransitionTime when it has one ('' is unset)", () => {
    const set = { type: 'Ready', status: 'True', reason: 'AllReady', message: '', lastTransitionTime: EARLIER } as const;
    expect(setStatusCondition([], set, NOW).conditions[0]?.lastTransitionTime).toBe(EARLIER);
    expect(setStatusCondition([], { ...set, lastTransitionTime: '' }, NOW).conditions[0]?.lastTransitionTime).toBe(
      '2026-12-02T23:38:45Z',
    );
  });

  it('[k8s_types: Status conditions] a status change writes the status and moves lastTransitionTime to the given time or now; the entry keeps its place', () => {
    const set = { type: 'Ready', status: 'True', observedGeneration: 3, reason: 'Starting', message: '0/2 ready' } as const;
    const moved = setStatusCondition([ready, reviewed], set, NOW);
    expect(moved).toEqual({
      conditions: [{ ...ready, status: 'True', lastTransitionTime: '2026-12-02T23:38:45Z' }, reviewed],
      changed: true,
    });
    const given = setStatusCondition([ready], { ...set, lastTransitionTime: '2026-06-01T12:00:00Z' }, NOW);
    expect(given.conditions[0]?.lastTransitionTime).toBe('2026-06-01T12:00:00Z');
  });

  it('[k8s_types: Status conditions] an unchanged status keeps lastTransitionTime (a given one too); reason, message and observedGeneration are written when they differ', () => {
    const later = { ...ready, lastTransitionTime: '2026-06-01T12:00:00Z' };
    for (const [field, value] of [
      ['reason', 'StillStarting'],
      ['message', '1/2 ready'],
      ['observedGeneration', 4],
    ] as const) {
      const { conditions, changed } = setStatusCondition([ready], { ...later, [field]: value }, NOW);
      expect(changed, field).toBe(true);
      expect(conditions, field).toEqual([{ ...ready, [field]: value }]);
    }
    // An absent observedGeneration is upstream's 0: leaving it out of the condition clears it.
    const cleared = setStatusCondition([ready], { ...ready, observedGeneration: undefined }, NOW);
    expect(cleared.changed).toBe(true);
    expect(cleared.conditions[0]).not.toHaveProperty('observedGeneration');
  });

  it('[k8s_types: Status conditions] setting what the list already says changes nothing (absent observedGeneration equals 0; only the first entry of a type is read)', () => {
    const same = setStatusCondition([reviewed, ready], { ...ready, lastTransitionTime: undefined }, NOW);
    expect(same).toEqual({ conditions: [reviewed, ready], changed: false });
    const zero = setStatusCondition([reviewed], { ...reviewed, observedGeneration: 0 }, NOW);
    expect(zero).toEqual({ conditions: [reviewed], changed: false });
    const twice = [ready, { ...ready, status: 'True' as const }];
    expect(setStatusCondition(twice, ready, NOW).changed).toBe(false);
  });

  it('[k8s_types: Status conditions] nothing given is mutated: frozen lists and entries are read, a new array is returned every time', () => {
    const list = frozen([ready, reviewed]);
    const writes = [
      setStatusCondition(list, { ...ready, status: 'True' }, NOW),
      setStatusCondition(list, { ...ready, message: 'changed' }, NOW),
      setStatusCondition(list, { ...reviewed, type: 'Synced' }, NOW),
      setStatusCondition(list, ready, NOW),
      removeStatusCondition(list, 'Ready'),
      removeStatusCondition(list, 'Absent'),
    ];
    for (const { conditions } of writes) expect(conditions).not.toBe(list);
    expect(list).toEqual([ready, reviewed]);
  });

  it('[k8s_types: Status conditions] findStatusCondition is the first entry of a type; removeStatusCondition drops every one and says whether one was there', () => {
    const twice = [ready, reviewed, { ...ready, status: 'True' as const }];
    expect(findStatusCondition(twice, 'Ready')).toBe(twice[0]);
    expect(findStatusCondition(twice, 'Absent')).toBeUndefined();
    expect(findStatusCondition(undefined, 'Ready')).toBeUndefined();
    expect(removeStatusCondition(twice, 'Ready')).toEqual({ conditions: [reviewed], changed: true });
    expect(removeStatusCondition(twice, 'Absent')).toEqual({ conditions: twice, changed: false });
    expect(removeStatusCondition(undefined, 'Ready')).toEqual({ conditions: [], changed: false });
  });

  it('[k8s_types: Status conditions] a condition without a type or with a status other than True, False, Unknown throws InvalidConditionError (RL_TYPES_CONDITION_INVALID)', () => {
    const bad = [
      { ...ready, type: '' },
      { ...ready, type: undefined },
      { ...ready, status: 'true' },
      { ...ready, status: 'Yes' },
      { ...ready, status: undefined },
    ] as unknown as Condition[];
    for (const condition of bad) {
      const call = () => setStatusCondition([ready], condition, NOW);
      expect(call, JSON.stringify(condition)).toThrow(InvalidConditionError);
      try {
        call();
      } catch (error) {
        expect(error).toBeInstanceOf(ReconcileLoopError);
        expect((error as InvalidConditionError).code).toBe('RL_TYPES_CONDITION_INVALID');
      }
    }
    expect(() => setStatusCondition([], { ...ready, type: '' }, NOW)).toThrow(/non-empty type/);
    expect(() => setStatusCondition([], { ...ready, status: 'Yes' as 'True' }, NOW)).toThrow(
      /condition Ready: status must be True, False or Unknown, got "Yes"/,
    );
  });

  it('[k8s_types: Status conditions] a now that is no valid date (NaN, an Invalid Date, a year metav1.Time cannot write) throws InvalidConditionError, even when the status does not move', () => {
    const nows = [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      new Date('not a date'),
      Date.UTC(10000, 0, 1),
      Date.UTC(-1, 0, 1),
      '2026',
    ];
    for (const now of nows) {
      expect(() => setStatusCondition([ready], ready, now as number), String(now)).toThrow(InvalidConditionError);
    }
    expect(setStatusCondition([], ready, Date.UTC(9999, 11, 31, 23, 59, 59, 999)).conditions[0]?.lastTransitionTime).toBe(
      EARLIER,
    );
  });

  it('[k8s_types: Status conditions] property: the input is never mutated, setting twice changes nothing the second time, lastTransitionTime moves only when the status changes, every other entry is kept in place', () => {
    const type = fc.constantFrom('Ready', 'Synced', 'Degraded');
    const status = fc.constantFrom('True', 'False', 'Unknown') as fc.Arbitrary<Condition['status']>;
    const time = fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
      .map((d) => `${d.toISOString().slice(0, 19)}Z`);
    const condition = fc.record(
      {
        type,
        status,
        observedGeneration: fc.nat(3),
        lastTransitionTime: time,
        reason: fc.constantFrom('A', 'B'),
        message: fc.constantFrom('', 'm'),
      },
      { requiredKeys: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
    );
    const toSet = fc.record(
      {
        type,
        status,
        observedGeneration: fc.nat(3),
        lastTransitionTime: fc.option(time, { nil: undefined }),
        reason: fc.constantFrom('A', 'B'),
        message: fc.constantFrom('', 'm'),
      },
      { requiredKeys: ['type', 'status', 'reason', 'message'] },
    );
    const now = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) });
    fc.assert(
      fc.property(fc.array(condition, { maxLength: 5 }), toSet, now, now, (list, set, first, second) => {
        const given = frozen(list);
        const once = setStatusCondition(given, set, first);
        expect(given).toEqual(list);
        const again = setStatusCondition(once.conditions, set, second);
        expect(again).toEqual({ conditions: once.conditions, changed: false });

        const at = list.findIndex((c) => c.type === set.type);
        const was = list[at];
        const expected = set.lastTransitionTime ?? `${new Date(first).toISOString().slice(0, 19)}Z`;
        const entry = once.conditions[at === -1 ? list.length : at];
        expect(entry?.status).toBe(set.status);
        expect(entry?.lastTransitionTime).toBe(
          was === undefined || was.status !== set.status ? expected : was.lastTransitionTime,
        );
        expect(once.conditions.length).toBe(list.length + (at === -1 ? 1 : 0));
        for (let i = 0; i < list.length; i++) if (i !== at) expect(once.conditions[i]).toBe(given[i]);
        expect(once.changed).toBe(JSON.stringify(once.conditions) !== JSON.stringify(list));
      }),
      { numRuns: 500 },
    );
  });
});
