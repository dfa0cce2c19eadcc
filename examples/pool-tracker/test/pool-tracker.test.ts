import { describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { createSimulation, script, SIM_SOURCE_RETRY_DELAY_MS } from '../src/simulation.js';
import { createPoolTracker, type PoolView } from '../src/tracker.js';
import { InProcessSource } from '@reconcile-loop/loop';
import type { PodView } from '../src/pod-view.js';

const summary = (view: PoolView | undefined) =>
  view && Object.fromEntries(view.cells.map((c) => [c.name, `${c.ready ? 'ready' : 'not ready'} r${c.restarts}`]));

describe('pool tracker demo', () => {
  it('[demo: churn scenario] reports every change and ends with the pool the script leaves', async () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    const sim = createSimulation({ durationMs: 10_000, print: (l) => lines.push(l), clock });
    const done = sim.run();
    await clock.advanceAsync(10_000);
    await done;

    expect(sim.tracker.loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
    expect(sim.source.openStreams).toBe(0);
    expect([...sim.tracker.views.keys()]).toEqual(['sim/engines']);
    expect(summary(sim.tracker.views.get('sim/engines'))).toEqual({ 'engine-1': 'ready r1', 'engine-2': 'ready r1' });
    // The trainers pool lost its last cell: reported once as gone, then never re-driven.
    const trainers = sim.tracker.reports.filter((r) => r.view.pool === 'sim/trainers');
    expect(trainers.at(-1)).toEqual({ atMs: 9_000, view: { pool: 'sim/trainers', cells: [], ready: 0, restarts: 0 } });
    expect(lines.at(-1)).toBe('[  9.0s] pool sim/trainers: no cells left');
    expect(lines.filter((l) => l.includes('~'))).toHaveLength(script.length);
  });

  it('[object_store: Replace() on relist] a deletion missed while the stream was down disappears at the relist, not before', async () => {
    const clock = new ManualClock();
    const sim = createSimulation({ durationMs: 10_000, print: () => {}, clock });
    const done = sim.run();
    const store = sim.tracker.loop.store;

    await clock.advanceAsync(6_000); // stream dropped at 5.6 s, engine-0 deleted at 5.8 s
    expect(sim.source.get('sim/engine-0')).toBeUndefined();
    expect(store.has('sim/engine-0')).toBe(true); // the ghost, until the relist
    expect(summary(sim.tracker.views.get('sim/engines'))).toHaveProperty('engine-0');

    const relistAt = 5_600 + SIM_SOURCE_RETRY_DELAY_MS;
    await clock.advanceAsync(relistAt - 1 - 6_000);
    expect(store.has('sim/engine-0')).toBe(true);
    await clock.advanceAsync(1);
    expect(store.has('sim/engine-0')).toBe(false);
    expect(store.has('sim/trainer-1')).toBe(true);
    const engines = sim.tracker.reports.filter((r) => r.view.pool === 'sim/engines');
    expect(engines.at(-1)?.atMs).toBe(relistAt);
    expect(summary(engines.at(-1)?.view)).toEqual({ 'engine-1': 'ready r1', 'engine-2': 'ready r0' });

    await clock.advanceAsync(10_000);
    await done;
  });

  it('[demo: churn scenario] --duration cuts the script and still stops cleanly', async () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    const sim = createSimulation({ durationMs: 2_000, print: (l) => lines.push(l), clock });
    const done = sim.run();
    await clock.advanceAsync(2_000);
    await done;
    expect(lines.filter((l) => l.includes('~'))).toHaveLength(2);
    expect(sim.tracker.loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
  });

  it('[demo: churn scenario] an abort signal ends the run early and cleanly', async () => {
    const clock = new ManualClock();
    const abort = new AbortController();
    const sim = createSimulation({ durationMs: 10_000, print: () => {}, clock, signal: abort.signal });
    const done = sim.run();
    await clock.advanceAsync(1_000);
    abort.abort();
    await done;
    await settle();
    expect(sim.tracker.loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
  });

  it('[object_store: EnqueueRequestForOwner] a pod without the pool label is not tracked', async () => {
    const clock = new ManualClock();
    const unlabeled: PodView = {
      metadata: { name: 'sidecar', namespace: 'sim', labels: {} },
      status: { conditions: [], containerStatuses: [] },
    };
    const source = new InProcessSource<PodView>('s', [['sim/sidecar', unlabeled]]);
    const tracker = createPoolTracker({ source, print: () => {}, clock });
    await tracker.loop.start();
    await settle();
    expect(tracker.loop.store.size).toBe(0);
    expect(tracker.reports).toEqual([]);
    await tracker.loop.stop();
  });
});
