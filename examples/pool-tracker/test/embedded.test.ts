/**
 * The demo's default scenario, compressed: the embedded apiserver over real loopback HTTP, the pod
 * reflector pointed at it through client-node's KubeConfig, and the script played 50 times faster
 * (its step times and the reflector's and loop's retry delays scaled alike). Real HTTP means real
 * time; every wait inside the scenario is bounded and event-driven (the relist gate and the final
 * agreement with the apiserver wake on reports), so the run takes well under a second.
 */
import { describe, expect, it } from 'vitest';
import { embeddedScript, startEmbeddedScenario, type EmbeddedScenarioOptions } from '../src/embedded.js';
import type { PoolView } from '../src/tracker.js';

const SCALE = 0.02;
const FULL_RUN_MS = 10_000 * SCALE;

const summary = (views: ReadonlyMap<string, PoolView>) =>
  Object.fromEntries(
    [...views].map(([pool, view]) => [
      pool,
      {
        ready: view.ready,
        restarts: view.restarts,
        cells: Object.fromEntries(view.cells.map((c) => [c.name, `${c.phase}${c.ready ? ' ready' : ''} r${c.restarts}`])),
      },
    ]),
  );

function scenario(options: Partial<EmbeddedScenarioOptions> = {}) {
  const lines: string[] = [];
  const started = startEmbeddedScenario({
    durationMs: FULL_RUN_MS,
    timeScale: SCALE,
    settleTimeoutMs: 3_000,
    print: (l) => lines.push(l),
    ...options,
  });
  return { lines, started };
}

describe('pool tracker demo on the embedded apiserver', () => {
  it('[demo: embedded apiserver scenario] the compressed script ends with the pools the apiserver holds: members, ready and restarts per pool', async () => {
    const { lines, started } = scenario();
    const sc = await started;
    const { converged } = await sc.run();

    expect(converged).toBe(true);
    expect(summary(sc.tracker.views)).toEqual({
      'demo/engines': { ready: 2, restarts: 2, cells: { 'engine-1': 'Running ready r1', 'engine-2': 'Running ready r1' } },
      'demo/trainers': { ready: 1, restarts: 0, cells: { 'trainer-1': 'Running ready r0' } },
    });
    expect(lines.filter((l) => l.includes(' ~ ') && !l.includes('reflector:') && !l.includes('relist:'))).toHaveLength(
      embeddedScript.length,
    );
    // The graceful deletion was seen in between: trainer-0 Terminating, then gone.
    expect(lines.some((l) => l.includes('pool demo/trainers:') && l.includes('trainer-0 Terminating'))).toBe(true);

    // Nothing is left running: the loop stopped, the watch closed, the apiserver closed.
    expect(sc.tracker.loop.state).toBe('stopped');
    expect(sc.server.openWatchCount).toBe(0);
    expect(() => sc.server.createPod({ metadata: { name: 'late' } })).toThrow(
      expect.objectContaining({ code: 'RL_APISERVER_CLOSED' }),
    );
  });

  it('[object_store: Replace() on relist] the deletion lost with the dropped watch stays in the tracker as a ghost until the relist, which removes it (embedded apiserver)', async () => {
    const { lines, started } = scenario();
    const sc = await started;
    await sc.run();

    expect(sc.server.requestCounts().list).toBe(2);
    expect(sc.relists).toHaveLength(1);
    const [relist] = sc.relists;
    // At the relist the store still held engine-0 (no watch frame ever removed it); the listing lacks it.
    expect(relist?.ghosts).toEqual(['demo/engine-0']);
    expect(relist?.listed).not.toContain('demo/engine-0');
    expect(lines.some((l) => l.includes('reflector: watch ERROR frame: cursor expired; relisting (410 Expired)'))).toBe(true);

    const relistAt = lines.findIndex((l) => l.includes('~ relist:'));
    const engineReports = lines.map((l, i) => [l, i] as const).filter(([l]) => l.includes('pool demo/engines:'));
    const lastWithGhost = engineReports.filter(([l]) => l.includes('engine-0')).at(-1)?.[1] ?? -1;
    const firstWithout = engineReports.find(([l]) => !l.includes('engine-0'))?.[1] ?? -1;
    expect(lastWithGhost).toBeGreaterThanOrEqual(0);
    expect(lastWithGhost).toBeLessThan(relistAt);
    expect(firstWithout).toBeGreaterThan(relistAt);
    expect(sc.tracker.views.get('demo/engines')?.cells.map((c) => c.name)).not.toContain('engine-0');
  });

  it('[demo: embedded apiserver scenario] a short --duration cuts the script and still stops the tracker and closes the apiserver', async () => {
    const { lines, started } = scenario({ durationMs: 3_000 * SCALE });
    const sc = await started;
    const { converged } = await sc.run();

    expect(converged).toBe(true);
    expect(lines.filter((l) => l.includes(' ~ '))).toHaveLength(embeddedScript.filter((s) => s.atMs <= 3_000).length);
    expect(sc.relists).toEqual([]);
    expect(sc.tracker.loop.state).toBe('stopped');
    expect(sc.server.openWatchCount).toBe(0);
  });

  it('[demo: embedded apiserver scenario] an abort signal ends the run early and cleanly', async () => {
    const abort = new AbortController();
    const { started } = scenario({ durationMs: 60_000, signal: abort.signal });
    const sc = await started;
    const done = sc.run();
    await sc.server.waitForWatches(1, 3_000); // the tracker is synced and watching
    abort.abort();
    await done;
    expect(sc.tracker.loop.state).toBe('stopped');
    expect(sc.server.openWatchCount).toBe(0);
  });
});
