import { describe, expect, it } from 'vitest';
import { InvalidLabelSelectorError, labelIndexValues, labelSelectorMatcher, type LabelSelector } from '../src/index.js';

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

  it('[k8s_types: Label selectors] labelIndexValues gives one key=value per label, for a label index', () => {
    expect(labelIndexValues({ app: 'web', tier: 'front' })).toEqual(['app=web', 'tier=front']);
    expect(labelIndexValues(undefined)).toEqual([]);
  });
});
