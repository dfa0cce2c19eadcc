/**
 * ONE `ReconcileLoop` over the CellSets (`For`) and the pods they own (`Owns`, by controller reference),
 * whose reconcile is `apply(plan(set, pods))`. Reads come from the reflectors' caches; writes go through
 * one `KubeClient`'s idempotent helpers; every decision is an `events.k8s.io/v1` Event and metrics.
 */
import { podResource, podSchema, setStatusCondition, type Condition, type Pod } from '@reconcile-loop/k8s-types';
import { addFinalizer, createIfAbsent, deleteIfPresent, removeFinalizer, updateStatus } from '@reconcile-loop/kube-client';
import { EventRecorder, type KubeClient } from '@reconcile-loop/kube-client';
import { isNotFound } from '@reconcile-loop/kube-client/errors';
import { ReconcileLoop, silentLogger, type ReconcileContext, type ReconcileResult } from '@reconcile-loop/loop';
import type { BackoffPolicy, Clock, LeaderGate, Logger, ShardGate } from '@reconcile-loop/loop';
import { controllerMetrics } from '@reconcile-loop/metrics';
import { kubeReflector } from '@reconcile-loop/reflector';
import { Counter, Registry } from 'prom-client';
import { API_VERSION, CELLSET_LABEL, FINALIZER, KIND, REBUILD_HISTORY_ANNOTATION, podForSlot } from './api.js';
import { cellSetResource, cellSetSchema, type CellSet } from './api.js';
import { DEFAULT_REBUILD_DELAYS_MS, plan, type Note, type Plan } from './plan.js';

export const REPORTING_CONTROLLER = 'cells.reconcile-loop.dev/cellset-controller';
export const DEFAULT_WORKERS = 4; // reconciles wait on writes, not CPU: 4 measured against 1, 2 and 8 (BENCHMARKS.md (30))
export type Decision = Note & { readonly cellSet: string };
type Ctx = ReconcileContext<CellSet, string, { pods: Pod }>;

export interface CellSetControllerOptions {
  readonly client: KubeClient;
  readonly namespace: string; // its CellSets' and pods': a namespaced Role suffices
  readonly eventsClient?: KubeClient | undefined; // Events through a client of their own spend not the writes' limit
  readonly rebuildDelaysMs?: readonly number[] | undefined; // per slot, 0 first; default 0/1/5/30 s
  readonly workers?: number | undefined;
  readonly leaderGate?: LeaderGate | undefined; // reconcile only while leading (a `LeaderElector`)
  readonly shardGate?: ShardGate | undefined; // scale out: only the CellSets whose uid hash it admits (a `ShardMember`)
  readonly onDecision?: ((decision: Decision) => void) | undefined;
  readonly onError?: ((error: unknown) => void) | undefined; // a source failed for good: the loop stopped
  readonly registry?: Registry | undefined;
  readonly logger?: Logger | undefined;
  readonly clock?: Clock | undefined;
  readonly wallClock?: (() => number) | undefined; // epoch ms: the rebuild history outlives the process
  readonly sourceRetry?: BackoffPolicy | undefined;
  readonly syncTimeoutMs?: number | undefined;
}

const gone = (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)); // deleted meanwhile: fine

export function createCellSetController(options: CellSetControllerOptions) {
  const { client, namespace, clock, logger = silentLogger, registry = new Registry(), wallClock = Date.now } = options;
  const delaysMs = options.rebuildDelaysMs ?? DEFAULT_REBUILD_DELAYS_MS;
  const cells = client.resource(cellSetResource, cellSetSchema).inNamespace(namespace);
  const pods = client.resource({ ...podResource, kind: 'Pod' }, podSchema).inNamespace(namespace);
  const counter = (name: string, help: string, labelNames = ['namespace', 'cellset']) =>
    new Counter({ name: `cellset_${name}_total`, help, labelNames, registers: [registry] });
  const counts = {
    podsCreated: counter('pods_created', 'Pods created for a slot.'),
    podRebuilds: counter('pod_rebuilds', 'Pods deleted to rebuild their slot, by reason.', ['namespace', 'cellset', 'reason']),
    slotsDeadLettered: counter('slots_dead_lettered', 'Slots whose rebuild budget ran out, until the spec changes.'),
    statusConflicts: counter('status_write_conflicts', 'Status writes that got 409 Conflict and were retried.'),
  };
  const recorder = { reportingController: REPORTING_CONTROLLER, logger, wallClock };
  const events = new EventRecorder({ client: options.eventsClient ?? client, ...recorder });
  const tell = (set: CellSet, { pod, ...event }: Note): void => {
    const { name, uid } = set.metadata;
    const related = pod === undefined ? {} : { related: { apiVersion: 'v1', kind: 'Pod', name: pod, namespace } };
    events.event({ apiVersion: API_VERSION, kind: KIND, name, namespace, uid }, { ...event, ...related });
    options.onDecision?.({ cellSet: `${namespace}/${name}`, ...event, pod });
  };

  async function reconcile(key: string, ctx: Ctx): Promise<ReconcileResult | undefined> {
    let set = ctx.parent;
    const owned = [...ctx.owned('pods').values()];
    if (set === undefined) return; // gone: our finalizer deleted its pods first
    if (set.metadata.deletionTimestamp === undefined && plan(set, owned, wallClock(), delaysMs).steps.length > 0) {
      // Decide on the budget from a fresh read: the cache may not have seen our last history patch yet.
      const fresh = await cells.get(set.metadata.name, { signal: ctx.signal }).catch(gone);
      if (!fresh || fresh.metadata.uid !== set.metadata.uid) return; // gone or recreated: its own events re-drive it
      set = fresh;
    }
    return apply(key, set, plan(set, owned, wallClock(), delaysMs), ctx);
  }

  async function apply(key: string, set: CellSet, p: Plan, { expect, signal }: Ctx): Promise<ReconcileResult | undefined> {
    const { name } = set.metadata;
    const labels = { namespace, cellset: name };
    for (const step of p.steps) {
      let made = true;
      if (step.do === 'addFinalizer' && !(await addFinalizer(cells, name, FINALIZER, { signal }).catch(gone))) return;
      if (step.do === 'removeFinalizer') await removeFinalizer(cells, name, FINALIZER, { signal }); // NotFound is success
      if (step.do === 'create') {
        const { object, created } = await createIfAbsent(pods, podForSlot(set, step.slot), { signal });
        made = created; // false: an earlier process made it
        // Read your writes: the set is not reconciled again until the pod cache holds the pod (by uid).
        expect('pods').creations(object);
      }
      if (step.do === 'delete') {
        const { name: pod, uid } = step.pod.metadata;
        // Pinned to the UID the cache showed: a newer pod under the same name is left alone (and not told).
        const { outcome } = await deleteIfPresent(pods, pod, { signal, ...(uid !== undefined && { preconditions: { uid } }) });
        made = outcome === 'deleted';
        expect('pods').deletions(step.pod); // until the cache drops this uid (a newer pod of the name gates nothing)
        if (made && step.rebuild !== undefined) counts.podRebuilds.inc({ ...labels, reason: step.rebuild });
      }
      if (made && step.counts !== undefined) counts[step.counts].inc(labels);
      if (made && step.tell !== undefined) tell(set, step.tell);
    }
    if (p.status === undefined) return;
    const history = JSON.stringify(p.history); // integer keys: always in numeric order
    if (history !== (set.metadata.annotations[REBUILD_HISTORY_ANNOTATION] ?? '{}')) {
      const body = { metadata: { annotations: { [REBUILD_HISTORY_ANNOTATION]: history } } }; // metadata: no reconcile
      await cells.patch(name, { type: 'merge', body }, { signal });
    }
    const { attempts = 1 } = (await updateStatus(cells, name, statusOf(set, p.status), { signal }).catch(gone)) ?? {};
    if (attempts > 1) {
      counts.statusConflicts.inc(labels, attempts - 1);
      logger.info({ parentKey: key, attempts }, 'status write conflicted with another writer; re-read and re-applied');
    }
    return p.requeueAfterMs === undefined ? undefined : { requeueAfterMs: p.requeueAfterMs };
  }

  /** Applied to each fresh read of a conflict-retried status write: our fields; other writers' conditions kept. */
  const statusOf = (set: CellSet, observed: NonNullable<Plan['status']>) => (object: Record<string, unknown>) => {
    if ((object['metadata'] as { uid?: string }).uid !== set.metadata.uid) return false; // recreated: not ours to describe
    const status = (object['status'] ??= {}) as { conditions?: Condition[] };
    const now = wallClock(); // one time for the whole write
    let conditions = status.conditions; // ours keep their lastTransitionTime while their status holds
    for (const c of observed.conditions) conditions = setStatusCondition(conditions, c, now).conditions;
    Object.assign(status, observed, { conditions });
  };

  const reflect = { kubeClient: client, namespace, clock, retry: options.sourceRetry, logger };
  const podSource = { name: 'pods', labelSelector: CELLSET_LABEL, resource: podResource, schema: podSchema };
  const loop = new ReconcileLoop<CellSet, string, { pods: Pod }>({
    controller: { name: 'cellset', concurrency: options.workers ?? DEFAULT_WORKERS },
    leadership: options.leaderGate && { gate: options.leaderGate },
    shard: options.shardGate && { gate: options.shardGate },
    sources: { syncTimeoutMs: options.syncTimeoutMs },
    source: kubeReflector({ name: 'cellsets', resource: cellSetResource, schema: cellSetSchema, ...reflect }),
    keyMap: (_set, key) => key, // a CellSet is its own parent: key `namespace/name`
    // A spec change or the start of deletion: our own status and annotation writes do not re-drive the set.
    updateFilter: ({ metadata: a }, { metadata: b }) =>
      a.generation !== b.generation || a.deletionTimestamp !== b.deletionTimestamp,
    // Only this controller's pods (the label each one it creates carries), mapped by controller reference.
    secondary: { pods: { source: kubeReflector({ ...podSource, ...reflect }), owner: { kind: KIND, apiVersion: API_VERSION } } },
    reconcile,
    ...{ observer: controllerMetrics({ registry, controller: 'cellset' }), logger, clock, onError: options.onError },
  });
  return { loop, registry, events };
}
export type CellSetController = ReturnType<typeof createCellSetController>;
