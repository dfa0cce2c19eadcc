/**
 * The rebuild budget on the embedded apiserver with a `ManualClock` driving the loop, the
 * reflectors and the rebuild history: a slot whose pod always fails is rebuilt at 0, +1, +5 and +30 s
 * — never earlier — then dead-lettered (Warning Event, counter, status condition) and left alone
 * however long the clock runs, until a spec edit (a new generation) releases it.
 */
import { describe, expect, it } from 'vitest';
import { REBUILD_HISTORY_ANNOTATION } from '../src/api.js';
import { startKubelet } from '../demo/kubelet.js';
import { NS, cellSet, harness, onCleanup, ref, until, type Harness } from './helpers.js';

/** Lets real I/O (HTTP to the embedded apiserver, watch frames) run: a few ms of real time, no clock moves. */
const io = (ms = 60): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function failingSlot(): Promise<Harness> {
  const h = await harness({ manualClock: true });
  // Every pod with the broken image fails at start; any other image runs.
  const kubelet = startKubelet({
    server: h.server,
    namespace: NS,
    intervalMs: 5,
    fate: (pod) => (pod.spec?.containers?.[0]?.image === 'cells/engine:broken' ? 'fail' : 'ready'),
  });
  onCleanup(async () => kubelet.stop());
  h.server.createObject(ref, cellSet('web', 1, 'cells/engine:broken'));
  await h.controller.loop.start();
  return h;
}

/** No reconcile running and the requeue armed: the clock may move. */
const idle = (h: Harness): boolean => {
  const health = h.controller.loop.health();
  return health.inFlight.length === 0 && health.retriesPending === 1;
};

const rebuilds = (h: Harness) => h.decided('PodFailed', 'web-0').length;

describe('CellSet controller: the rebuild budget (embedded apiserver, ManualClock)', () => {
  it('[cellset: rebuild budget] a terminal pod is rebuilt at 0, then 1, 5 and 30 s after the previous rebuild, never earlier; the next failure dead-letters the slot', async () => {
    const h = await failingSlot();
    const clock = h.clock!;
    await until('the first rebuild (delay 0)', () => rebuilds(h) === 1);
    for (const [attempt, delayMs] of [
      [2, 1_000],
      [3, 5_000],
      [4, 30_000],
    ] as const) {
      await until(
        `rebuild ${attempt} scheduled`,
        () => h.decisions.some((d) => d.reason === 'RebuildBackoff' && d.note.includes(`rebuild ${attempt} of 4`)) && idle(h),
      );
      clock.advance(delayMs - 1);
      await io();
      expect(rebuilds(h), `rebuild ${attempt} must wait the full ${delayMs} ms`).toBe(attempt - 1);
      clock.advance(1);
      await until(`rebuild ${attempt} at +${delayMs} ms`, () => rebuilds(h) === attempt);
    }
    // The fifth failure: no fifth rebuild, a Warning, the counter, the condition.
    await until('the slot dead-lettered', () => h.decided('RebuildBudgetExhausted').length === 1);
    const [warning] = h.decided('RebuildBudgetExhausted');
    expect(warning).toMatchObject({ type: 'Warning', action: 'DeadLetter', pod: 'web-0' });
    expect(warning!.note).toContain('rebuilt 4 times at generation 1 (budget 0/1/5/30 s)');
    await until('status reports the dead-letter', () =>
      ((h.get('web')?.status?.['conditions'] as Array<{ type: string; status: string }> | undefined) ?? []).some(
        (c) => c.type === 'SlotsDeadLettered' && c.status === 'True',
      ),
    );
    expect(await h.controller.registry.getSingleMetricAsString('cellset_slots_dead_lettered_total')).toContain(
      'cellset_slots_dead_lettered_total{namespace="default",cellset="web"} 1',
    );
    expect(await h.controller.registry.getSingleMetricAsString('cellset_pod_rebuilds_total')).toContain(
      'cellset_pod_rebuilds_total{namespace="default",cellset="web",reason="PodFailed"} 4',
    );
    expect(JSON.parse(h.get('web')!.metadata.annotations![REBUILD_HISTORY_ANNOTATION]!)).toEqual({
      '0': { count: 4, generation: 1, lastAt: 36_000, parked: true },
    });

    // Parked: the failed pod stays; no clock advance, resync or pod event rebuilds it.
    const parkedUid = h.server.getPod(NS, 'web-0')!.metadata.uid;
    clock.advance(10 * 60_000);
    h.controller.loop.enqueue(`${NS}/web`);
    await io(150);
    expect(rebuilds(h)).toBe(4);
    expect(h.decided('RebuildBudgetExhausted')).toHaveLength(1); // announced once, counted once
    expect(h.server.getPod(NS, 'web-0')!.metadata.uid).toBe(parkedUid);
    expect(h.server.getPod(NS, 'web-0')!.status!['phase']).toBe('Failed');
  });

  it('[cellset: generation releases] a spec edit (new generation) releases a dead-lettered slot with a fresh budget: rebuilt at once, and Ready with the fixed template', async () => {
    const h = await failingSlot();
    const clock = h.clock!;
    await until('the first rebuild', () => rebuilds(h) === 1);
    for (const [attempt, delayMs] of [
      [2, 1_000],
      [3, 5_000],
      [4, 30_000],
    ] as const) {
      await until(
        `rebuild ${attempt} scheduled`,
        () => h.decisions.some((d) => d.note.includes(`rebuild ${attempt} of 4 waits`)) && idle(h),
      );
      clock.advance(delayMs);
      await until(`rebuild ${attempt}`, () => rebuilds(h) === attempt);
    }
    await until('dead-lettered', () => h.decided('RebuildBudgetExhausted').length === 1);

    h.server.updateObject(ref, NS, 'web', (o) => {
      const spec = o['spec'] as { template: { spec: { containers: Array<{ image: string }> } } };
      spec.template.spec.containers[0]!.image = 'cells/engine:2';
    });
    await until('Ready at generation 2', () => {
      const status = h.get('web')?.status;
      return status?.['observedGeneration'] === 2 && status['readyReplicas'] === 1;
    });
    const released = h.decisions.filter((d) => d.reason === 'PodFailed').at(-1)!;
    expect(released.note).toContain('rebuild 1 of 4 at generation 2');
    expect(
      (h.get('web')!.status!['conditions'] as Array<{ type: string; status: string }>).find(
        (c) => c.type === 'SlotsDeadLettered',
      )!.status,
    ).toBe('False');
    // The old generation's entry is pruned; the new one's rebuild is recorded.
    expect(JSON.parse(h.get('web')!.metadata.annotations![REBUILD_HISTORY_ANNOTATION]!)).toEqual({
      '0': { count: 1, generation: 2, lastAt: 36_000 },
    });
  });

  it('[cellset: rebuild budget] a drifted pod (template hash differs) goes through the same budget: rebuilt from the new template', async () => {
    const h = await harness({ manualClock: true });
    const kubelet = startKubelet({ server: h.server, namespace: NS, intervalMs: 5 });
    onCleanup(async () => kubelet.stop());
    h.server.createObject(ref, cellSet('web', 2));
    await h.controller.loop.start();
    await until('two ready', () => h.get('web')?.status?.['readyReplicas'] === 2);
    const uids = h.pods('web').map((p) => p.metadata.uid);
    h.server.updateObject(
      ref,
      NS,
      'web',
      (o) =>
        void ((o['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels['tier'] =
          'gold'),
    );
    await until('both rebuilt and ready at generation 2', () => {
      const status = h.get('web')?.status;
      return (
        status?.['observedGeneration'] === 2 &&
        status['readyReplicas'] === 2 &&
        h.pods('web').every((p) => !uids.includes(p.metadata.uid))
      );
    });
    expect(
      h
        .decided('PodDrifted')
        .map((d) => d.pod)
        .sort(),
    ).toEqual(['web-0', 'web-1']);
    expect(h.server.getPod(NS, 'web-0')!.metadata.labels).toMatchObject({ tier: 'gold' });
  });

  it('[cellset: rebuild budget] a restarted controller resumes the budget from the history annotation: a slot parked at this generation gets no pod, another slot keeps its count', async () => {
    const h = await harness({ manualClock: true });
    const kubelet = startKubelet({ server: h.server, namespace: NS, intervalMs: 5, fate: () => 'fail' });
    onCleanup(async () => kubelet.stop());
    const body = cellSet('web', 2, 'cells/engine:broken');
    (body.metadata as { annotations?: Record<string, string> }).annotations = {
      [REBUILD_HISTORY_ANNOTATION]: JSON.stringify({
        '0': { count: 4, generation: 1, lastAt: 0, parked: true },
        '1': { count: 2, generation: 1, lastAt: 0 },
      }),
    };
    h.server.createObject(ref, body);
    await h.controller.loop.start();
    await until(
      'web-1 failed and its third rebuild scheduled',
      () => h.decisions.some((d) => d.pod === 'web-1' && d.note.includes('rebuild 3 of 4 waits 5 s')) && idle(h),
    );
    expect(h.podNames('web')).toEqual(['web-1']); // slot 0 stays absent: parked before this process started
    expect(h.decided('PodFailed')).toEqual([]);
    await until('status says slot 0 is dead-lettered', () =>
      (
        (h.get('web')?.status?.['conditions'] as Array<{ type: string; status: string; message?: string }> | undefined) ?? []
      ).some((c) => c.type === 'SlotsDeadLettered' && c.status === 'True' && c.message!.startsWith('slots 0 ')),
    );
    h.clock!.advance(5_000);
    await until('the third rebuild of web-1', () => h.decided('PodFailed', 'web-1').length === 1);
    expect(h.decided('PodFailed', 'web-1')[0]!.note).toContain('rebuild 3 of 4 at generation 1');
  });
});
