/**
 * Where the controller's decisions go: an `events.k8s.io/v1` Event on the CellSet for every one (via
 * kube-client's `EventRecorder`, which folds repeats into a series and rate-limits per object), a
 * Prometheus counter for the ones an operator alerts on, and an optional listener (the demo prints
 * each decision as a line of its story).
 */
import type { EventRecorder } from '@reconcile-loop/kube-client';
import { Counter, type Registry } from 'prom-client';
import { API_VERSION, KIND, type CellSet } from './api.js';

/** One decision, as recorded. */
export interface Decision {
  /** `namespace/name` of the CellSet. */
  readonly cellSet: string;
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, e.g. `CreatedPod`, `RebuildBudgetExhausted`. */
  readonly reason: string;
  /** What was done, e.g. `CreatePod`, `DeletePod`, `DeadLetter`. */
  readonly action: string;
  readonly note: string;
  /** The pod it is about, if any. */
  readonly pod?: string | undefined;
}

/** The controller's own series, beside controller-runtime's (from `@reconcile-loop/metrics`). */
export interface CellSetMetrics {
  /** Pods created for a slot. */
  readonly podsCreated: Counter<'namespace' | 'cellset'>;
  /** Terminal or drifted pods deleted to be rebuilt, by `reason` (`PodFailed`, `PodSucceeded`, `PodDrifted`). */
  readonly podRebuilds: Counter<'namespace' | 'cellset' | 'reason'>;
  /** Slots dead-lettered by an exhausted rebuild budget. */
  readonly slotsDeadLettered: Counter<'namespace' | 'cellset'>;
  /** Status writes that hit a 409 and were retried from a fresh read. */
  readonly statusConflicts: Counter<'namespace' | 'cellset'>;
}

/** Registers the controller's counters in `registry`. */
export function cellSetMetrics(registry: Registry): CellSetMetrics {
  const labelNames = ['namespace', 'cellset'] as const;
  return {
    podsCreated: new Counter({
      name: 'cellset_pods_created_total',
      help: 'Pods created by the CellSet controller for a slot.',
      labelNames,
      registers: [registry],
    }),
    podRebuilds: new Counter({
      name: 'cellset_pod_rebuilds_total',
      help: 'Terminal or drifted pods the CellSet controller deleted to rebuild their slot, by reason.',
      labelNames: [...labelNames, 'reason'] as const,
      registers: [registry],
    }),
    slotsDeadLettered: new Counter({
      name: 'cellset_slots_dead_lettered_total',
      help: 'Slots whose rebuild budget ran out: no longer rebuilt until the CellSet spec changes.',
      labelNames,
      registers: [registry],
    }),
    statusConflicts: new Counter({
      name: 'cellset_status_write_conflicts_total',
      help: 'CellSet status writes that got 409 Conflict and were retried from a fresh read.',
      labelNames,
      registers: [registry],
    }),
  };
}

/** Records decisions as Events (when a recorder is given) and hands each to `listener`. */
export class DecisionLog {
  readonly #recorder: EventRecorder | undefined;
  readonly #listener: ((decision: Decision) => void) | undefined;

  constructor(recorder: EventRecorder | undefined, listener?: (decision: Decision) => void) {
    this.#recorder = recorder;
    this.#listener = listener;
  }

  /** Records one decision about `set` (and `pod`, the Event's `related`). Never throws: events are best effort. */
  record(set: CellSet, decision: Omit<Decision, 'cellSet'>): void {
    const { namespace, name, uid } = set.metadata;
    this.#recorder?.event(
      { apiVersion: API_VERSION, kind: KIND, name, namespace, uid },
      {
        type: decision.type,
        reason: decision.reason,
        action: decision.action,
        note: decision.note,
        ...(decision.pod !== undefined && { related: { apiVersion: 'v1', kind: 'Pod', name: decision.pod, namespace } }),
      },
    );
    try {
      this.#listener?.({ cellSet: `${namespace ?? ''}/${name}`, ...decision });
    } catch {
      // A listener is a spectator: it must not change what the controller does.
    }
  }
}
