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

// apimachinery's validation of what a requirement names (`labels.NewRequirement`): a key is a
// qualified name (an optional DNS-1123 subdomain prefix of at most 253 characters, `/`, and a name
// of at most 63), a value at most 63 characters of the same alphabet or empty. A selector that names
// neither could never match an object the apiserver admitted, so upstream refuses it at compile time.
const NAME = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string' || key === '') return 'must be a non-empty string';
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !SUBDOMAIN.test(prefix)))
    return `${JSON.stringify(key)}: the prefix must be a DNS-1123 subdomain`;
  if (name.length > 63 || !NAME.test(name))
    return `${JSON.stringify(key)}: the name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric`;
  return undefined;
}

function valueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a string';
  if (value === '' || (value.length <= 63 && NAME.test(value))) return undefined;
  return `${JSON.stringify(value)} must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric (or empty)`;
}

/**
 * Compiles a selector into a matcher, validating it once (apimachinery's `LabelSelectorAsSelector`).
 * As upstream: an absent (`null`/`undefined`) selector matches nothing — a Service without a selector
 * selects no pod — and an empty one (`{}`, or empty `matchLabels` and `matchExpressions`) matches
 * everything; `NotIn` and `DoesNotExist` match an object without the key. Keys must be qualified
 * names and values valid label values, as upstream requires.
 *
 * @throws {InvalidLabelSelectorError} for a selector upstream rejects.
 */
export function labelSelectorMatcher(selector: LabelSelector | null | undefined): (labels: Labels) => boolean {
  if (selector === null || selector === undefined) return () => false;
  const tests: Array<(labels: Readonly<Record<string, string>>) => boolean> = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const problem = keyProblem(key) ?? valueProblem(value);
    if (problem !== undefined) throw new InvalidLabelSelectorError(`matchLabels.${key} ${problem}`);
    tests.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  for (const [i, requirement] of (selector.matchExpressions ?? []).entries()) {
    const { key, operator } = requirement ?? ({} as LabelSelectorRequirement);
    const values = requirement?.values ?? [];
    const badKey = keyProblem(key);
    if (badKey !== undefined) throw new InvalidLabelSelectorError(`matchExpressions[${i}].key ${badKey}`);
    const has = (labels: Readonly<Record<string, string>>): boolean => Object.hasOwn(labels, key);
    switch (operator) {
      case 'In':
      case 'NotIn': {
        if (values.length === 0)
          throw new InvalidLabelSelectorError(`matchExpressions[${i}]: for 'In' and 'NotIn' operators, values must be non-empty`);
        for (const value of values) {
          const badValue = valueProblem(value);
          if (badValue !== undefined) throw new InvalidLabelSelectorError(`matchExpressions[${i}].values: ${badValue}`);
        }
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
