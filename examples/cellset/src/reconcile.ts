/**
 * One reconcile of one CellSet: the decisions, in order. Every write goes through kube-client's
 * reconciler helpers (idempotent finalizers, create-if-absent, delete-if-present with a UID
 * precondition, status with conflict retry), every create and delete is recorded as an expectation
 * (so a reconcile that runs before the pod cache saw the write cannot act on the stale view), and
 * every decision is an Event.
 *
 * Order matters and is the invariant: the finalizer is in place before the first pod exists (so no
 * pod can outlive its set unnoticed), and on deletion every pod is gone before the finalizer is
 * lifted (so a deleted set leaves nothing behind, with or without a garbage collector).
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import {
  addFinalizer,
  createIfAbsent,
  deleteIfPresent,
  removeFinalizer,
  updateStatus,
  type ResourceClient,
} from '@reconcile-loop/kube-client';
import { isNotFound } from '@reconcile-loop/kube-client/errors';
import type { Logger, ReconcileContext, ReconcileResult } from '@reconcile-loop/loop';
import {
  FINALIZER,
  REBUILD_HISTORY_ANNOTATION,
  isDrifted,
  isTerminal,
  podForSlot,
  slotName,
  slotOf,
  type CellSet,
} from './api.js';
import type { CellSetMetrics, DecisionLog } from './decisions.js';
import { decide, isParked, prune, readHistory, recordPark, recordRebuild, writeHistory, type RebuildHistory } from './rebuild.js';
import { applyStatus, observedStatus } from './status.js';

/** Test and demo hooks: points where a test can pause the controller or race it. */
export interface ReconcileHooks {
  /** After each pod create returned; `total` counts this process's creates. Awaited (a pause hook never resolves). */
  afterCreate?(pod: string, total: number): void | Promise<void>;
  /** Inside each status write attempt that will write, after the read and before the write (a concurrent writer goes here); `attempt` counts writes. */
  beforeStatusWrite?(cellSet: string, attempt: number): void | Promise<void>;
}

/** What a reconcile needs besides its context. */
export interface ReconcileDeps {
  /** CellSets of the controller's namespace. */
  readonly cells: ResourceClient<CellSet>;
  /** Pods of the controller's namespace. */
  readonly pods: ResourceClient<Pod>;
  readonly rebuildDelaysMs: readonly number[];
  /** Wall time in epoch ms: the rebuild history outlives the process, so it is not the loop's clock. */
  readonly wallClock: () => number;
  readonly decisions: DecisionLog;
  readonly metrics: CellSetMetrics;
  readonly logger: Logger;
  readonly hooks: ReconcileHooks;
  /**
   * The newest rebuild history per CellSet, by `namespace/name`: the history this process decided
   * with last, the uid it belongs to, and the annotation texts it knows (`known`: the one it first
   * read, then each it wrote). The cache may lag those writes; while the cached annotation is one of
   * those texts, this entry is the newer truth. Any other text means someone else wrote it (another
   * leader while this one stood by): the cache's is read instead.
   */
  readonly histories: Map<string, HistoryEntry>;
  /**
   * Waits already announced, per CellSet (one Event per scheduled rebuild, not one per requeue):
   * `uid/generation` they belong to, and `slot/attempt` ids. Reset when either changes, dropped with
   * the set, so it never outgrows the sets and slots that exist.
   */
  readonly announced: Map<string, { readonly at: string; readonly ids: Set<string> }>;
  /** Pod creates by this process (for `afterCreate`). */
  creates: number;
}

/** One entry of {@link ReconcileDeps.histories}. */
export interface HistoryEntry {
  readonly uid: string | undefined;
  readonly history: RebuildHistory;
  /** Oldest first; the last is what this process wrote last. Bounded. */
  readonly known: ReadonlyArray<string | undefined>;
}

/** How many written texts an entry remembers: the cache lags by a few writes at most. */
const KNOWN_TEXTS = 16;

type Ctx = ReconcileContext<CellSet, string, { pods: Pod }>;

/** Reconciles CellSet `key` (`namespace/name`). */
export async function reconcileCellSet(key: string, ctx: Ctx, d: ReconcileDeps): Promise<ReconcileResult | void> {
  const set = ctx.parent;
  const owned = [...ctx.owned('pods').values()];
  if (set === undefined) {
    // Gone: our finalizer deleted its pods first (or someone force-removed it; the GC takes the pods then).
    d.histories.delete(key);
    d.announced.delete(key);
    return;
  }
  if (set.metadata.deletionTimestamp !== undefined) return finalize(key, set, owned, ctx, d);
  const { signal } = ctx;
  const name = set.metadata.name;

  if (!(set.metadata.finalizers ?? []).includes(FINALIZER)) {
    try {
      await addFinalizer(d.cells, name, FINALIZER, { signal });
    } catch (error) {
      if (isNotFound(error)) return; // deleted meanwhile: its DELETED event re-drives the key
      throw error;
    }
    d.decisions.record(set, {
      type: 'Normal',
      reason: 'FinalizerAdded',
      action: 'AddFinalizer',
      note: `added ${FINALIZER}: the set's pods are deleted before the set goes`,
    });
  }

  const generation = set.metadata.generation ?? 0;
  const replicas = set.spec.replicas;
  const now = d.wallClock();
  let history = prune(historyOf(key, set, d), replicas, generation);
  const live = new Map<number, Pod>();
  const terminating = new Set<string>();
  const extras: Pod[] = [];
  for (const pod of owned) {
    if (pod.metadata.deletionTimestamp !== undefined) terminating.add(pod.metadata.name);
    else {
      const slot = slotOf(pod);
      if (slot !== undefined && slot < replicas && pod.metadata.name === slotName(name, slot)) live.set(slot, pod);
      else extras.push(pod);
    }
  }

  let waitMs: number | undefined;
  const parked: number[] = [];
  const gone = new Set<number>(); // slots whose pod this reconcile deleted
  for (let slot = 0; slot < replicas; slot++) {
    const podName = slotName(name, slot);
    const pod = live.get(slot);
    if (pod === undefined) {
      if (terminating.has(podName)) continue; // its DELETED event re-drives the set
      if (isParked(history, slot, generation)) {
        parked.push(slot); // a parked slot whose pod vanished stays absent until the spec changes
        continue;
      }
      await createPod(set, slot, ctx, d);
      continue;
    }
    const why = isTerminal(pod)
      ? pod.status.phase === 'Failed'
        ? 'PodFailed'
        : 'PodSucceeded'
      : isDrifted(pod, set)
        ? 'PodDrifted'
        : undefined;
    if (why === undefined) {
      if (isParked(history, slot, generation)) parked.push(slot);
      continue;
    }
    const decision = decide(history, slot, generation, now, d.rebuildDelaysMs);
    const budget = `${d.rebuildDelaysMs.map((ms) => ms / 1000).join('/')} s`;
    if (decision.kind === 'parked') {
      parked.push(slot);
    } else if (decision.kind === 'park') {
      history = recordPark(history, slot, generation, now);
      parked.push(slot);
      d.metrics.slotsDeadLettered.inc(labels(set));
      d.decisions.record(set, {
        type: 'Warning',
        reason: 'RebuildBudgetExhausted',
        action: 'DeadLetter',
        pod: podName,
        note: `${podName} (${why}) was rebuilt ${decision.rebuilds} times at generation ${generation} (budget ${budget}); the slot is dead-lettered until the spec changes`,
      });
    } else if (decision.kind === 'wait') {
      waitMs = Math.min(waitMs ?? Infinity, decision.ms);
      const at = `${set.metadata.uid}/${generation}`;
      let announced = d.announced.get(key);
      if (announced?.at !== at) d.announced.set(key, (announced = { at, ids: new Set() }));
      const id = `${slot}/${decision.attempt}`;
      if (!announced.ids.has(id)) {
        announced.ids.add(id);
        d.decisions.record(set, {
          type: 'Normal',
          reason: 'RebuildBackoff',
          action: 'WaitToRebuild',
          pod: podName,
          note: `${podName} (${why}): rebuild ${decision.attempt} of ${d.rebuildDelaysMs.length} waits ${d.rebuildDelaysMs[decision.attempt - 1]! / 1000} s after the previous one (budget ${budget})`,
        });
      }
    } else {
      await deletePod(pod, ctx, d);
      gone.add(slot);
      history = recordRebuild(history, slot, generation, now);
      d.metrics.podRebuilds.inc({ ...labels(set), reason: why });
      d.decisions.record(set, {
        type: 'Normal',
        reason: why,
        action: 'RebuildPod',
        pod: podName,
        note: `${podName} is ${why === 'PodDrifted' ? 'built from an older template' : `${pod.status.phase}`}: deleted to rebuild the slot (rebuild ${decision.attempt} of ${d.rebuildDelaysMs.length} at generation ${generation})`,
      });
    }
  }
  for (const pod of extras) {
    await deletePod(pod, ctx, d);
    d.decisions.record(set, {
      type: 'Normal',
      reason: 'ScaledDown',
      action: 'DeletePod',
      pod: pod.metadata.name,
      note: `${pod.metadata.name} is not one of the ${replicas} slots the spec names: deleted`,
    });
  }

  await saveHistory(key, set, history, ctx.signal, d);
  await writeStatus(
    key,
    set,
    [...live].filter(([slot]) => !gone.has(slot)).map(([, pod]) => pod),
    parked,
    ctx,
    d,
  );
  return waitMs === undefined ? undefined : { requeueAfterMs: waitMs };
}

/** The metric labels of a set. */
function labels(set: CellSet): { namespace: string; cellset: string } {
  return { namespace: set.metadata.namespace ?? '', cellset: set.metadata.name };
}

/** The history to decide with: this process's newest, unless the set was recreated or someone else wrote it since. */
function historyOf(key: string, set: CellSet, d: ReconcileDeps): RebuildHistory {
  const known = d.histories.get(key);
  const cached = set.metadata.annotations[REBUILD_HISTORY_ANNOTATION];
  if (known !== undefined && known.uid === set.metadata.uid && known.known.includes(cached)) return known.history;
  const { history, dropped } = readHistory(set.metadata.annotations);
  if (dropped.length > 0)
    d.logger.warn(
      { parentKey: key, dropped },
      `unreadable entries in ${REBUILD_HISTORY_ANNOTATION} dropped; those slots start a fresh budget`,
    );
  return history;
}

/** Persists the history when it changed (a metadata patch: no generation change, so no reconcile). */
async function saveHistory(
  key: string,
  set: CellSet,
  after: RebuildHistory,
  signal: AbortSignal,
  d: ReconcileDeps,
): Promise<void> {
  const text = writeHistory(after);
  const cached = set.metadata.annotations[REBUILD_HISTORY_ANNOTATION];
  const entry = d.histories.get(key);
  const texts = entry !== undefined && entry.uid === set.metadata.uid && entry.known.includes(cached) ? entry.known : [cached];
  // What the annotation holds once the cache saw every write: the last text known.
  const latest = texts.at(-1);
  const unchanged = (latest ?? writeHistory({})) === text; // no annotation reads as an empty history
  d.histories.set(key, {
    uid: set.metadata.uid,
    history: after,
    known: unchanged ? texts : [...texts.slice(1 - KNOWN_TEXTS), text],
  });
  if (unchanged) return;
  await d.cells.patch(
    set.metadata.name,
    { type: 'merge', body: { metadata: { annotations: { [REBUILD_HISTORY_ANNOTATION]: text } } } },
    { signal },
  );
}

async function createPod(set: CellSet, slot: number, ctx: Ctx, d: ReconcileDeps): Promise<void> {
  const body = podForSlot(set, slot);
  const { created } = await createIfAbsent(d.pods, body, { signal: ctx.signal });
  // Read your writes: no reconcile of this set until the pod cache holds the pod (ExpectCreations).
  ctx.expect('pods').creations(`${set.metadata.namespace}/${body.metadata.name}`);
  if (!created) return; // a previous process (killed before it saw its create) made it: nothing new to say
  d.metrics.podsCreated.inc(labels(set));
  d.decisions.record(set, {
    type: 'Normal',
    reason: 'CreatedPod',
    action: 'CreatePod',
    pod: body.metadata.name,
    note: `created ${body.metadata.name} for slot ${slot}`,
  });
  d.creates += 1;
  await d.hooks.afterCreate?.(body.metadata.name, d.creates);
}

/** Deletes exactly this pod (a UID precondition: a newer pod under the same name is left alone). */
async function deletePod(pod: Pod, ctx: Ctx, d: ReconcileDeps): Promise<void> {
  await deleteIfPresent(d.pods, pod.metadata.name, {
    signal: ctx.signal,
    ...(pod.metadata.uid !== undefined && { preconditions: { uid: pod.metadata.uid } }),
  });
  ctx.expect('pods').deletions(`${pod.metadata.namespace}/${pod.metadata.name}`);
}

/** Status with conflict retry: each attempt re-reads the set and re-applies what was observed. */
async function writeStatus(key: string, set: CellSet, pods: Pod[], parked: number[], ctx: Ctx, d: ReconcileDeps): Promise<void> {
  const observed = observedStatus(set, pods, parked);
  let tries = 0;
  try {
    const { attempts } = await updateStatus(
      d.cells,
      set.metadata.name,
      async (object) => {
        // A set recreated under the same name since the cache saw it: not ours to describe.
        if ((object['metadata'] as { uid?: string }).uid !== set.metadata.uid) return false;
        const status = (object['status'] ??= {}) as Record<string, unknown>;
        const before = JSON.stringify(status);
        applyStatus(status, observed, new Date(d.wallClock()).toISOString().replace(/\.\d{3}Z$/, 'Z'));
        if (JSON.stringify(status) !== before) await d.hooks.beforeStatusWrite?.(key, ++tries);
      },
      { signal: ctx.signal },
    );
    if (attempts > 1) {
      d.metrics.statusConflicts.inc(labels(set), attempts - 1);
      d.logger.info({ parentKey: key, attempts }, 'status write conflicted with another writer; re-read and re-applied');
    }
  } catch (error) {
    if (isNotFound(error)) return; // deleted meanwhile
    throw error;
  }
}

/** The set is being deleted: delete its pods, and lift the finalizer once none is left. */
async function finalize(key: string, set: CellSet, owned: Pod[], ctx: Ctx, d: ReconcileDeps): Promise<void> {
  if (!(set.metadata.finalizers ?? []).includes(FINALIZER)) return; // not ours (any more): nothing to clean
  const live = owned.filter((pod) => pod.metadata.deletionTimestamp === undefined);
  for (const pod of live) await deletePod(pod, ctx, d);
  if (live.length > 0) {
    d.decisions.record(set, {
      type: 'Normal',
      reason: 'DeletingPods',
      action: 'DeletePod',
      note: `the set is being deleted: deleted ${live.map((p) => p.metadata.name).join(', ')}`,
    });
  }
  // Terminating pods finish on their own; each DELETED event re-drives the set until none is left.
  if (owned.length > 0) return;
  try {
    await removeFinalizer(d.cells, set.metadata.name, FINALIZER, { signal: ctx.signal });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  d.histories.delete(key);
  d.announced.delete(key);
  d.decisions.record(set, {
    type: 'Normal',
    reason: 'FinalizerRemoved',
    action: 'RemoveFinalizer',
    note: `every pod is gone: removed ${FINALIZER}, the set can go`,
  });
}
