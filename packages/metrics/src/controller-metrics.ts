/**
 * Turns a ReconcileLoop's observer hooks into Prometheus series (prom-client), with
 * controller-runtime's names. Counters and histograms are fed by the push events; every gauge (and
 * every counter the loop's sources keep themselves, like a reflector's relists) is read from the
 * loop's snapshot inside prom-client's `collect()`, i.e. only when a scrape asks.
 *
 * Invariant: one set of instruments per registry, shared by every loop registered on it, and one
 * loop per `controller` label value on a registry — so no two loops ever write one series.
 */
import type { LoopBinding, LoopSnapshot, ReconcileEndEvent, ReconcileLoopObserver } from '@reconcile-loop/loop';
import { Counter, Gauge, register, type Registry } from 'prom-client';
import { CONTROLLER_METRICS, LOOP_METRICS, WORKQUEUE_METRICS, type MetricDefinition } from './definitions.js';
import { DuplicateControllerError, ObserverReusedError } from './errors.js';
import { OptionsError, type Key } from '@reconcile-loop/primitives';
import { CounterFamily, HistogramFamily, type CounterSeries, type HistogramSeries } from './families.js';

/** Options of {@link controllerMetrics}. */
export interface ControllerMetricsOptions {
  /** Where the series are registered. Default: prom-client's global `register` (controller-runtime's global `metrics.Registry`). */
  registry?: Registry | undefined;
  /** The `controller` (and workqueue `name`) label value. Default: the loop's `name` option (itself defaulting to the primary source's name). */
  controller?: string | undefined;
}

/** The observer {@link controllerMetrics} returns: pass it as the loop's `observer` option. */
export interface ControllerMetricsObserver<P extends Key> extends ReconcileLoopObserver<P> {
  /** The controller label value, once a loop is bound (undefined before). */
  readonly controller: string | undefined;
  /**
   * Removes this loop's series from the registry and frees its controller name (e.g. before a new
   * loop of the same name replaces a stopped one). Idempotent; the observer stays unusable afterwards.
   */
  unregister(): void;
}

type Labels = Record<string, string>;
type Snapshotter = (b: LoopBinding) => LoopSnapshot;

/** One registry's instruments and the loops bound to them. */
interface Instruments {
  readonly loops: Map<string, LoopBinding>;
  readonly reconcileTotal: CounterFamily;
  readonly reconcileErrors: CounterFamily;
  readonly terminalReconcileErrors: CounterFamily;
  readonly reconcileTimeouts: CounterFamily;
  readonly reconcileTime: HistogramFamily;
  readonly adds: CounterFamily;
  readonly retries: CounterFamily;
  readonly latency: HistogramFamily;
  readonly workDuration: HistogramFamily;
}

const byRegistry = new WeakMap<Registry, Instruments>();

const RESULTS = ['success', 'error', 'requeue', 'requeue_after'] as const;
/** The work queue's priorities and the `priority` label values controller-runtime gives them. */
const PRIORITY_LABELS = [
  ['normal', '0'],
  ['low', '-100'],
] as const;

/**
 * An observer for one `ReconcileLoop` that exports its metrics to a prom-client registry:
 *
 * ```ts
 * const registry = new Registry();
 * const loop = new ReconcileLoop({ controller: { name: 'cocoonset' }, source, keyMap, reconcile, observer: controllerMetrics({ registry }) });
 * ```
 *
 * The loop binds it in its constructor; that throws {@link DuplicateControllerError} when another
 * loop with the same controller name is registered on the registry, and {@link ObserverReusedError}
 * when the observer was given to another loop already.
 *
 * @throws {OptionsError} for an unusable registry or controller name.
 */
export function controllerMetrics<P extends Key>(options: ControllerMetricsOptions = {}): ControllerMetricsObserver<P> {
  const registry = options.registry ?? register;
  if (typeof registry?.registerMetric !== 'function' || typeof registry.metrics !== 'function') {
    throw new OptionsError('controllerMetrics', 'registry must be a prom-client Registry');
  }
  if (options.controller !== undefined && (typeof options.controller !== 'string' || options.controller === '')) {
    throw new OptionsError('controllerMetrics', 'controller must be a non-empty string');
  }
  let bound: { controller: string; instruments: Instruments; binding: LoopBinding } | undefined;
  let retired = false;
  // Bound children: a label set hashed once at bind, not on every event of the hot path.
  let hot:
    | {
        adds: CounterSeries;
        retries: CounterSeries;
        latency: HistogramSeries;
        work: HistogramSeries;
        time: HistogramSeries;
        total: Record<(typeof RESULTS)[number], CounterSeries>;
        errors: CounterSeries;
        terminal: CounterSeries;
        timeouts: CounterSeries;
      }
    | undefined;

  const observer: ControllerMetricsObserver<P> = {
    get controller() {
      return bound?.controller;
    },
    bind(binding: LoopBinding): void {
      if (bound !== undefined || retired) throw new ObserverReusedError();
      const controller = options.controller ?? binding.controller;
      const instruments = instrumentsFor(registry);
      if (instruments.loops.has(controller)) {
        throw new DuplicateControllerError(controller);
      }
      const named: LoopBinding = { controller, snapshot: () => binding.snapshot() };
      instruments.loops.set(controller, named);
      bound = { controller, instruments, binding: named };
      const c = { controller };
      const wq = { name: controller, controller };
      // controller-runtime's initMetrics: every series exists at 0 before the first reconcile
      // (creating the series here is what makes them appear; the hot path only holds them).
      hot = {
        adds: instruments.adds.series(wq),
        retries: instruments.retries.series(wq),
        latency: instruments.latency.series(wq),
        work: instruments.workDuration.series(wq),
        time: instruments.reconcileTime.series(c),
        total: {
          success: instruments.reconcileTotal.series({ ...c, result: 'success' }),
          error: instruments.reconcileTotal.series({ ...c, result: 'error' }),
          requeue: instruments.reconcileTotal.series({ ...c, result: 'requeue' }),
          requeue_after: instruments.reconcileTotal.series({ ...c, result: 'requeue_after' }),
        },
        errors: instruments.reconcileErrors.series(c),
        terminal: instruments.terminalReconcileErrors.series(c),
        timeouts: instruments.reconcileTimeouts.series(c),
      };
    },
    onReconcileEnd(event: ReconcileEndEvent<P>): void {
      if (hot === undefined || event.result === 'stopped') return;
      hot.total[event.result].inc();
      if (event.result === 'error') {
        hot.errors.inc();
        if (event.terminal) hot.terminal.inc();
        if (event.timedOut) hot.timeouts.inc();
      }
      hot.time.observe(event.durationMs / 1000);
    },
    queue: {
      onAdd: () => hot?.adds.inc(),
      onGet: (e) => hot?.latency.observe(e.queuedMs / 1000),
      onDone: (e) => hot?.work.observe(e.workMs / 1000),
    },
    retry: {
      // Upstream counts adds with a non-zero delay: rate-limited retries and RequeueAfter alike.
      onFailure: (e) => {
        if (e.delayMs > 0) hot?.retries.inc();
      },
      onRequeue: (e) => {
        if (e.delayMs > 0) hot?.retries.inc();
      },
    },
    unregister(): void {
      retired = true;
      if (bound === undefined) return;
      const { instruments, controller } = bound;
      if (instruments.loops.get(controller) === bound.binding) instruments.loops.delete(controller);
      const c = { controller };
      const wq = { name: controller, controller };
      for (const result of RESULTS) instruments.reconcileTotal.remove({ ...c, result });
      for (const m of [
        instruments.reconcileErrors,
        instruments.terminalReconcileErrors,
        instruments.reconcileTimeouts,
        instruments.reconcileTime,
      ])
        m.remove(c);
      for (const m of [instruments.adds, instruments.retries, instruments.latency, instruments.workDuration]) m.remove(wq);
      bound = undefined;
      hot = undefined;
    },
  };
  return observer;
}

/** The instruments of `registry`, created and registered on first use. */
function instrumentsFor(registry: Registry): Instruments {
  const existing = byRegistry.get(registry);
  if (existing !== undefined) return existing;
  const loops = new Map<string, LoopBinding>();
  const registers = [registry];
  // prom-client's Registry reads any object with name/help/type/get(); ours keep the hot path cheap.
  const counter = (d: MetricDefinition): CounterFamily => {
    const family = new CounterFamily(d);
    registry.registerMetric(family as unknown as Parameters<Registry['registerMetric']>[0]);
    return family;
  };
  const histogram = (d: MetricDefinition): HistogramFamily => {
    const family = new HistogramFamily(d);
    registry.registerMetric(family as unknown as Parameters<Registry['registerMetric']>[0]);
    return family;
  };
  const snap: Snapshotter = (b) => b.snapshot();

  // Scrape-time gauges: reset, then one series per bound loop (a retired loop's series disappear).
  const gauge = (d: MetricDefinition, fill: (set: (labels: Labels, value: number) => void, s: LoopSnapshot) => void): void => {
    new Gauge({
      name: d.name,
      help: d.help,
      labelNames: [...d.labelNames],
      registers,
      collect(this: Gauge<string>) {
        this.reset();
        for (const binding of loops.values()) fill((labels, value) => this.set(labels, value), snap(binding));
      },
    });
  };
  // Scrape-time counters: the cumulative value the source keeps, copied as is.
  const readCounter = (
    d: MetricDefinition,
    fill: (set: (labels: Labels, value: number) => void, s: LoopSnapshot) => void,
  ): void => {
    new Counter({
      name: d.name,
      help: d.help,
      labelNames: [...d.labelNames],
      registers,
      collect(this: Counter<string>) {
        this.reset();
        for (const binding of loops.values()) fill((labels, value) => this.inc(labels, Math.max(0, value)), snap(binding));
      },
    });
  };

  const instruments: Instruments = {
    loops,
    reconcileTotal: counter(CONTROLLER_METRICS.reconcileTotal),
    reconcileErrors: counter(CONTROLLER_METRICS.reconcileErrors),
    terminalReconcileErrors: counter(CONTROLLER_METRICS.terminalReconcileErrors),
    reconcileTime: histogram(CONTROLLER_METRICS.reconcileTime),
    reconcileTimeouts: counter(CONTROLLER_METRICS.reconcileTimeouts),
    adds: counter(WORKQUEUE_METRICS.adds),
    latency: histogram(WORKQUEUE_METRICS.latency),
    workDuration: histogram(WORKQUEUE_METRICS.workDuration),
    retries: counter(WORKQUEUE_METRICS.retries),
  };
  const c = (s: LoopSnapshot): Labels => ({ controller: s.controller });
  const wq = (s: LoopSnapshot): Labels => ({ name: s.controller, controller: s.controller });
  gauge(CONTROLLER_METRICS.workerCount, (set, s) => set(c(s), s.maxConcurrentReconciles));
  gauge(CONTROLLER_METRICS.activeWorkers, (set, s) => set(c(s), s.activeWorkers));
  // controller-runtime's priority label: "0" for normal, "-100" (its LowPriority) for low; "" for a
  // FIFO queue (`queue.priority: false`, which reports no `low`).
  const byPriority = (s: LoopSnapshot, each: (label: string, level: { depth: number; oldestMs: number }) => void): void => {
    const priorities = s.queuePriorities;
    if (priorities === undefined) return;
    if (priorities.low === undefined) each('', priorities.normal);
    else for (const [level, label] of PRIORITY_LABELS) each(label, priorities[level] as { depth: number; oldestMs: number });
  };
  gauge(WORKQUEUE_METRICS.depth, (set, s) => {
    if (s.queuePriorities === undefined) set({ ...wq(s), priority: '' }, s.queueDepth);
    else byPriority(s, (priority, level) => set({ ...wq(s), priority }, level.depth));
  });
  gauge(LOOP_METRICS.queueOldest, (set, s) =>
    byPriority(s, (priority, level) => set({ ...c(s), priority }, level.oldestMs / 1000)),
  );
  gauge(WORKQUEUE_METRICS.unfinished, (set, s) => set(wq(s), s.unfinishedWork.totalMs / 1000));
  gauge(WORKQUEUE_METRICS.longestRunningProcessor, (set, s) => set(wq(s), s.unfinishedWork.longestMs / 1000));

  const perSource = (s: LoopSnapshot, each: (labels: Labels, source: LoopSnapshot['sources'][number]) => void): void => {
    for (const source of s.sources) each({ controller: s.controller, source: source.name }, source);
  };
  gauge(LOOP_METRICS.objectsCached, (set, s) => perSource(s, (l, src) => set(l, src.objects)));
  gauge(LOOP_METRICS.quarantined, (set, s) => perSource(s, (l, src) => set(l, src.quarantined)));
  gauge(LOOP_METRICS.deadLettered, (set, s) => set(c(s), s.parked));
  gauge(LOOP_METRICS.expectationsPending, (set, s) => set(c(s), s.expectations.pending));
  gauge(LOOP_METRICS.expectationsOldest, (set, s) => set(c(s), (s.expectations.oldestMs ?? 0) / 1000));
  gauge(LOOP_METRICS.sinceLastFrame, (set, s) =>
    perSource(s, (l, src) => {
      if (src.msSinceLastFrame !== undefined) set(l, src.msSinceLastFrame / 1000);
    }),
  );
  gauge(LOOP_METRICS.cacheBytes, (set, s) =>
    perSource(s, (l, src) => {
      if (src.cache !== undefined) set(l, src.cache.bytesEstimate);
    }),
  );
  gauge(LOOP_METRICS.cacheBudget, (set, s) =>
    perSource(s, (l, src) => {
      if (src.cache?.budgetBytes !== undefined) set(l, src.cache.budgetBytes);
    }),
  );
  gauge(LOOP_METRICS.cacheRefused, (set, s) =>
    perSource(s, (l, src) => {
      if (src.cache !== undefined) set(l, src.cache.refused);
    }),
  );
  gauge(LOOP_METRICS.listLagRevisions, (set, s) =>
    perSource(s, (l, src) => {
      if (src.listLag?.revisions !== undefined) set(l, src.listLag.revisions);
    }),
  );
  gauge(LOOP_METRICS.secondsBehindList, (set, s) =>
    perSource(s, (l, src) => {
      if (src.msBehindList !== undefined) set(l, src.msBehindList / 1000);
    }),
  );
  readCounter(LOOP_METRICS.relists, (set, s) =>
    perSource(s, (l, src) => {
      const relists = src.stats?.relists;
      if (relists === undefined) return;
      const heal = src.stats?.healRelists ?? 0;
      set({ ...l, cause: 'heal' }, heal);
      set({ ...l, cause: 'rejected' }, relists - heal);
    }),
  );
  readCounter(LOOP_METRICS.watchReopens, (set, s) =>
    perSource(s, (l, src) => {
      const watches = src.stats?.watches;
      if (watches !== undefined) set(l, watches - 1);
    }),
  );
  readCounter(LOOP_METRICS.sourceReopens, (set, s) => perSource(s, (l, src) => set(l, src.opens - 1)));
  byRegistry.set(registry, instruments);
  return instruments;
}
