/**
 * Label selectors (apimachinery's `metav1.LabelSelector` and `LabelSelectorAsSelector`): match an
 * object's labels against a Service's, a Deployment's or a NetworkPolicy's selector, and the label
 * index values that let a store answer "which objects carry `k=v`" without a scan.
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** One `matchExpressions` entry. */
export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  /** Non-empty for `In` / `NotIn`; empty or absent for `Exists` / `DoesNotExist`. */
  readonly values?: readonly string[] | null | undefined;
}

/** `metav1.LabelSelector`: every `matchLabels` pair and every expression must hold (AND). */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>> | null | undefined;
  readonly matchExpressions?: readonly LabelSelectorRequirement[] | null | undefined;
}

/** Labels as a Kubernetes object carries them (`metadata.labels`, absent on an object without labels). */
export type Labels = Readonly<Record<string, string>> | null | undefined;

/** A selector that apimachinery's `LabelSelectorAsSelector` rejects (an unknown operator, values where none belong or none where some must be). */
export class InvalidLabelSelectorError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_LABEL_SELECTOR_INVALID' as const;
}

/**
 * Compiles a selector into a matcher, validating it once (apimachinery's `LabelSelectorAsSelector`).
 * As upstream: an absent (`null`/`undefined`) selector matches nothing — a Service without a selector
 * selects no pod — and an empty one (`{}`) matches everything; `NotIn` and `DoesNotExist` match an
 * object without the key.
 *
 * @throws {InvalidLabelSelectorError} for a selector upstream rejects.
 */
export function labelSelectorMatcher(selector: LabelSelector | null | undefined): (labels: Labels) => boolean {
  if (selector === null || selector === undefined) return () => false;
  const tests: Array<(labels: Readonly<Record<string, string>>) => boolean> = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (typeof value !== 'string') throw new InvalidLabelSelectorError(`matchLabels.${key} must be a string`);
    tests.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  for (const [i, requirement] of (selector.matchExpressions ?? []).entries()) {
    const { key, operator } = requirement ?? ({} as LabelSelectorRequirement);
    const values = requirement?.values ?? [];
    if (typeof key !== 'string' || key === '')
      throw new InvalidLabelSelectorError(`matchExpressions[${i}].key must be a non-empty string`);
    const has = (labels: Readonly<Record<string, string>>): boolean => Object.hasOwn(labels, key);
    switch (operator) {
      case 'In':
      case 'NotIn': {
        if (values.length === 0)
          throw new InvalidLabelSelectorError(`matchExpressions[${i}]: for 'In' and 'NotIn' operators, values must be non-empty`);
        const set = new Set(values);
        tests.push(
          operator === 'In'
            ? (labels) => has(labels) && set.has(labels[key]!)
            : (labels) => !has(labels) || !set.has(labels[key]!),
        );
        break;
      }
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0)
          throw new InvalidLabelSelectorError(`matchExpressions[${i}]: values must be empty for 'Exists' and 'DoesNotExist'`);
        tests.push(operator === 'Exists' ? has : (labels) => !has(labels));
        break;
      default:
        throw new InvalidLabelSelectorError(
          `matchExpressions[${i}]: ${JSON.stringify(operator)} is not a valid label selector operator`,
        );
    }
  }
  const none: Readonly<Record<string, string>> = {};
  return (labels) => {
    const l = labels ?? none;
    for (const test of tests) if (!test(l)) return false;
    return true;
  };
}

/**
 * The values of a label index: one `key=value` per label, e.g. for
 * `indexers: { label: (pod) => labelIndexValues(pod.metadata.labels) }`. A selector's `matchLabels`
 * pair then names the objects that can match (`byIndex('label', 'app=web')`), and the matcher
 * checks the rest of the selector on those only.
 */
export function labelIndexValues(labels: Labels): string[] {
  if (labels === null || labels === undefined) return [];
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`);
}
