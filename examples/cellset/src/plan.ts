/**
 * One reconcile's decisions as data: `plan(set, pods, now)` reads and writes nothing, so every rule is
 * unit-tested without a server (test/plan.test.ts); `apply` (controller.ts) makes the writes. In order:
 * - a deleted set: delete every pod, and lift the finalizer only once none is left;
 * - the finalizer before the first pod; a pod for every empty slot; surplus pods deleted;
 * - a terminal or drifted pod goes through its slot's rebuild budget: rebuild n waits `delaysMs[n-1]`
 *   after rebuild n-1 (the first at once); the need after the last dead-letters (parks) the slot:
 *   no rebuild and no new pod until `metadata.generation` changes (a spec edit).
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { z } from 'zod';
import { FINALIZER, REBUILD_HISTORY_ANNOTATION, SLOT_LABEL, TEMPLATE_HASH_ANNOTATION, slotName, templateHash } from './api.js';
import type { CellSet } from './api.js';

export const DEFAULT_REBUILD_DELAYS_MS: readonly number[] = Object.freeze([0, 1_000, 5_000, 30_000]);
const n = z.number();
const onlyTrue = z.literal(true).optional();
const UNTIL = 'the slot is dead-lettered until the spec changes';
/**
 * One slot's rebuilds at one generation: `lastAt` in wall-clock ms (the history outlives the process),
 * `told` the rebuild whose wait was announced (once per scheduled rebuild, not once per requeue).
 */
const slotHistory = z.object({ count: n.int().min(0), generation: n.int(), lastAt: n, told: n.optional(), parked: onlyTrue });
export type RebuildHistory = Readonly<Record<string, z.output<typeof slotHistory>>>;

/** The history annotation, entry by entry: an entry this module did not write (a hand edit) is ignored, never thrown. */
export function readHistory(annotations: Readonly<Record<string, string>>): RebuildHistory {
  try {
    const read = z.record(z.string(), z.unknown()).parse(JSON.parse(annotations[REBUILD_HISTORY_ANNOTATION] ?? '{}'));
    const ok = (slot: string, entry: unknown) => /^\d+$/.test(slot) && slotHistory.safeParse(entry).success;
    return Object.fromEntries(Object.entries(read).filter(([slot, entry]) => ok(slot, entry))) as RebuildHistory;
  } catch {
    return {}; // not JSON, or not an object
  }
}

/** A decision, told as an Event on the set (`pod`: its `related`). */
export type Note = { type: 'Normal' | 'Warning'; reason: string; action: string; note: string; pod?: string | undefined };
const say = (reason: string, action: string, pod: string | undefined, note: string, type: Note['type'] = 'Normal'): Note =>
  pod === undefined ? { type, reason, action, note } : { type, reason, action, note, pod };
/** A write and what to tell once it is made, in order. `counts`: the metric a step adds one to. */
export type Step = { tell?: Note | undefined; counts?: 'podsCreated' | 'slotsDeadLettered' | undefined } & (
  | { do: 'addFinalizer' | 'removeFinalizer' | 'tell' }
  | { do: 'create'; slot: number }
  | { do: 'delete'; pod: Pod; rebuild?: string | undefined }
);
const condition = (type: string, ok: boolean, observedGeneration: number, reason: string, message: string) =>
  ({ type, status: ok ? 'True' : 'False', observedGeneration, reason, message }) as const;
const isReady = (pod: Pod) =>
  pod.status.phase === 'Running' && pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');

/**
 * The plan for `set` given its cached pods (terminating ones included), at wall time `now`: the steps,
 * the history after them (patched back when it changed), the status (none while the set is being
 * deleted) and when to look again.
 */
export function plan(set: CellSet, pods: readonly Pod[], now: number, delaysMs = DEFAULT_REBUILD_DELAYS_MS) {
  const { name, deletionTimestamp, finalizers = [], generation = 0 } = set.metadata;
  const live = pods.filter((pod) => pod.metadata.deletionTimestamp === undefined);
  const read = readHistory(set.metadata.annotations);
  const steps: Step[] = [];
  if (deletionTimestamp !== undefined) {
    if (!finalizers.includes(FINALIZER)) return { steps, history: read }; // not ours (any more): nothing to clean
    steps.push(...live.map((pod) => ({ do: 'delete', pod }) as const));
    const deleted = `the set is being deleted: deleted ${live.map((pod) => pod.metadata.name).join(', ')}`;
    if (live.length > 0) steps.push({ do: 'tell', tell: say('DeletingPods', 'DeletePod', undefined, deleted) });
    // Terminating pods finish on their own; each DELETED event re-drives the set until none is left.
    const lifted = `every pod is gone: removed ${FINALIZER}, the set can go`;
    if (pods.length === 0)
      steps.push({ do: 'removeFinalizer', tell: say('FinalizerRemoved', 'RemoveFinalizer', undefined, lifted) });
    return { steps, history: read };
  }
  const added = `added ${FINALIZER}: the set's pods are deleted before the set goes`;
  if (!finalizers.includes(FINALIZER))
    steps.push({ do: 'addFinalizer', tell: say('FinalizerAdded', 'AddFinalizer', undefined, added) });
  const { replicas } = set.spec;
  // Only the entries that still count: slots the spec names, at this generation.
  let history: RebuildHistory = Object.fromEntries(
    Object.entries(read).filter(([slot, entry]) => Number(slot) < replicas && entry.generation === generation),
  );
  const surplus = new Map(live.map((pod) => [pod.metadata.name, pod])); // every pod no slot claims
  const terminating = new Set(pods.filter((pod) => !live.includes(pod)).map((pod) => pod.metadata.name));
  const [kept, parked]: [Pod[], number[]] = [[], []];
  const budget = `(budget ${delaysMs.map((ms) => ms / 1000).join('/')} s)`;
  let requeueAfterMs: number | undefined;
  for (let slot = 0; slot < replicas; slot++) {
    const podName = slotName(name, slot);
    const pod = surplus.get(podName);
    const entry = history[slot];
    if (pod === undefined || pod.metadata.labels[SLOT_LABEL] !== String(slot)) {
      if (terminating.has(podName)) continue; // its DELETED event re-drives the set
      const created = say('CreatedPod', 'CreatePod', podName, `created ${podName} for slot ${slot}`);
      if (!entry?.parked) steps.push({ do: 'create', slot, tell: created, counts: 'podsCreated' });
      else parked.push(slot); // a parked slot whose pod vanished stays empty
      continue;
    }
    surplus.delete(podName);
    const { phase } = pod.status;
    const drifted = pod.metadata.annotations[TEMPLATE_HASH_ANNOTATION] !== templateHash(set);
    const why = phase === 'Failed' ? 'PodFailed' : phase === 'Succeeded' ? 'PodSucceeded' : drifted ? 'PodDrifted' : undefined;
    const count = entry?.count ?? 0;
    const attempt = `rebuild ${count + 1} of ${delaysMs.length}`;
    const due = entry === undefined ? now : entry.lastAt + (delaysMs[count] ?? 0); // the first rebuild: at once
    if (why !== undefined && !entry?.parked && count < delaysMs.length && due <= now) {
      history = { ...history, [slot]: { count: count + 1, generation, lastAt: now } };
      const text = `${podName} is ${why === 'PodDrifted' ? 'built from an older template' : phase}: deleted to rebuild the slot`;
      const tell = say(why, 'RebuildPod', podName, `${text} (${attempt} at generation ${generation})`);
      steps.push({ do: 'delete', pod, rebuild: why, tell });
      continue;
    }
    if (why !== undefined && !entry?.parked && count < delaysMs.length) {
      requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, due - now);
      if (entry?.told === count + 1) continue;
      history = { ...history, [slot]: { ...entry!, told: count + 1 } };
      const text = `${podName} (${why}): ${attempt} waits ${delaysMs[count]! / 1000} s after the previous one ${budget}`;
      steps.push({ do: 'tell', tell: say('RebuildBackoff', 'WaitToRebuild', podName, text) });
    } else if (why !== undefined && !entry?.parked) {
      history = { ...history, [slot]: { count, generation, lastAt: entry?.lastAt ?? now, parked: true } };
      const text = `${podName} (${why}) was rebuilt ${count} times at generation ${generation} ${budget}`;
      const tell = say('RebuildBudgetExhausted', 'DeadLetter', podName, `${text}; ${UNTIL}`, 'Warning');
      steps.push({ do: 'tell', tell, counts: 'slotsDeadLettered' });
    }
    if (history[slot]?.parked) parked.push(slot);
    kept.push(pod);
  }
  for (const [podName, pod] of surplus) {
    const text = `${podName} is not one of the ${replicas} slots the spec names: deleted`;
    steps.push({ do: 'delete', pod, tell: say('ScaledDown', 'DeletePod', podName, text) });
  }
  const ready = kept.filter(isReady).length;
  const all = ready === replicas && kept.length === replicas;
  const deadLettered = `slots ${parked.join(', ')} failed through the whole rebuild budget; edit the spec to retry them`;
  const conditions = [
    condition('Ready', all, generation, all ? 'AllReplicasReady' : 'ReplicasNotReady', `${ready}/${replicas} pods ready`),
    parked.length > 0
      ? condition('SlotsDeadLettered', true, generation, 'RebuildBudgetExhausted', deadLettered)
      : condition('SlotsDeadLettered', false, generation, 'NoneParked', 'no slot is dead-lettered'),
  ];
  const status = { replicas: kept.length, readyReplicas: ready, observedGeneration: generation, conditions };
  return { steps, history, status, requeueAfterMs };
}
export type Plan = ReturnType<typeof plan>;
