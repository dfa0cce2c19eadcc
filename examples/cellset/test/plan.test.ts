/**
 * `plan(set, pods, now)` without a server: the decisions of one reconcile as data. A small in-memory
 * world applies each plan the way `apply` would (the history back into the annotation, creates and
 * deletes into the pod list), so the budget's timeline is stepped through by hand.
 */
import { podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { describe, expect, it } from 'vitest';
import { FINALIZER, REBUILD_HISTORY_ANNOTATION, cellSetSchema, podForSlot, type CellSet } from '../src/api.js';
import { DEFAULT_REBUILD_DELAYS_MS as B, plan, readHistory, type Plan } from '../src/plan.js';

function cellSet(replicas: number, meta: Record<string, unknown> = {}, image = 'cells/engine:1'): CellSet {
  return cellSetSchema.parse({
    metadata: { name: 'web', namespace: 'default', uid: 'u1', generation: 1, finalizers: [FINALIZER], ...meta },
    spec: { replicas, template: { spec: { containers: [{ name: 'engine', image }] } } },
  });
}

/** The pod `apply` would create for `slot`, as the kubelet left it. */
function pod(
  set: CellSet,
  slot: number,
  phase: 'Running' | 'Failed' | 'Pending' = 'Running',
  extra: Record<string, unknown> = {},
): Pod {
  const body = podForSlot(set, slot);
  const conditions = phase === 'Running' ? [{ type: 'Ready', status: 'True' }] : [];
  return podSchema.parse({
    ...body,
    metadata: { ...body.metadata, uid: `${body.metadata.name}-${phase}`, ...extra },
    status: { phase, conditions },
  });
}

const reasons = (p: Plan) => p.steps.map((s) => (s.tell === undefined ? s.do : `${s.do} ${s.tell.reason}`));
/** The set after `apply` wrote the plan's history. */
const written = (set: CellSet, p: Plan): CellSet =>
  cellSetSchema.parse({
    ...set,
    metadata: { ...set.metadata, annotations: { [REBUILD_HISTORY_ANNOTATION]: JSON.stringify(p.history) } },
  });

describe('plan(set, pods): the decisions without a server', () => {
  it('[cellset: create missing] the finalizer first, then one create per empty slot; surplus and foreign-slot pods deleted; a terminating pod is waited for', () => {
    const fresh = cellSet(3, { finalizers: [] });
    expect(reasons(plan(fresh, [], 0))).toEqual([
      'addFinalizer FinalizerAdded',
      'create CreatedPod',
      'create CreatedPod',
      'create CreatedPod',
    ]);
    const set = cellSet(2);
    const terminating = pod(set, 0, 'Running', { deletionTimestamp: '2026-01-01T00:00:00Z' });
    const extra = pod(cellSet(5), 4);
    const p = plan(set, [terminating, pod(set, 1), extra], 0);
    expect(reasons(p)).toEqual(['delete ScaledDown']);
    expect(p.steps[0]).toMatchObject({ do: 'delete', pod: { metadata: { name: 'web-4', uid: 'web-4-Running' } } });
    expect(p.status).toMatchObject({ replicas: 1, readyReplicas: 1, observedGeneration: 1 });
    expect(p.status?.conditions[0]).toMatchObject({ type: 'Ready', status: 'False', message: '1/2 pods ready' });
  });

  it('[cellset: rebuild budget] rebuild n waits delaysMs[n-1] after rebuild n-1, never earlier; each wait is told once; the need after the last parks the slot, which stays parked', () => {
    let set = cellSet(1);
    const failed = () => pod(set, 0, 'Failed');
    const step = (now: number) => {
      const p = plan(set, [failed()], now);
      set = written(set, p);
      return p;
    };
    let p = step(100);
    expect(reasons(p)).toEqual(['delete PodFailed']);
    expect(p.steps[0]!.tell!.note).toBe('web-0 is Failed: deleted to rebuild the slot (rebuild 1 of 4 at generation 1)');
    for (const [attempt, at] of [
      [2, 1_100],
      [3, 6_100],
      [4, 36_100],
    ] as const) {
      p = step(at - 1);
      expect(reasons(p), `rebuild ${attempt} not before ${at}`).toEqual(['tell RebuildBackoff']);
      expect(p.requeueAfterMs).toBe(1);
      expect(reasons(step(at - 1)), 'told once, not once per requeue').toEqual([]);
      p = step(at);
      expect(p.steps[0]!.tell!.note).toContain(`rebuild ${attempt} of 4 at generation 1`);
    }
    p = step(10 ** 9);
    expect(reasons(p)).toEqual(['tell RebuildBudgetExhausted']);
    expect(p.steps[0]).toMatchObject({ counts: 'slotsDeadLettered', tell: { type: 'Warning', pod: 'web-0' } });
    expect(p.steps[0]!.tell!.note).toBe(
      'web-0 (PodFailed) was rebuilt 4 times at generation 1 (budget 0/1/5/30 s); the slot is dead-lettered until the spec changes',
    );
    expect(readHistory(set.metadata.annotations)).toEqual({ '0': { count: 4, generation: 1, lastAt: 36_100, parked: true } });
    expect(p.status?.conditions[1]).toMatchObject({
      type: 'SlotsDeadLettered',
      status: 'True',
      reason: 'RebuildBudgetExhausted',
    });
    // Parked: the failed pod is kept, a vanished one is not recreated; other slots have their own budget.
    expect(reasons(plan(set, [failed()], 10 ** 10))).toEqual([]);
    expect(reasons(plan(set, [], 10 ** 10))).toEqual([]);
    const two = written(cellSet(2), plan(set, [failed()], 0));
    expect(reasons(plan(two, [pod(two, 0, 'Failed'), pod(two, 1, 'Failed')], 0))).toEqual(['delete PodFailed']);
    expect(B).toEqual([0, 1_000, 5_000, 30_000]);
  });

  it('[cellset: rebuild budget] a drifted pod (another template hash) goes through the same budget; a Succeeded pod too', () => {
    const old = cellSet(2);
    const set = cellSet(2, { generation: 2 }, 'cells/engine:2');
    const p = plan(set, [pod(old, 0), pod(set, 1, 'Pending', {})], 0);
    expect(p.steps.map((s) => s.tell?.note)).toEqual([
      'web-0 is built from an older template: deleted to rebuild the slot (rebuild 1 of 4 at generation 2)',
    ]);
    const done = podSchema.parse({ ...pod(set, 1), status: { phase: 'Succeeded' } });
    expect(reasons(plan(set, [pod(set, 0), done], 0))).toEqual(['delete PodSucceeded']);
  });

  it('[cellset: generation releases] an entry of an older generation counts as none: a spec edit releases a parked slot with a fresh budget; pruning keeps only named slots at this generation', () => {
    const history = { '0': { count: 4, generation: 1, lastAt: 0, parked: true }, '1': { count: 1, generation: 2, lastAt: 7 } };
    const annotations = {
      [REBUILD_HISTORY_ANNOTATION]: JSON.stringify({ ...history, '3': { count: 1, generation: 2, lastAt: 9 } }),
    };
    const set = cellSet(2, { generation: 2, annotations });
    const p = plan(set, [pod(set, 0, 'Failed'), pod(set, 1)], 50);
    expect(reasons(p)).toEqual(['delete PodFailed']);
    expect(p.steps[0]!.tell!.note).toContain('rebuild 1 of 4 at generation 2');
    expect(p.history).toEqual({ '0': { count: 1, generation: 2, lastAt: 50 }, '1': { count: 1, generation: 2, lastAt: 7 } });
    expect(p.status?.conditions[1]).toMatchObject({ type: 'SlotsDeadLettered', status: 'False', reason: 'NoneParked' });
  });

  it('[cellset: rebuild budget] a history annotation it did not write is ignored entry by entry, never thrown; its own round-trips', () => {
    const read = (text: string) => readHistory({ [REBUILD_HISTORY_ANNOTATION]: text });
    expect(readHistory({})).toEqual({});
    expect(read('{nope')).toEqual({});
    expect(read('[1]')).toEqual({});
    const text = JSON.stringify({
      '0': { count: 2, generation: 3, lastAt: 5 },
      x: { count: 1, generation: 1, lastAt: 1 },
      '1': { count: -1, generation: 1, lastAt: 1 },
      '2': { count: 1, generation: 1, lastAt: 'soon' },
    });
    expect(read(text)).toEqual({ '0': { count: 2, generation: 3, lastAt: 5 } });
    const history = {
      '2': { count: 4, generation: 1, lastAt: 4, parked: true as const },
      '10': { count: 1, generation: 1, lastAt: 4 },
    };
    expect(read(JSON.stringify(history))).toEqual(history);
    expect(Object.keys(JSON.parse(JSON.stringify(read(JSON.stringify(history)))))).toEqual(['2', '10']); // numeric order: stable text
  });

  it('[cellset: finalizer cleanup] a deleted set: every live pod deleted, the finalizer lifted only once none is left (terminating ones included); without our finalizer, nothing', () => {
    const gone = cellSet(2, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    const terminating = pod(gone, 1, 'Running', { deletionTimestamp: '2026-01-01T00:00:00Z' });
    const p = plan(gone, [pod(gone, 0), terminating], 0);
    expect(reasons(p)).toEqual(['delete', 'tell DeletingPods']);
    expect(p.status).toBeUndefined();
    expect(reasons(plan(gone, [terminating], 0))).toEqual([]);
    expect(reasons(plan(gone, [], 0))).toEqual(['removeFinalizer FinalizerRemoved']);
    expect(reasons(plan(cellSet(2, { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [] }), [pod(gone, 0)], 0))).toEqual(
      [],
    );
  });
});
