import { ReconcileLoop, type Clock, type Logger, type Source } from '@reconcile-loop/loop';
import { isReady, isTerminating, restarts, type PodView } from './pod-view.js';

/** One cell as the tracker reports it. */
export interface CellView {
  readonly name: string;
  /** The pod phase, or `Terminating` once a graceful deletion began (as kubectl prints it). */
  readonly phase: string;
  readonly ready: boolean;
  readonly restarts: number;
}

/** What one reconcile saw of one pool. */
export interface PoolView {
  /** Parent key: `namespace/pool`. */
  readonly pool: string;
  /** Sorted by name. Empty when the pool lost its last cell. */
  readonly cells: readonly CellView[];
  readonly ready: number;
  readonly restarts: number;
}

/** A printed change: the pool view and when (ms since the tracker started, on its clock). */
export interface PoolReport {
  readonly atMs: number;
  readonly view: PoolView;
}

export interface PoolTrackerOptions {
  source: Source<PodView>;
  /** The label whose value names a pod's pool. Default `pool`. */
  poolLabel?: string | undefined;
  /** Receives one line per changed pool view. */
  print: (line: string) => void;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  syncTimeoutMs?: number | undefined;
}

/** A reconcile loop whose reconcile prints each pool's view whenever it changes. */
export interface PoolTracker {
  readonly loop: ReconcileLoop<PodView, string>;
  /** The latest view per pool that still has cells. */
  readonly views: ReadonlyMap<string, PoolView>;
  /** Every change printed, in order. */
  readonly reports: readonly PoolReport[];
}

/** Builds the tracker (not started): pods grouped into pools by label, one parent key per pool. */
export function createPoolTracker(options: PoolTrackerOptions): PoolTracker {
  const poolLabel = options.poolLabel ?? 'pool';
  const views = new Map<string, PoolView>();
  const reports: PoolReport[] = [];
  const startedAt = options.clock?.now() ?? performance.now();
  const now = (): number => (options.clock?.now() ?? performance.now()) - startedAt;

  const loop = new ReconcileLoop<PodView, string>({
    source: options.source,
    // A pod without the label cannot be attributed: the store evicts it (and logs), never caches it.
    keyMap: (pod) => {
      const pool = pod.metadata.labels[poolLabel];
      return pool ? `${pod.metadata.namespace ?? ''}/${pool}` : undefined;
    },
    reconcile: (pool, { members }) => {
      const view = poolView(pool, members.values());
      const previous = views.get(pool);
      if (previous && JSON.stringify(previous) === JSON.stringify(view)) return; // resync, or no visible change
      if (!previous && view.cells.length === 0) return; // never seen, still empty
      if (view.cells.length === 0) views.delete(pool);
      else views.set(pool, view);
      const atMs = now();
      reports.push({ atMs, view });
      options.print(formatReport(atMs, view));
    },
    clock: options.clock,
    logger: options.logger,
    sources: { syncTimeoutMs: options.syncTimeoutMs },
  });
  return { loop, views, reports };
}

/** The view of one pool from its members: cells sorted by name, ready and restart counts. */
export function poolView(pool: string, members: Iterable<PodView>): PoolView {
  const cells = [...members]
    .map((pod) => ({
      name: pod.metadata.name,
      phase: isTerminating(pod) ? 'Terminating' : (pod.status.phase ?? 'Unknown'),
      ready: isReady(pod),
      restarts: restarts(pod),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    pool,
    cells,
    ready: cells.filter((c) => c.ready).length,
    restarts: cells.reduce((sum, c) => sum + c.restarts, 0),
  };
}

/** `[  6.6s] pool sim/engines: 2 cells, 2 ready, 1 restart  (engine-1 Running ready r1, ...)` */
export function formatReport(atMs: number, view: PoolView): string {
  return `${stamp(atMs)} ${describePool(view)}`;
}

/** `pool sim/engines: 2 cells, 2 ready, 1 restart  (engine-1 Running ready r1, ...)` */
export function describePool(view: PoolView): string {
  const head = `pool ${view.pool}:`;
  if (view.cells.length === 0) return `${head} no cells left`;
  const cells = view.cells.map((c) => `${c.name} ${c.phase}${c.ready ? ' ready' : ''} r${c.restarts}`).join(', ');
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${head} ${plural(view.cells.length, 'cell')}, ${view.ready} ready, ${plural(view.restarts, 'restart')}  (${cells})`;
}

/** `[  6.6s]` */
export function stamp(atMs: number): string {
  return `[${(atMs / 1000).toFixed(1).padStart(5)}s]`;
}
