/**
 * Map functions with controller-runtime's semantics (issue 23, item 1). The shape of the issue's
 * trial: Services (the primary source, parents) select pods (a secondary source) by one label; the
 * pods' `keyMap` reads the Services' cache to find the Services selecting a pod
 * (`Watches(&Pod{}, EnqueueRequestsFromMapFunc(...))`). Each reconcile records the pods its Service
 * selects as the caches show them; the reference model is the world itself: after any sequence of
 * events across both sources (pods created, relabelled, deleted; Services created, re-selected,
 * deleted; relists of either, with their synthesised deletions), every Service's last reconcile saw
 * exactly the pods it selects now — so every parent whose map answer could have changed was
 * reconciled. The map and the reconcile read through indexes (issue 23 item 2), so a stale index
 * fails the same check. No real time passes (ManualClock, in-process sources).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InProcessSource, ManualClock, ReconcileLoop, type MapCaches } from '../src/index.js';

const APPS = ['web', 'db', 'api'] as const;
const PODS = ['p0', 'p1', 'p2', 'p3'] as const;
const SERVICES = ['s0', 's1', 's2'] as const;

/** A Service selecting pods by `app` (null: no selector, selects nothing). */
interface Service {
  readonly app: string | null;
  readonly v: number;
}
interface Pod {
  readonly app: string;
  readonly v: number;
}
type Secondaries = { pods: Pod };
type Caches = MapCaches<Service, string, Secondaries>;

type Command =
  | { readonly op: 'pod'; readonly key: string; readonly app: string }
  | { readonly op: 'deletePod'; readonly key: string }
  | { readonly op: 'service'; readonly key: string; readonly app: string | null }
  | { readonly op: 'deleteService'; readonly key: string }
  | { readonly op: 'relistPods'; readonly world: ReadonlyArray<readonly [string, string]> }
  | { readonly op: 'relistServices'; readonly world: ReadonlyArray<readonly [string, string | null]> };

const app = fc.constantFrom(...APPS);
const selector = fc.option(app, { nil: null, freq: 5 });
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('pod' as const), key: fc.constantFrom(...PODS), app }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('deletePod' as const), key: fc.constantFrom(...PODS) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('service' as const), key: fc.constantFrom(...SERVICES), app: selector }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteService' as const), key: fc.constantFrom(...SERVICES) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('relistPods' as const),
      world: fc.uniqueArray(fc.tuple(fc.constantFrom(...PODS), app), { selector: ([k]) => k, maxLength: PODS.length }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('relistServices' as const),
      world: fc.uniqueArray(fc.tuple(fc.constantFrom(...SERVICES), selector), {
        selector: ([k]) => k,
        maxLength: SERVICES.length,
      }),
    }),
  },
);
const commandsArb = fc.array(commandArb, { minLength: 1, maxLength: 30 });

/** The pods `service` selects in the given world, as the reconcile records them. */
function selected(service: Service | undefined, pods: Iterable<readonly [string, Pod]>): string {
  if (service === undefined || service.app === null) return '';
  const keys: string[] = [];
  for (const [key, pod] of pods) if (pod.app === service.app) keys.push(key);
  return keys.sort().join(',');
}

/**
 * One run. `mapNewOnly` plants the bug the issue reported: the map answers only for the newest
 * version of a pod (the event's new object), never for the old side of an update or the last known
 * object of a delete — the stored parents are all that reaches those parents.
 */
async function run(commands: readonly Command[], faults: { mapNewOnly?: boolean } = {}): Promise<string[]> {
  const clock = new ManualClock();
  const services = new InProcessSource<Service>('services');
  const pods = new InProcessSource<Pod>('pods');
  // The reference model: the world as the sources hold it after each command.
  const world = { services: new Map<string, Service>(), pods: new Map<string, Pod>() };
  const seen = new Map<string, string>();
  let version = 0;
  const podMap = (pod: Pod, key: string, caches: Caches): string[] => {
    if (faults.mapNewOnly && world.pods.get(key) !== pod) return [];
    // The Services selecting this pod, through the primary store's index (no scan).
    return caches.store.indexKeys('app', pod.app);
  };
  const loop = new ReconcileLoop<Service, string, Secondaries>({
    source: services,
    keyMap: (_service, key) => key,
    indexers: { app: (service) => service.app ?? undefined },
    secondary: { pods: { source: pods, keyMap: podMap, indexers: { app: (pod) => pod.app } } },
    reconcile: (key, ctx) => {
      // The selected pods through the pods store's index: a query, not a scan of a snapshot.
      const app = ctx.parent?.app;
      seen.set(key, app == null ? '' : selected(ctx.parent, ctx.stores.pods.byIndex('app', app)));
    },
    sources: { resyncPeriodMs: 0 },
    clock,
  });
  const violations: string[] = [];
  try {
    await loop.start();
    for (const [step, command] of commands.entries()) {
      version++;
      switch (command.op) {
        case 'pod': {
          const pod = { app: command.app, v: version };
          world.pods.set(command.key, pod);
          pods.upsert(command.key, pod);
          break;
        }
        case 'deletePod':
          world.pods.delete(command.key);
          pods.delete(command.key);
          break;
        case 'service': {
          const service = { app: command.app, v: version };
          world.services.set(command.key, service);
          services.upsert(command.key, service);
          break;
        }
        case 'deleteService':
          world.services.delete(command.key);
          services.delete(command.key);
          break;
        case 'relistPods':
          world.pods = new Map(command.world.map(([key, a]) => [key, { app: a, v: version }]));
          pods.replace(world.pods);
          break;
        case 'relistServices':
          world.services = new Map(command.world.map(([key, a]) => [key, { app: a, v: version }]));
          services.replace(world.services);
          break;
      }
      await clock.advanceAsync(0);
      for (const key of SERVICES) {
        const want = selected(world.services.get(key), world.pods);
        const got = seen.get(key) ?? '';
        if (got !== want)
          violations.push(`after step ${step} (${JSON.stringify(command)}): ${key} last saw [${got}], selects [${want}]`);
      }
      if (violations.length > 0) break;
    }
  } finally {
    await loop.stop({ graceMs: 0 });
  }
  return violations;
}

const property = (faults: { mapNewOnly?: boolean } = {}) =>
  fc.asyncProperty(commandsArb, async (commands) => {
    const violations = await run(commands, faults);
    if (violations.length > 0)
      throw new Error(`a parent whose map answer changed was not reconciled:\n  ${violations.join('\n  ')}`);
  });

describe('map functions run at event time on the old and the new object', () => {
  it('[loop: Map functions] property: after any events across pods and Services (relabels, selector changes, creates, deletes, relists), every Service last saw exactly the pods it selects', async () => {
    await fc.assert(property(), { numRuns: Number(process.env.RL_MODEL_RUNS ?? 300) });
  }, 120_000);

  it('[loop: Map functions] the runs are not vacuous: on a fixed-seed sample most runs relabel or delete a pod after a Service was created', () => {
    const sample = fc.sample(commandsArb, { seed: 23, numRuns: 200 });
    const interesting = sample.filter((commands) => {
      const firstService = commands.findIndex((c) => c.op === 'service' && c.app !== null);
      return (
        firstService !== -1 &&
        commands.slice(firstService + 1).some((c) => c.op === 'pod' || c.op === 'deletePod' || c.op === 'relistPods')
      );
    });
    expect(interesting.length).toBeGreaterThan(100);
  });

  it("[loop: Map functions] the check can fail: a map run on the new object only (the issue's bug, planted) is caught", async () => {
    const details = await fc.check(property({ mapNewOnly: true }), { numRuns: 300, seed: 23 });
    expect(details.failed).toBe(true);
    expect(String(details.errorInstance)).toMatch(/was not reconciled/);
  }, 120_000);

  it("[loop: Map functions] the issue's reproduction: a Service created after a pod's last event learns that the pod was relabelled away, and that it was deleted", async () => {
    const commands: Command[] = [
      { op: 'pod', key: 'p0', app: 'web' },
      { op: 'service', key: 's0', app: 'web' },
      { op: 'pod', key: 'p0', app: 'db' },
      { op: 'pod', key: 'p1', app: 'web' },
      { op: 'service', key: 's1', app: 'web' },
      { op: 'deletePod', key: 'p1' },
      { op: 'pod', key: 'p2', app: 'api' },
      { op: 'service', key: 's2', app: 'api' },
      { op: 'relistPods', world: [] },
    ];
    expect(await run(commands)).toEqual([]);
    const buggy = await run(commands, { mapNewOnly: true });
    expect(buggy[0]).toMatch(/after step 2 .* s0 last saw \[p0\], selects \[\]/);
  });

  it('[loop: Map functions] an update filter skips an update only when the stored, the old-side and the new-side answers agree; a map whose answer changed through another cache still reaches its parents; an owner source reaches its parent on create and delete', async () => {
    const clock = new ManualClock();
    const services = new InProcessSource<Service>('services');
    const pods = new InProcessSource<Pod>('pods');
    const owned = new InProcessSource<{ metadata: { namespace: string; ownerReferences: object[] } }>('owned');
    const reconciled: string[] = [];
    let podMapCalls = 0;
    const loop = new ReconcileLoop<
      Service,
      string,
      Secondaries & { owned: { metadata: { namespace: string; ownerReferences: object[] } } }
    >({
      source: services,
      keyMap: (_service, key) => key,
      indexers: { app: (service) => service.app ?? undefined },
      secondary: {
        pods: {
          source: pods,
          keyMap: (pod, _key, caches) => {
            podMapCalls++;
            return caches.store.indexKeys('app', pod.app);
          },
          // Skips every update: only a change of the map's answer may pass.
          updateFilter: () => false,
        },
        owned: { source: owned, owner: { kind: 'Service' } },
      },
      reconcile: (key) => {
        reconciled.push(key);
      },
      sources: { resyncPeriodMs: 0 },
      clock,
    });
    await loop.start();
    pods.upsert('p0', { app: 'web', v: 1 });
    await clock.advanceAsync(0);
    services.upsert('s0', { app: 'web', v: 1 }); // created after the pod's last event
    await clock.advanceAsync(0);
    reconciled.length = 0;
    podMapCalls = 0;
    // The stored answer (taken before s0 existed) differs from today's: p0 joins s0's owned set, so
    // the filter may not hide it.
    pods.upsert('p0', { app: 'web', v: 2 });
    await clock.advanceAsync(0);
    expect(reconciled).toEqual(['s0']);
    reconciled.length = 0;
    podMapCalls = 0;
    pods.upsert('p0', { app: 'web', v: 3 }); // every answer agrees: filtered
    await clock.advanceAsync(0);
    expect(reconciled).toEqual([]);
    expect(podMapCalls).toBe(2); // the new object and the old one
    pods.upsert('p0', { app: 'db', v: 4 }); // the old side answers s0, the new side nothing
    await clock.advanceAsync(0);
    expect(reconciled).toEqual(['s0']);
    reconciled.length = 0;
    owned.upsert('o', { metadata: { namespace: '', ownerReferences: [{ kind: 'Service', name: 's0', controller: true }] } });
    await clock.advanceAsync(0);
    owned.delete('o');
    await clock.advanceAsync(0);
    expect(reconciled).toEqual(['s0', 's0']);
    await loop.stop({ graceMs: 0 });
  });
});
