/**
 * The main job's story (`./dev demo`) end to end, with the rebuild budget compressed (0/20/100/600 ms
 * instead of 0/1/5/30 s): everything it narrates must really happen, in order, and it must end with
 * nothing left on the server. Real time over real HTTP; every wait inside is bounded.
 */
import { describe, expect, it } from 'vitest';
import { runStory } from '../demo/story.js';

describe('the CellSet story (the main job)', () => {
  it('[cellset: demo story] converges, rebuilds a crashed pod, survives a lost watch (410 → relist) and a status conflict, dead-letters web-2, releases it on a spec edit, and cleans up on delete', async () => {
    const lines: string[] = [];
    const report = await runStory({ print: (l) => lines.push(l), budgetScale: 0.02, stepTimeoutMs: 10_000 });
    const text = lines.join('\n');
    const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l));

    expect(report.leftovers).toBe(0);
    expect(report.statusConflicts).toBe(1);
    expect(report.relists).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/reflector: pods: watch ERROR frame: cursor expired; relisting \(410 Expired\)/);
    expect(report.events).toMatchObject({ FinalizerAdded: 1, RebuildBudgetExhausted: 1, DeletingPods: 1, FinalizerRemoved: 1 });
    expect(report.events['PodFailed']).toBeGreaterThanOrEqual(5); // web-0's crash, web-2's four rebuilds, web-2's release
    expect(report.metrics).toContain('cellset_slots_dead_lettered_total{namespace="cells",cellset="web"} 1');
    // The story's order: dead-letter, then the spec edit releases it, then the delete.
    const parked = at(/Warning RebuildBudgetExhausted web-2/);
    const edit = at(/kubectl edit: CELL_MEMORY=4Gi/);
    const readyAgain = at(/web is Ready at generation 2/);
    const removed = at(/event FinalizerRemoved/);
    expect(parked).toBeGreaterThan(0);
    expect(edit).toBeGreaterThan(parked);
    expect(lines.slice(edit).some((l) => /event PodFailed web-2: .*rebuild 1 of 4 at generation 2/.test(l))).toBe(true);
    expect(readyAgain).toBeGreaterThan(edit);
    expect(removed).toBeGreaterThan(readyAgain);
    expect(text).toMatch(/nothing rebuilds it: 0 rebuilds since, web-2 stays Failed/);
  }, 60_000);
});
