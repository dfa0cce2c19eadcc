/**
 * Status conditions (apimachinery's `meta.SetStatusCondition`, `FindStatusCondition` and
 * `RemoveStatusCondition` over `[]metav1.Condition`; its `IsStatusConditionTrue`/`False` are
 * `findStatusCondition(list, type)?.status === 'True'` here, not two more names): the list a
 * controller writes to `status.conditions`, one entry per `type`. Pure: upstream edits the slice it is
 * given; here every write returns a new array and never touches the one passed in (a fresh read is the
 * caller's, but a cached view is shared and frozen).
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/**
 * One `metav1.Condition` as it is written to and read from `status.conditions` (a type, not an
 * interface, so it is a JSON object to a write body). `lastTransitionTime` is a `metav1.Time`: RFC 3339
 * in whole seconds, `2026-12-02T23:38:45Z`.
 */
export type Condition = {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  /** The `metadata.generation` the condition was computed from; absent reads as 0, as upstream's omitted int64. */
  readonly observedGeneration?: number | undefined;
  readonly lastTransitionTime: string;
  readonly reason: string;
  readonly message: string;
};

/** The condition to set: `lastTransitionTime` may be left out (then it is `now` when the status moves). */
type ConditionToSet = Omit<Condition, 'lastTransitionTime'> & { readonly lastTransitionTime?: string | undefined };

/** What a write returns: the new list (always a new array) and whether it differs from the one given. */
type ConditionsWrite = { conditions: Condition[]; changed: boolean };

/**
 * A condition that cannot be written (no `type`, or a `status` other than `True`, `False`, `Unknown`,
 * which the apiserver's `metav1.Condition` schema refuses), or a `now` that is no `metav1.Time`.
 */
export class InvalidConditionError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_CONDITION_INVALID' as const;
}

const STATUSES: ReadonlySet<unknown> = new Set(['True', 'False', 'Unknown']);

/**
 * `now` as a `metav1.Time`. Checked on every call, not only when a status moves: a broken clock would
 * otherwise pass until the first transition. Years 0–9999 only, as Go's `Time.MarshalJSON` refuses the rest.
 */
function timeOf(now: Date | number): string {
  const ms = typeof now === 'number' ? now : now instanceof Date ? now.getTime() : Number.NaN;
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) {
    throw new InvalidConditionError(`now must be a Date or epoch milliseconds in years 0000–9999, got ${String(now)}`);
  }
  return `${date.toISOString().slice(0, 19)}Z`; // whole seconds, as metav1.Time writes them
}

function check(condition: ConditionToSet): void {
  const type: unknown = condition?.type;
  if (typeof type !== 'string' || type === '') {
    throw new InvalidConditionError(`a condition needs a non-empty type, got ${JSON.stringify(type) ?? 'undefined'}`);
  }
  if (!STATUSES.has(condition.status)) {
    throw new InvalidConditionError(
      `condition ${type}: status must be True, False or Unknown, got ${JSON.stringify(condition.status) ?? 'undefined'}`,
    );
  }
}

/** A copy of the list, an absent one (a status never written) or anything not an array as empty. */
const copyOf = (conditions: readonly Condition[] | null | undefined): Condition[] =>
  Array.isArray(conditions) ? [...conditions] : [];

/**
 * Sets `condition` in `conditions` (apimachinery's `SetStatusCondition`), returning a new list:
 * - a type not in the list is appended, its `lastTransitionTime` its own or `now`;
 * - for the first entry of the type, a new `status` is written with the given `lastTransitionTime`
 *   or `now`; an unchanged status keeps the entry's `lastTransitionTime` (the given one is ignored);
 *   `reason`, `message` and `observedGeneration` are written when they differ; the entry keeps its place.
 *
 * `changed` is false exactly when the list already said all of this, so setting the same condition
 * twice changes nothing the second time. The list passed in and its entries are never mutated.
 *
 * @throws {InvalidConditionError} for a condition without a `type`, a `status` other than `True`,
 * `False` or `Unknown`, or a `now` that is no valid date.
 */
export function setStatusCondition(
  conditions: readonly Condition[] | null | undefined,
  condition: ConditionToSet,
  now: Date | number,
): ConditionsWrite {
  check(condition);
  const time = timeOf(now);
  const list = copyOf(conditions);
  const at = list.findIndex((c) => c?.type === condition.type);
  const given = condition.lastTransitionTime || undefined; // '' is upstream's zero Time: unset
  if (at === -1) {
    list.push({ ...condition, lastTransitionTime: given ?? time });
    return { conditions: list, changed: true };
  }
  const was = list[at] as Condition;
  const moved = was.status !== condition.status;
  const changed =
    moved ||
    was.reason !== condition.reason ||
    was.message !== condition.message ||
    (was.observedGeneration ?? 0) !== (condition.observedGeneration ?? 0);
  if (!changed) return { conditions: list, changed };
  const { observedGeneration: _, ...kept } = was; // every other field the entry has, in its order
  const generation = condition.observedGeneration;
  list[at] = {
    ...kept,
    status: condition.status,
    lastTransitionTime: moved ? (given ?? time) : was.lastTransitionTime,
    reason: condition.reason,
    message: condition.message,
    ...(generation !== undefined && { observedGeneration: generation }),
  };
  return { conditions: list, changed };
}

/** The first condition of `type` (apimachinery's `FindStatusCondition`), or `undefined`. */
export function findStatusCondition(conditions: readonly Condition[] | null | undefined, type: string): Condition | undefined {
  return Array.isArray(conditions) ? conditions.find((c) => c?.type === type) : undefined;
}

/**
 * Removes every condition of `type` (apimachinery's `RemoveStatusCondition`), returning a new list;
 * `changed` says whether one was there. The list passed in is never mutated.
 */
export function removeStatusCondition(conditions: readonly Condition[] | null | undefined, type: string): ConditionsWrite {
  const list = copyOf(conditions);
  const kept = list.filter((c) => c?.type !== type);
  return { conditions: kept, changed: kept.length !== list.length };
}
