/**
 * The loop's health report and the two verdicts a Deployment's probes ask for, with
 * controller-runtime's manager semantics: ready = started and every source synced and not failing
 * past a limit; alive = nothing wedged (the worker, a source) and no failure ended the loop.
 */

import type { CacheCost } from '@reconcile-loop/object-store';
import type { StreamDriverHealth } from '@reconcile-loop/stream-driver';
import type { ExpectationsReading } from './expectations.js';
import { describeError } from './errors.js';
import type { ResolvedHealthLimits } from './options.js';
import type { InFlightReconcile, ReconcileCounters } from './runner.js';
import type { Key } from '@reconcile-loop/primitives';
import type { ShardHealth } from './shard.js';

/** Lifecycle: `idle → starting → running → stopping → stopped`; a loop runs once. */
export type ReconcileLoopState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

/** One source as the loop reports it: the stream driver's view, the time since its last frame, and what its store costs. */
export interface SourceStatus extends StreamDriverHealth {
  /** Clock ms since the last event or frame; undefined when none arrived yet. */
  readonly msSinceLastEvent: number | undefined;
  /** What the source's store holds and its estimated bytes, and the source's `memoryBudgetBytes` (object-store's `CacheMeter`). */
  readonly cache: CacheCost;
}

/** One named check, as in controller-runtime's `[+]name ok` / `[-]name failed: reason` lines. */
export interface HealthCheck {
  readonly name: string;
  readonly ok: boolean;
  /** Why it failed (or a detail when it passed); one line, never object contents. */
  readonly reason?: string | undefined;
}

/** A verdict and the checks it came from. */
export interface HealthVerdict {
  readonly ok: boolean;
  readonly checks: readonly HealthCheck[];
}

/** A snapshot of the whole loop; every time is in the loop's clock (ms). */
export interface LoopHealth<P extends Key> {
  readonly state: ReconcileLoopState;
  /** Every source's first replace is in the store. */
  readonly synced: boolean;
  /** The clock's time when this snapshot was taken. */
  readonly at: number;
  /** When `start()` was called. */
  readonly startedAt: number | undefined;
  /** The oldest of the sources' last successful sync or relist (the stalest source decides). */
  readonly lastSyncAt: number | undefined;
  /** Parent keys waiting in the work queue. */
  readonly queueDepth: number;
  /** Parent keys waiting for a retry or requeue deadline. */
  readonly retriesPending: number;
  /** Parent keys parked (dead-lettered) by an exhausted retry budget; `loop.parked()` lists them. */
  readonly parked: number;
  /** Parent keys held back until the cache observes the writes their reconciles recorded (`ctx.expect`), and the oldest one's wait. */
  readonly expectations: ExpectationsReading;
  /** The configured number of workers. */
  readonly concurrency: number;
  /** Cumulative reconcile outcomes (succeeded, requeued, failed, terminal, parked, released). */
  readonly reconciles: ReconcileCounters;
  /** Reconcile calls not yet settled, oldest first (a timed-out one may still be running). */
  readonly inFlight: readonly InFlightReconcile<P>[];
  /** Per source, keyed by source name. */
  readonly sources: Readonly<Record<string, SourceStatus>>;
  /** The failure that ended (or is ending) the loop: a failed start or a permanent source error. */
  readonly error: unknown;
  /**
   * In a leadership term and the gate's `isLeader()` agrees now; always true without `leadership.gate`.
   * A synced standby (`false`) is still ready (controller-runtime's manager: a standby passes `/readyz`).
   */
  readonly leader: boolean;
  /** With `shard.gate`: the ranges, keys owned, refusals, aborts and the gate's own `status()`; undefined without. */
  readonly shard?: ShardHealth | undefined;
  /** Readiness: started, synced, no source failing past `sourceFailingMs`, no reconcile stuck, the shard gate ready (when it says). */
  readonly ready: HealthVerdict;
  /** Liveness: not ended by a failure, no reconcile stuck, no source wedged or silent past its limit. */
  readonly alive: HealthVerdict;
}

/** What {@link verdicts} needs besides the sources. */
export interface HealthInputs<P extends Key> {
  readonly state: ReconcileLoopState;
  readonly now: number;
  readonly inFlight: readonly InFlightReconcile<P>[];
  readonly sources: readonly SourceStatus[];
  readonly error: unknown;
  readonly limits: ResolvedHealthLimits;
  /** Parked parent keys: reported as a passing `dead-letter` check (a parked key is a finding, not an outage). */
  readonly parked?: number | undefined;
  /** With a leader gate: leading now. A standby stays ready; the `leader` check only says so. */
  readonly leader?: boolean | undefined;
  /** With a shard gate that has `ready()`: its answer, the `shard` readiness check (undefined: no check). */
  readonly shard?: { readonly ok: boolean; readonly reason?: string | undefined } | undefined;
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;

/** Computes readiness and liveness; pure, so the verdicts are tested without a loop. */
export function verdicts<P extends Key>(input: HealthInputs<P>): { ready: HealthVerdict; alive: HealthVerdict } {
  const { state, now, limits, error } = input;
  const stuck = input.inFlight.filter((c) => c.ageMs > limits.reconcileStuckMs);
  const reconcileCheck = (name: string): HealthCheck =>
    stuck.length === 0
      ? { name, ok: true }
      : {
          name,
          ok: false,
          reason: stuck.map((c) => `reconcile of ${String(c.parentKey)} running for ${seconds(c.ageMs)}`).join('; '),
        };

  const ready: HealthCheck[] = [
    state === 'running'
      ? { name: 'started', ok: true }
      : { name: 'started', ok: false, reason: `loop is ${state}${error === undefined ? '' : `: ${describeError(error)}`}` },
  ];
  const alive: HealthCheck[] = [
    error === undefined
      ? { name: 'loop', ok: true }
      : { name: 'loop', ok: false, reason: `ended by a failure: ${describeError(error)}` },
  ];
  for (const source of input.sources) {
    const name = `source:${source.source}`;
    const failingMs = source.failingSince === undefined ? 0 : now - source.failingSince;
    const lastError = source.lastError === undefined ? '' : `: ${describeError(source.lastError)}`;
    const failing = `failing for ${seconds(failingMs)} (${source.consecutiveFailures} failures)${lastError}`;
    if (source.permanentError !== undefined) {
      const reason = `failed permanently: ${describeError(source.permanentError)}`;
      ready.push({ name, ok: false, reason });
      alive.push({ name, ok: false, reason });
      continue;
    }
    const overBudget = source.cache.refused > 0 ? source.cache.reason : undefined;
    if (!source.synced)
      ready.push({ name, ok: false, reason: `not synced yet${source.consecutiveFailures > 0 ? `; ${failing}` : ''}` });
    else if (failingMs > limits.sourceFailingMs) ready.push({ name, ok: false, reason: failing });
    // A cache its memory budget holds incomplete is not a true view of the kind: not ready, still alive.
    else if (overBudget !== undefined) ready.push({ name, ok: false, reason: overBudget });
    else ready.push({ name, ok: true });

    const silentMs = source.msSinceLastEvent;
    if (failingMs > limits.sourceWedgedMs) alive.push({ name, ok: false, reason: failing });
    else if (
      source.sourceHealth !== undefined &&
      source.streaming &&
      silentMs !== undefined &&
      silentMs > limits.sourceSilentMs
    ) {
      alive.push({ name, ok: false, reason: `streaming but no frame for ${seconds(silentMs)}` });
    } else alive.push({ name, ok: true });
  }
  ready.push(reconcileCheck('reconcile'));
  // Parked keys do not make the loop unready (the rest of the fleet is served); the detail makes them visible.
  if ((input.parked ?? 0) > 0)
    ready.push({ name: 'dead-letter', ok: true, reason: `${input.parked} parent keys parked; see parked()` });
  // A warm standby is ready (controller-runtime's manager reports ready on standbys): a rolling
  // update must be able to wait for it, and a Service in front must not drop it.
  if (input.leader !== undefined) {
    ready.push({ name: 'leader', ok: true, reason: input.leader ? 'leading' : 'standby: caches warm, waiting for leadership' });
  }
  // A shard gate that cannot do its part (its ring reads failing past its limit, e.g. a 403) admits
  // nothing or works from a stale share: not ready, as a source failing past sourceFailingMs.
  if (input.shard !== undefined) {
    ready.push(
      input.shard.ok
        ? { name: 'shard', ok: true, reason: input.shard.reason }
        : { name: 'shard', ok: false, reason: input.shard.reason ?? 'the shard gate is not ready' },
    );
  }
  alive.push(reconcileCheck('worker'));
  return { ready: verdict(ready), alive: verdict(alive) };
}

function verdict(checks: HealthCheck[]): HealthVerdict {
  return { ok: checks.every((c) => c.ok), checks };
}
