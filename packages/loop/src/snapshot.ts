/**
 * The gauges a metrics observer reads at scrape time: a snapshot of a loop's parts, built on demand
 * and never on the hot path. Kept apart from `observer.ts` (the hook types every part imports) so
 * that the parts it reads never import it back.
 */
import type { Source } from '@reconcile-loop/object-store';
import type { Key } from '@reconcile-loop/primitives';
import type { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import type { WorkQueue } from '@reconcile-loop/work-queue';
import { controllerName, type LoopSnapshot, type SourceSnapshot } from './observer.js';
import type { Expectations } from './expectations.js';
import type { ReconcileLoopOptions } from './options.js';
import type { ReconcileRunner } from './runner.js';
import type { Wiring } from './sources.js';

/** The parts of a loop a snapshot reads. */
export interface SnapshotParts<T, P extends Key, S> {
  readonly controller: string;
  readonly concurrency: number;
  readonly queue: WorkQueue<P>;
  /** The `queue.priority` setting: the snapshot then reports each priority's depth and oldest wait. */
  readonly prioritized: boolean;
  readonly scheduler: RetryScheduler<P>;
  readonly expectations: Expectations<P>;
  readonly runner: ReconcileRunner<T, P, S>;
  readonly wiring: Wiring<T, P, S>;
  /** The source objects, in the wiring's order (primary first, then the secondaries in option order). */
  readonly sources: readonly Source<unknown>[];
  readonly now: () => number;
}

/** Calls `options.observer.bind` (if any) with the loop's name and a snapshot function over its parts. */
export function bindObserver<T, P extends Key, S>(
  options: ReconcileLoopOptions<T, P, S>,
  parts: Omit<SnapshotParts<T, P, S>, 'controller' | 'sources'>,
): void {
  const observer = options.observer;
  if (observer?.bind === undefined) return;
  const secondary = Object.values((options.secondary ?? {}) as Record<string, { source: Source<unknown> }>);
  const full: SnapshotParts<T, P, S> = {
    ...parts,
    controller: controllerName(options),
    sources: [options.source, ...secondary.map((s) => s.source)],
  };
  observer.bind({ controller: full.controller, snapshot: () => snapshotOf(full) });
}

const lagSince = (at: number | undefined, now: number): number | undefined =>
  at === undefined ? undefined : Math.max(0, now - at);

/** Reads every gauge now. */
export function snapshotOf<T, P extends Key, S>(parts: SnapshotParts<T, P, S>): LoopSnapshot {
  const { wiring } = parts;
  const now = parts.now();
  const stores = [wiring.primary, ...wiring.secondaries.values()];
  const sources = wiring.sources.map((wired, i): SourceSnapshot => {
    const health = wired.driver.health();
    return {
      name: wired.name,
      objects: stores[i]?.size ?? 0,
      quarantined: health.quarantined.length,
      streaming: health.streaming,
      msSinceLastFrame: health.lastEventAt === undefined ? undefined : now - health.lastEventAt,
      opens: health.opens,
      stats: numericStats(parts.sources[i]),
      cache: wired.cost(),
      listLag: health.sourceHealth?.listLag,
      msBehindList: lagSince(health.sourceHealth?.listLag?.caughtUpAt, now),
      ...(health.sourceHealth?.shard !== undefined && { shard: health.sourceHealth.shard }),
    };
  });
  return {
    controller: parts.controller,
    activeWorkers: parts.runner.inFlight().filter((c) => !c.timedOut).length,
    maxConcurrentReconciles: parts.concurrency,
    queueDepth: parts.queue.size,
    queuePriorities: queuePriorities(parts.queue, parts.prioritized),
    unfinishedWork: parts.queue.unfinishedWork(),
    retriesPending: parts.scheduler.pending,
    parked: parts.scheduler.parkedCount,
    expectations: parts.expectations.reading(parts.now()),
    sources,
  };
}

/** Each priority's depth and oldest wait; a FIFO queue has only `normal`. */
function queuePriorities<P extends Key>(queue: WorkQueue<P>, prioritized: boolean): LoopSnapshot['queuePriorities'] {
  const { normal, low } = queue.byPriority();
  return prioritized ? { normal, low } : { normal };
}

/** A source's `stats` (a reflector's counters), read structurally: only finite numeric fields. */
function numericStats(source: unknown): Readonly<Record<string, number>> | undefined {
  let stats: unknown;
  try {
    stats = (source as { stats?: unknown } | undefined)?.stats;
  } catch {
    return undefined; // a throwing getter is the source's problem, not the scrape's
  }
  if (stats === null || typeof stats !== 'object') return undefined;
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(stats)) if (typeof value === 'number' && Number.isFinite(value)) out[name] = value;
  return out;
}
