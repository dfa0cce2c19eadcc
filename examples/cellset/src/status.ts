/**
 * What the CellSet's `status` should say, computed from what the controller observed (the cached
 * pods and the rebuild history), and the merge of that into the status a fresh read returned: the
 * controller owns `replicas`, `readyReplicas`, `observedGeneration` and its own condition types;
 * conditions of other types (another writer's) are kept as they are.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { isReady, type CellSet, type Condition } from './api.js';

/** Condition type: every slot has a ready pod. */
export const READY = 'Ready';
/** Condition type: some slots spent their rebuild budget (message names them). */
export const DEAD_LETTERED = 'SlotsDeadLettered';
/** The condition types this controller owns (the others in `status.conditions` are left alone). */
const OWNED_TYPES = new Set([READY, DEAD_LETTERED]);

/** The status fields the controller writes. */
export interface ObservedStatus {
  readonly replicas: number;
  readonly readyReplicas: number;
  readonly observedGeneration: number;
  readonly conditions: readonly Condition[];
}

/**
 * The status for `set` given its live pods (terminating ones excluded by the caller) and its
 * dead-lettered slots. `replicas` counts pods that exist for a slot the spec names; a parked slot's
 * failed pod counts there but never as ready.
 */
export function observedStatus(set: CellSet, pods: readonly Pod[], parkedSlots: readonly number[]): ObservedStatus {
  const generation = set.metadata.generation ?? 0;
  const ready = pods.filter(isReady).length;
  const want = set.spec.replicas;
  const readyCondition: Condition =
    ready === want && pods.length === want
      ? {
          type: READY,
          status: 'True',
          observedGeneration: generation,
          reason: 'AllReplicasReady',
          message: `${ready}/${want} pods ready`,
        }
      : {
          type: READY,
          status: 'False',
          observedGeneration: generation,
          reason: 'ReplicasNotReady',
          message: `${ready}/${want} pods ready`,
        };
  const parked = [...parkedSlots].sort((a, b) => a - b);
  const deadLettered: Condition =
    parked.length > 0
      ? {
          type: DEAD_LETTERED,
          status: 'True',
          observedGeneration: generation,
          reason: 'RebuildBudgetExhausted',
          message: `slots ${parked.join(', ')} failed through the whole rebuild budget; edit the spec to retry them`,
        }
      : {
          type: DEAD_LETTERED,
          status: 'False',
          observedGeneration: generation,
          reason: 'NoneParked',
          message: 'no slot is dead-lettered',
        };
  return {
    replicas: pods.length,
    readyReplicas: ready,
    observedGeneration: generation,
    conditions: [readyCondition, deadLettered],
  };
}

/**
 * Writes `observed` into `status` (the freshly read object's, mutated in place). A condition keeps
 * its `lastTransitionTime` while its `status` is unchanged (metav1's `SetStatusCondition` rule);
 * conditions of types this controller does not own are left alone.
 */
export function applyStatus(status: Record<string, unknown>, observed: ObservedStatus, nowIso: string): void {
  status['replicas'] = observed.replicas;
  status['readyReplicas'] = observed.readyReplicas;
  status['observedGeneration'] = observed.observedGeneration;
  const existing = Array.isArray(status['conditions']) ? (status['conditions'] as Condition[]) : [];
  const foreign = existing.filter((c) => !OWNED_TYPES.has(c?.type));
  const ours = observed.conditions.map((condition) => {
    const before = existing.find((c) => c?.type === condition.type);
    const lastTransitionTime =
      before !== undefined && before.status === condition.status && before.lastTransitionTime
        ? before.lastTransitionTime
        : nowIso;
    return { ...condition, lastTransitionTime };
  });
  status['conditions'] = [...ours, ...foreign];
}
