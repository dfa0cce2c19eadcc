import { OptionsError } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { healthySource, settle } from '@reconcile-loop/test-support';
import { ManualClock } from '@reconcile-loop/primitives';
import { ControlledSource } from '@reconcile-loop/test-support';
import {
  InProcessSource,
  ReconcileLoop,
  generationChanged,
  ownerKeyMap,
  replaceEvent,
  resourceVersionChanged,
  upsertEvent,
  type ObjectKey,
} from '../src/index.js';
import { controllerHarness, NS, podOf, setOf, type CocoonSet, type Pod } from './controller-fixtures.js';

/** ControlledSource is always named "controlled"; a loop needs distinct source names. */
function named<S extends object>(source: S, name: string): S {
  Object.defineProperty(source, 'name', { value: name });
  return source;
}

describe('several sources per loop', () => {
  it('[loop: Owns] reconcile gets the parent object and its owned pods; a pod event maps to its controller owner', async () => {
    const { loop, pods, seen, keys } = controllerHarness({
      sets: [setOf('a', 2), setOf('b', 1)],
      pods: [podOf('a-0', 'a'), podOf('a-1', 'a'), podOf('b-0', 'b'), podOf('stray', undefined)],
    });
    await loop.start();
    await settle();
    expect(seen.map(({ key, parent, pods }) => ({ key, parent, pods })).sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { key: 'ns/a', parent: 2, pods: ['ns/a-0', 'ns/a-1'] },
      { key: 'ns/b', parent: 1, pods: ['ns/b-0'] },
    ]);
    expect(loop.stores.pods.parentsOf('ns/stray')).toEqual([]);
    expect(loop.stores.pods.has('ns/stray')).toBe(true); // cached, mapped to no parent
    seen.length = 0;
    pods.upsert(...podOf('b-0', 'b', { phase: 'Running', resourceVersion: '2' }));
    await settle();
    expect(keys()).toEqual(['ns/b']);
    await loop.stop();
  });

  it('[loop: Owns] a deleted parent is reconciled with parent undefined and its owned pods still mapped to it', async () => {
    const { loop, sets, pods, seen } = controllerHarness({ sets: [setOf('a', 1)], pods: [podOf('a-0', 'a')] });
    await loop.start();
    await settle();
    seen.length = 0;
    sets.delete('ns/a');
    await settle();
    expect(seen).toEqual([{ key: 'ns/a', at: 0, parent: undefined, pods: ['ns/a-0'] }]);
    // The garbage collector's part: the owned pod goes too, and that still reaches the parent key.
    pods.delete('ns/a-0');
    await settle();
    expect(seen.at(-1)).toEqual({ key: 'ns/a', at: 0, parent: undefined, pods: [] });
    await loop.stop();
  });

  it('[loop: Owns] start() resolves only when every source has synced; health lists each source', async () => {
    const clock = new ManualClock();
    const sets = named(new ControlledSource<CocoonSet>(), 'cocoonsets');
    const pods = named(new ControlledSource<Pod>(), 'pods');
    const loop = new ReconcileLoop<CocoonSet, string, { pods: Pod }>({
      source: sets,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'CocoonSet' } } },
      reconcile: () => {},
      clock,
    });
    let started = false;
    const starting = loop.start().then(() => (started = true));
    await settle();
    sets.last.push(replaceEvent([setOf('a', 1)]));
    await settle();
    expect(started).toBe(false);
    expect(loop.synced).toBe(false);
    expect(loop.health().ready.checks.find((c) => c.name === 'source:pods')).toMatchObject({ ok: false });
    pods.last.push(replaceEvent([podOf('a-0', 'a')]));
    await starting;
    expect(loop.synced).toBe(true);
    expect(Object.keys(loop.health().sources)).toEqual(['cocoonsets', 'pods']);
    expect(loop.health().ready.ok).toBe(true);
    await loop.stop();
  });

  it('[loop: Owns] a relist of one source rewrites only its own store', async () => {
    const { loop, pods, seen, keys, clock } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      pods: [podOf('a-0', 'a'), podOf('b-0', 'b')],
      sourceRetry: { initialMs: 10, maxMs: 30_000 },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.disconnect();
    pods.delete('ns/b-0'); // lost while the pod stream was down: the relist synthesises its delete
    await clock.advanceAsync(10);
    await settle();
    expect(loop.stores.pods.keys()).toEqual(['ns/a-0']);
    expect(loop.store.keys().sort()).toEqual(['ns/a', 'ns/b']); // the parents' store is untouched
    // Level-triggered: the relist re-drives the parents of what it listed (a) and of what it deleted (b).
    expect(keys().sort()).toEqual(['ns/a', 'ns/b']);
    expect(seen.find((s) => s.key === 'ns/b')).toMatchObject({ parent: 1, pods: [] });
    await loop.stop();
  });

  it('[loop: Owns] an owner of the kind but not the controller is ignored by default and mapped with controllerOnly: false', () => {
    const shared: Pod = {
      metadata: {
        name: 'shared',
        namespace: NS,
        ownerReferences: [
          { apiVersion: 'example.com/v1', kind: 'CocoonSet', name: 'a', uid: '1', controller: true },
          { apiVersion: 'example.com/v2', kind: 'CocoonSet', name: 'b', uid: '2' },
          { apiVersion: 'other.io/v1', kind: 'CocoonSet', name: 'c', uid: '3' },
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: '4', controller: false },
        ],
      },
    };
    expect(ownerKeyMap({ kind: 'CocoonSet' })(shared, 'ns/shared')).toEqual(['ns/a']);
    expect(ownerKeyMap({ kind: 'CocoonSet', apiVersion: 'example.com/v1', controllerOnly: false })(shared, 'ns/shared')).toEqual([
      'ns/a',
      'ns/b',
    ]);
    expect(ownerKeyMap({ kind: 'CocoonSet', controllerOnly: false })(shared, 'ns/shared')).toEqual(['ns/a', 'ns/b', 'ns/c']);
    expect(ownerKeyMap({ kind: 'ReplicaSet' })(shared, 'ns/shared')).toEqual([]);
    expect(
      ownerKeyMap({ kind: 'Node' })(
        { metadata: { ownerReferences: [{ kind: 'Node', name: 'n1', apiVersion: 'v1', controller: true }] } },
        'x',
      ),
    ).toEqual(['n1']);
    expect(ownerKeyMap({ kind: 'CocoonSet' })({ metadata: { ownerReferences: null } }, 'x')).toBeUndefined();
  });

  it('[loop: Owns] a pod shared by two owners (controllerOnly: false) reconciles both; re-owning a pod reaches the old and the new owner', async () => {
    const { loop, pods, seen, keys } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      podOptions: { owner: { kind: 'CocoonSet', controllerOnly: false } },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    const [key, pod] = podOf('p', 'a');
    pod.metadata.ownerReferences!.push({ apiVersion: 'example.com/v1', kind: 'CocoonSet', name: 'b', uid: 'uid-b' });
    pods.upsert(key, pod);
    await settle();
    expect(keys().sort()).toEqual(['ns/a', 'ns/b']);
    expect(seen.map((s) => s.pods)).toEqual([['ns/p'], ['ns/p']]);
    seen.length = 0;
    pods.upsert(...podOf('p', 'b'));
    await settle();
    expect(keys().sort()).toEqual(['ns/a', 'ns/b']);
    expect(loop.stores.pods.members('ns/a').size).toBe(0);
    await loop.stop();
  });

  it('[loop: Watches] a key map may return several parent keys; a throwing or non-primitive result is logged and the object cached unmapped', async () => {
    const { loop, pods, seen, logger } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      podOptions: {
        keyMap: (pod) => {
          if (pod.metadata.name === 'boom') throw new Error('boom');
          if (pod.metadata.name === 'obj') return [{} as unknown as string];
          return pod.metadata.name === 'both' ? [`${NS}/a`, `${NS}/b`, `${NS}/a`] : undefined;
        },
      },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.upsert(...podOf('both', undefined));
    pods.upsert(...podOf('boom', undefined));
    pods.upsert(...podOf('obj', undefined));
    await settle();
    expect(seen.map((s) => [s.key, s.pods]).sort()).toEqual([
      ['ns/a', ['ns/both']],
      ['ns/b', ['ns/both']],
    ]);
    expect(loop.stores.pods.size).toBe(3);
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => [e.fields['source'], e.message])).toEqual([
      ['pods', 'object "ns/boom" cannot be mapped to a parent key: key map failed: boom; it is cached without a parent'],
      [
        'pods',
        'object "ns/obj" cannot be mapped to a parent key: key map failed: key map returned an array holding object at 0; expected a parent key (string, number, bigint, boolean), an array of them, or undefined; it is cached without a parent',
      ],
    ]);
    await loop.stop();
  });

  it('[loop: Owns] resync re-drives every parent object and every parent that only owned objects still point at', async () => {
    const { loop, sets, seen, clock } = controllerHarness({
      sets: [setOf('a', 1)],
      pods: [podOf('a-0', 'a'), podOf('gone-0', 'gone')],
      sources: { resyncPeriodMs: 1_000 },
    });
    await loop.start();
    await settle();
    expect(seen.map((s) => s.key).sort()).toEqual(['ns/a', 'ns/gone']);
    seen.length = 0;
    void sets;
    await clock.advanceAsync(1_000);
    expect(seen.map((s) => s.key).sort()).toEqual(['ns/a', 'ns/gone']);
    await loop.stop();
  });
});

describe('failures of a secondary source', () => {
  function twoSources(syncTimeoutMs = 10_000) {
    const clock = new ManualClock();
    const sets = named(new ControlledSource<CocoonSet>(), 'cocoonsets');
    const pods = named(new ControlledSource<Pod>(), 'pods');
    const errors: unknown[] = [];
    const loop = new ReconcileLoop<CocoonSet, string, { pods: Pod }>({
      source: sets,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'CocoonSet' } } },
      reconcile: () => {},
      onError: (error) => errors.push(error),
      sources: { syncTimeoutMs },
      clock,
    });
    return { clock, sets, pods, loop, errors };
  }

  it('[loop: Owns] a secondary source that never syncs fails start() with SyncTimeoutError naming it and carrying its last error', async () => {
    const { clock, sets, pods, loop } = twoSources(5_000);
    const starting = loop.start();
    starting.catch(() => {});
    await settle();
    sets.last.push(replaceEvent([setOf('a', 1)]));
    pods.last.fail(new Error('403 pods is forbidden'));
    await settle();
    await clock.advanceAsync(5_000);
    await expect(starting).rejects.toMatchObject({
      code: 'RL_LOOP_SYNC_TIMEOUT',
      sourceName: 'pods',
      cause: { message: '403 pods is forbidden' },
    });
    expect(loop.state).toBe('stopped');
    expect(clock.pending).toBe(0);
  });

  it('[loop: Owns] a secondary source failing permanently after start ends the loop: onError, health names it, not alive', async () => {
    const { sets, pods, loop, errors } = twoSources();
    const starting = loop.start();
    await settle();
    sets.last.push(replaceEvent([setOf('a', 1)]));
    pods.last.push(replaceEvent([podOf('a-0', 'a')]));
    await starting;
    const gone = Object.assign(new Error('the pod kind is gone'), { permanent: true as const });
    pods.last.fail(gone);
    await settle();
    expect(errors).toEqual([gone]);
    const health = loop.health();
    expect(health.sources['pods']?.permanentError).toBe(gone);
    expect(health.alive.ok).toBe(false);
    expect(health.alive.checks.find((c) => c.name === 'source:pods')).toMatchObject({ ok: false });
    expect(health.sources['cocoonsets']?.permanentError).toBeUndefined();
    await loop.stop();
    expect(loop.state).toBe('stopped');
  });
});

describe('update filters', () => {
  it('[loop: Update filters] resourceVersionChanged skips a pod update that brings back the same resourceVersion, never a create, delete or a move', async () => {
    const { loop, pods, seen, keys } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1)],
      pods: [podOf('a-0', 'a')],
      podOptions: { updateFilter: resourceVersionChanged },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.upsert(...podOf('a-0', 'a')); // same resourceVersion: a repeated frame
    await settle();
    expect(keys()).toEqual([]);
    expect(loop.stores.pods.get('ns/a-0')).toBeDefined();
    pods.upsert(...podOf('a-0', 'b')); // same resourceVersion, other owner: a move is never filtered
    await settle();
    expect(keys().sort()).toEqual(['ns/a', 'ns/b']);
    seen.length = 0;
    pods.upsert(...podOf('a-0', 'b', { resourceVersion: '2', phase: 'Running' }));
    pods.upsert(...podOf('b-1', 'b'));
    await settle();
    expect(new Set(keys())).toEqual(new Set(['ns/b'])); // only the parent that changed
    seen.length = 0;
    pods.delete('ns/b-1');
    await settle();
    expect(keys()).toEqual(['ns/b']);
    await loop.stop();
  });

  it('[loop: Update filters] a relist is judged object by object: unchanged objects are skipped, changed, new and missing ones reach their parents', async () => {
    const { loop, pods, seen, keys, clock } = controllerHarness({
      sets: [setOf('a', 1), setOf('b', 1), setOf('c', 1)],
      pods: [podOf('a-0', 'a'), podOf('b-0', 'b'), podOf('c-0', 'c')],
      podOptions: { updateFilter: resourceVersionChanged },
      sourceRetry: { initialMs: 10, maxMs: 30_000 },
    });
    await loop.start();
    await settle();
    seen.length = 0;
    pods.replace([podOf('a-0', 'a'), podOf('b-0', 'b', { resourceVersion: '7' }), podOf('d-0', 'a')]);
    await settle();
    expect(keys().sort()).toEqual(['ns/a', 'ns/b', 'ns/c']); // a: d-0 is new; b: changed; c: c-0 deleted
    seen.length = 0;
    pods.disconnect(); // the reopened stream lists the same world again: nothing changed
    await clock.advanceAsync(10);
    await settle();
    expect(keys()).toEqual([]);
    await loop.stop();
  });

  it('[loop: Update filters] generationChanged on the parent skips status-only writes; the primary store still holds them', async () => {
    const { loop, sets, seen, keys } = controllerHarness({ sets: [setOf('a', 1, 1)], updateFilter: generationChanged });
    await loop.start();
    await settle();
    seen.length = 0;
    sets.upsert(...setOf('a', 1, 1, '2')); // a status write: new resourceVersion, same generation
    await settle();
    expect(keys()).toEqual([]);
    expect(loop.store.get('ns/a')?.metadata.resourceVersion).toBe('2');
    sets.upsert(...setOf('a', 3, 2, '3'));
    await settle();
    expect(seen).toMatchObject([{ key: 'ns/a', parent: 3 }]);
    seen.length = 0;
    sets.replace([setOf('a', 3, 2, '3')]);
    await settle();
    expect(keys()).toEqual([]);
    sets.delete('ns/a');
    await settle();
    expect(keys()).toEqual(['ns/a']);
    await loop.stop();
  });
});

describe('options of several sources', () => {
  const base = { source: new InProcessSource<CocoonSet>('sets'), keyMap: (_: CocoonSet, k: ObjectKey) => k, reconcile: () => {} };
  it.each([
    [
      { secondary: { pods: { source: new InProcessSource<Pod>('sets'), owner: { kind: 'X' } } } },
      'named "sets" like another source',
    ],
    [{ secondary: { pods: { source: new InProcessSource<Pod>('pods') } } }, 'exactly one of owner and keyMap'],
    [
      { secondary: { pods: { source: new InProcessSource<Pod>('pods'), owner: { kind: 'X' }, keyMap: () => 'k' } } },
      'exactly one of owner and keyMap',
    ],
    [
      { secondary: { pods: { source: new InProcessSource<Pod>('pods'), owner: { kind: '' } } } },
      'owner.kind must be a non-empty string',
    ],
    [{ secondary: { pods: { source: {} } } }, 'secondary.pods.source must have an open'],
    [{ controller: { concurrency: 0 } }, 'controller.concurrency must be an integer from 1 to 1024'],
    [{ controller: { concurrency: 2.5 } }, 'controller.concurrency must be an integer'],
    [{ retry: { budget: { delaysMs: [0, -1] } } }, 'retry.budget.delaysMs[1]'],
    [{ retry: { budget: { delaysMs: [0] }, backoff: { initialMs: 5, maxMs: 5 } } }, 'retry.budget replaces'],
    [{ updateFilter: 'yes' }, 'updateFilter must be a function'],
    [{ retry: { fingerprint: 3 } }, 'retry.fingerprint must be a function'],
  ])('[loop: Owns] bad options throw OptionsError: %j', (extra, message) => {
    expect(() => new ReconcileLoop({ ...base, ...(extra as object) } as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS', message: expect.stringContaining(message) }),
    );
  });

  it.each([
    // Each flat name of before the grouping names where it went.
    [{ concurrency: 2 }, 'unknown option concurrency: it is controller.concurrency'],
    [{ name: 'c' }, 'unknown option name: it is controller.name'],
    [{ reconcileTimeoutMs: 1 }, 'unknown option reconcileTimeoutMs: it is controller.reconcileTimeoutMs'],
    [{ expectationsTtlMs: 1 }, 'unknown option expectationsTtlMs: it is controller.expectationsTtlMs'],
    [{ syncTimeoutMs: 1 }, 'unknown option syncTimeoutMs: it is sources.syncTimeoutMs'],
    [{ resyncPeriodMs: 1 }, 'unknown option resyncPeriodMs: it is sources.resyncPeriodMs'],
    [{ fingerprint: () => 1 }, 'unknown option fingerprint: it is retry.fingerprint'],
    [{ gracefulShutdownTimeoutMs: 1 }, 'unknown option gracefulShutdownTimeoutMs: it is shutdown.timeoutMs'],
    [{ leaderGate: {} }, 'unknown option leaderGate: it is leadership.gate'],
    // A typo anywhere is refused with its path, never ignored for the default.
    [{ controler: {} }, 'unknown option controler (known: source,'],
    [{ controller: { workers: 2 } }, 'unknown option controller.workers (known: name, concurrency,'],
    [{ sources: { syncTimeout: 1 } }, 'unknown option sources.syncTimeout'],
    [{ retry: { backof: {} } }, 'unknown option retry.backof'],
    [{ shutdown: { graceMs: 1 } }, 'unknown option shutdown.graceMs'],
    [{ health: { sourceFailing: 1 } }, 'unknown option health.sourceFailing'],
    [
      { secondary: { pods: { source: new InProcessSource<Pod>('pods'), owner: { kind: 'X' }, filter: () => true } } },
      'unknown option secondary.pods.filter',
    ],
    // Groups must be objects; leadership needs its gate.
    [{ controller: 3 }, 'controller must be an object, got number'],
    [{ shutdown: null }, 'shutdown must be an object, got null'],
    [{ leadership: {} }, 'leadership.gate is required'],
    [{ leadership: { gate: { isLeader: () => true } } }, 'leadership.gate.waitForLeadership must be a function'],
    [{ controller: { name: '' } }, 'controller.name must be a non-empty string'],
    [{ sources: { syncTimeoutMs: 0 } }, 'sources.syncTimeoutMs must be a number'],
    [{ shutdown: { timeoutMs: -1 } }, 'shutdown.timeoutMs must be a number'],
  ])(
    '[loop: Options by concern] an unknown, moved or unusable option is an OptionsError naming its path: %j',
    (extra, message) => {
      expect(() => new ReconcileLoop({ ...base, ...(extra as object) } as never)).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTIONS', message: expect.stringContaining(message) }),
      );
    },
  );

  it('[loop: Options by concern] every group set at once is accepted and applied', async () => {
    const clock = new ManualClock();
    const loop = new ReconcileLoop({
      ...base,
      clock,
      controller: { name: 'sets-controller', concurrency: 3, reconcileTimeoutMs: 1_000, expectationsTtlMs: 2_000 },
      sources: { syncTimeoutMs: 3_000, resyncPeriodMs: 0 },
      retry: { budget: { delaysMs: [0] }, fingerprint: () => 1 },
      shutdown: { timeoutMs: 4_000 },
      health: { sourceFailingMs: 5_000 },
    });
    expect(loop.health().concurrency).toBe(3);
    await loop.start();
    expect(clock.pending).toBe(0); // resync disabled: no timer
    await loop.stop();
  });
});

describe('cluster-scoped owners', () => {
  interface ClusterPool {
    metadata: { name: string; generation: number; resourceVersion: string; uid: string };
  }
  const pool: [ObjectKey, ClusterPool] = [
    'gpu',
    { metadata: { name: 'gpu', generation: 1, resourceVersion: '1', uid: 'uid-gpu' } },
  ];
  const worker = (name: string): [ObjectKey, Pod] => [
    `team-a/${name}`,
    {
      metadata: {
        name,
        namespace: 'team-a',
        resourceVersion: '1',
        ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'ClusterPool', name: 'gpu', uid: 'uid-gpu', controller: true }],
      },
    },
  ];

  it('[loop: Owns cluster-scoped] a cluster-scoped ClusterPool gpu owning team-a/w-0 is reconciled under key gpu with its child; the child deletion re-drives gpu', async () => {
    const clock = new ManualClock();
    const pools = new InProcessSource<ClusterPool>('clusterpools', [pool]);
    const pods = new InProcessSource<Pod>('pods', [worker('w-0')]);
    const seen: Array<{ key: string; parent: string | undefined; pods: string[] }> = [];
    const loop = new ReconcileLoop<ClusterPool, string, { pods: Pod }>({
      source: pools,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'ClusterPool', apiVersion: 'example.com/v1', clusterScoped: true } } },
      reconcile: (key, ctx) => {
        seen.push({ key, parent: ctx.parent?.metadata.name, pods: [...ctx.owned('pods').keys()].sort() });
      },
      clock,
    });
    await loop.start();
    await settle();
    expect(seen).toEqual([{ key: 'gpu', parent: 'gpu', pods: ['team-a/w-0'] }]); // no phantom team-a/gpu
    expect(loop.stores.pods.parentsOf('team-a/w-0')).toEqual(['gpu']);
    seen.length = 0;
    pods.delete('team-a/w-0');
    await settle();
    expect(seen).toEqual([{ key: 'gpu', parent: 'gpu', pods: [] }]);
    await loop.stop();
  });

  it('[loop: Owns cluster-scoped] ownerKeyMap: clusterScoped gives the bare owner name; the default keeps the child namespace', () => {
    const [, child] = worker('w-0');
    expect(ownerKeyMap({ kind: 'ClusterPool', clusterScoped: true })(child, 'team-a/w-0')).toEqual(['gpu']);
    expect(ownerKeyMap({ kind: 'ClusterPool' })(child, 'team-a/w-0')).toEqual(['team-a/gpu']);
  });
});

describe('quarantined versions in the context', () => {
  it('[loop: Quarantine is not deletion] an owned object whose newest version is quarantined stays in ctx.owned at its last good version, ctx.quarantined names it and why; a relist keeping it deletes nothing', async () => {
    const clock = new ManualClock();
    const sets = new InProcessSource<CocoonSet>('cocoonsets', [setOf('a', 2)]);
    const inner = named(new ControlledSource<Pod>(), 'pods');
    let held: Array<{ key: string; resourceVersion: string; issues: string[]; since: number }> = [];
    const pods = {
      name: 'pods',
      open: (signal: AbortSignal) => inner.open(signal),
      health: () => healthySource({ quarantined: held }),
    };
    const seen: Array<{ pods: string[]; quarantined: unknown[] }> = [];
    const loop = new ReconcileLoop<CocoonSet, string, { pods: Pod }>({
      source: sets,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'CocoonSet' } } },
      reconcile: (_, ctx) => {
        seen.push({ pods: [...ctx.owned('pods').keys()].sort(), quarantined: [...ctx.quarantined] });
      },
      clock,
    });
    const starting = loop.start();
    await settle();
    inner.last.push(replaceEvent([podOf('a-0', 'a'), podOf('a-1', 'a')]));
    await starting;
    await settle();
    // a-1's newest version failed the view: the reflector keeps it out of the relist and names it in keep.
    held = [{ key: 'ns/a-1', resourceVersion: '2', issues: ['spec.containers: expected array'], since: 0 }];
    seen.length = 0;
    inner.last.push(replaceEvent([podOf('a-0', 'a')], ['ns/a-1']));
    await settle();
    expect(loop.stores.pods.has('ns/a-1')).toBe(true);
    loop.enqueue('ns/a');
    await settle();
    expect(seen.at(-1)).toEqual({
      pods: ['ns/a-0', 'ns/a-1'],
      quarantined: [
        { key: 'ns/a-1', resourceVersion: '2', issues: ['spec.containers: expected array'], since: 0, source: 'pods' },
      ],
    });
    held = []; // a good version lifts it
    inner.last.push(upsertEvent(...podOf('a-1', 'a', { resourceVersion: '3' })));
    await settle();
    expect(seen.at(-1)).toEqual({ pods: ['ns/a-0', 'ns/a-1'], quarantined: [] });
    await loop.stop();
  });
});
