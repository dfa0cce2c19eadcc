import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidLabelSelectorError, labelIndexValues, labelSelectorMatcher, type LabelSelector } from '../src/index.js';

// The one-shot form the package no longer exports: compile, then match.
const matchesLabelSelector = (
  selector: Parameters<typeof labelSelectorMatcher>[0],
  labels: Parameters<ReturnType<typeof labelSelectorMatcher>>[0],
): boolean => labelSelectorMatcher(selector)(labels);

describe('label selectors', () => {
  it("[k8s_types: Label selectors] match as apimachinery's LabelSelectorAsSelector: matchLabels AND every expression; In, NotIn, Exists, DoesNotExist", () => {
    const web = { app: 'web', tier: 'front' };
    const cases: Array<[LabelSelector, Record<string, string> | undefined, boolean]> = [
      [{ matchLabels: { app: 'web' } }, web, true],
      [{ matchLabels: { app: 'web', tier: 'back' } }, web, false],
      [{ matchLabels: { app: 'web' } }, undefined, false],
      [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'db'] }] }, web, true],
      [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] }, web, false],
      [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['db'] }] }, web, true],
      [{ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, web, true], // absent key passes NotIn
      [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, web, true],
      [{ matchExpressions: [{ key: 'env', operator: 'Exists' }] }, web, false],
      [{ matchExpressions: [{ key: 'env', operator: 'DoesNotExist' }] }, undefined, true],
      [{ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, web, false],
      [{}, undefined, true], // empty selector: everything
      [{ matchLabels: { toString: 'x' } }, {}, false], // own keys only
    ];
    for (const [selector, labels, want] of cases)
      expect([selector, labels, labelSelectorMatcher(selector)(labels)]).toEqual([selector, labels, want]);
  });

  it('[k8s_types: Label selectors] an absent selector matches nothing (a Service without a selector selects no pod)', () => {
    expect(labelSelectorMatcher(undefined)({ app: 'web' })).toBe(false);
    expect(labelSelectorMatcher(null)({})).toBe(false);
  });

  it('[k8s_types: Label selectors] a selector upstream rejects throws InvalidLabelSelectorError (RL_TYPES_LABEL_SELECTOR_INVALID) when compiled', () => {
    const bad: LabelSelector[] = [
      { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] },
      { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['x'] }] },
      { matchExpressions: [{ key: 'app', operator: 'Gt' as 'In', values: ['1'] }] },
      { matchExpressions: [{ key: '', operator: 'Exists' }] },
      // apimachinery's key and value syntax (labels.NewRequirement): a qualified-name key, a label value.
      { matchLabels: { '': 'x' } },
      { matchLabels: { 'bad key': 'x' } },
      { matchLabels: { 'Example.com/app': 'x' } }, // the prefix is a lower-case DNS subdomain
      { matchLabels: { app: 'not a value' } },
      { matchLabels: { app: 'x'.repeat(64) } },
      { matchExpressions: [{ key: 'app', operator: 'In', values: ['-web'] }] },
      { matchExpressions: [{ key: `${'a'.repeat(64)}`, operator: 'Exists' }] },
    ];
    for (const selector of bad) {
      expect(() => labelSelectorMatcher(selector)).toThrow(InvalidLabelSelectorError);
    }
    try {
      labelSelectorMatcher(bad[0]);
    } catch (error) {
      expect((error as InvalidLabelSelectorError).code).toBe('RL_TYPES_LABEL_SELECTOR_INVALID');
    }
  });

  it('[k8s_types: Label selectors] empty vs absent: {} and empty matchLabels/matchExpressions (null too) match everything; null/undefined match nothing; valid keys and values pass', () => {
    for (const everything of [{}, { matchLabels: {}, matchExpressions: [] }, { matchLabels: null, matchExpressions: null }])
      expect([everything, matchesLabelSelector(everything, undefined), matchesLabelSelector(everything, { a: 'b' })]).toEqual([
        everything,
        true,
        true,
      ]);
    for (const nothing of [null, undefined]) expect(matchesLabelSelector(nothing, {})).toBe(false);
    const ok: LabelSelector = {
      matchLabels: { 'app.kubernetes.io/name': 'web', tier: '' },
      matchExpressions: [{ key: 'example.com/zone', operator: 'In', values: ['eu-1', 'A_b.c'] }],
    };
    expect(matchesLabelSelector(ok, { 'app.kubernetes.io/name': 'web', tier: '', 'example.com/zone': 'A_b.c' })).toBe(true);
  });

  it('[k8s_types: Label selectors] property: a compiled selector answers as each requirement read on its own (matchLabels as Equals, In needs the key, NotIn and DoesNotExist pass without it)', () => {
    const key = fc.constantFrom('a', 'b', 'c');
    const value = fc.constantFrom('x', 'y', 'z');
    const requirement = fc.oneof(
      fc.record({
        key,
        operator: fc.constantFrom('In' as const, 'NotIn' as const),
        values: fc.uniqueArray(value, { minLength: 1 }),
      }),
      fc.record({ key, operator: fc.constantFrom('Exists' as const, 'DoesNotExist' as const) }),
    );
    const selector = fc.record(
      { matchLabels: fc.dictionary(key, value), matchExpressions: fc.array(requirement, { maxLength: 3 }) },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(selector, fc.option(fc.dictionary(key, value), { nil: undefined }), (sel, labels) => {
        const l: Record<string, string> = labels ?? {};
        const has = (k: string): boolean => Object.hasOwn(l, k);
        const want =
          Object.entries(sel.matchLabels ?? {}).every(([k, v]) => has(k) && l[k] === v) &&
          (sel.matchExpressions ?? []).every((r) =>
            r.operator === 'In'
              ? has(r.key) && (r.values as readonly string[]).includes(l[r.key]!)
              : r.operator === 'NotIn'
                ? !has(r.key) || !(r.values as readonly string[]).includes(l[r.key]!)
                : r.operator === 'Exists'
                  ? has(r.key)
                  : !has(r.key),
          );
        expect(labelSelectorMatcher(sel)(labels)).toBe(want);
      }),
      { numRuns: 500 },
    );
  });

  it('[k8s_types: Label selectors] labelIndexValues gives one key=value per label, for a label index', () => {
    expect(labelIndexValues({ app: 'web', tier: 'front' })).toEqual(['app=web', 'tier=front']);
    expect(labelIndexValues(undefined)).toEqual([]);
  });
});
