/** Cache queries from a reconcile and from a key map (issue 23 item 2): indexes declared per source, read-only views. */
import { describe, expect, it } from 'vitest';
import { InProcessSource, ManualClock, OptionsError, ReconcileLoop, type ReconcileContext } from '../src/index.js';

interface Node {
  readonly zone: string;
}
interface Pod {
  readonly node: string;
  readonly labels: Readonly<Record<string, string>>;
}
type Secondaries = { pods: Pod };

const labelPairs = (pod: Pod): string[] => Object.entries(pod.labels).map(([k, v]) => `${k}=${v}`);

describe('cache queries', () => {
  it('[loop: Cache queries] a reconcile queries the primary and secondary indexes read-only (byIndex, indexKeys, indexValues, list); the views follow later events and expose no writer', async () => {
    const clock = new ManualClock();
    const nodes = new InProcessSource<Node>('nodes');
    const pods = new InProcessSource<Pod>('pods');
    const seen: string[] = [];
    let context: ReconcileContext<Node, string, Secondaries> | undefined;
    const loop = new ReconcileLoop<Node, string, Secondaries>({
      source: nodes,
      keyMap: (_node, key) => key,
      indexers: { zone: (node) => node.zone },
      secondary: {
        pods: {
          source: pods,
          // A pod concerns its node (a field index on the pods answers the reverse question).
          keyMap: (pod) => pod.node,
          indexers: { node: (pod) => pod.node, label: labelPairs },
        },
      },
      reconcile: (key, ctx) => {
        context = ctx;
        const onNode = [...ctx.stores.pods.byIndex('node', key).keys()].sort();
        const zoneMates = ctx.store.indexKeys('zone', ctx.parent?.zone ?? '').sort();
        seen.push(`${key}: pods [${onNode}] zone [${zoneMates}]`);
      },
      sources: { resyncPeriodMs: 0 },
      clock,
    });
    nodes.upsert('n1', { zone: 'a' });
    nodes.upsert('n2', { zone: 'a' });
    pods.upsert('default/p0', { node: 'n1', labels: { app: 'web' } });
    pods.upsert('default/p1', { node: 'n2', labels: { app: 'web', tier: 'x' } });
    await loop.start();
    await clock.advanceAsync(0);
    expect(seen.sort()).toEqual(['n1: pods [default/p0] zone [n1,n2]', 'n2: pods [default/p1] zone [n1,n2]']);

    // The pod moves: both nodes are reconciled and the index answers with the move.
    seen.length = 0;
    pods.upsert('default/p0', { node: 'n2', labels: { app: 'db' } });
    await clock.advanceAsync(0);
    expect(seen.sort()).toEqual(['n1: pods [] zone [n1,n2]', 'n2: pods [default/p0,default/p1] zone [n1,n2]']);
    const view = context!.stores.pods;
    expect(view.indexKeys('label', 'app=web')).toEqual(['default/p1']);
    expect(view.indexValues('label').sort()).toEqual(['app=db', 'app=web', 'tier=x']);
    expect([...view.list((pod) => pod.labels['app'] === 'db').keys()]).toEqual(['default/p0']);
    expect(() => view.byIndex('nodeName', 'n1')).toThrow(/no index named "nodeName" \(declared: node, label\)/);
    expect(Object.isFrozen(view)).toBe(true);
    expect('apply' in view || 'apply' in context!.store).toBe(false);
    // The views are live, not snapshots: a later event shows.
    pods.delete('default/p1');
    await clock.advanceAsync(0);
    expect(view.indexKeys('node', 'n2')).toEqual(['default/p0']);
    expect(loop.stores.pods.indexKeys('label', 'tier=x')).toEqual([]);
    expect(loop.store.indexKeys('zone', 'a')).toEqual(['n1', 'n2']);
    await loop.stop({ graceMs: 0 });
  });

  it('[loop: Cache queries] an update filter skips the reconcile, never the index: a skipped update is queryable at once', async () => {
    const clock = new ManualClock();
    const nodes = new InProcessSource<Node>('nodes');
    const pods = new InProcessSource<Pod>('pods');
    let calls = 0;
    const loop = new ReconcileLoop<Node, string, Secondaries>({
      source: nodes,
      keyMap: (_node, key) => key,
      secondary: {
        pods: { source: pods, keyMap: (pod) => pod.node, updateFilter: () => false, indexers: { label: labelPairs } },
      },
      reconcile: () => {
        calls++;
      },
      sources: { resyncPeriodMs: 0 },
      clock,
    });
    pods.upsert('p', { node: 'n1', labels: { app: 'web' } });
    await loop.start();
    await clock.advanceAsync(0);
    const before = calls;
    pods.upsert('p', { node: 'n1', labels: { app: 'db' } });
    await clock.advanceAsync(0);
    expect(calls).toBe(before);
    expect(loop.stores.pods.indexKeys('label', 'app=db')).toEqual(['p']);
    expect(loop.stores.pods.indexKeys('label', 'app=web')).toEqual([]);
    await loop.stop({ graceMs: 0 });
  });

  it('[loop: Cache queries] indexers must be objects of functions: an OptionsError names the path', () => {
    const base = { source: new InProcessSource<Node>('nodes'), keyMap: (_: Node, key: string) => key, reconcile: () => {} };
    expect(() => new ReconcileLoop({ ...base, indexers: { zone: 'zone' as never } })).toThrow(OptionsError);
    expect(() => new ReconcileLoop({ ...base, indexers: { zone: 'zone' as never } })).toThrow(
      /indexers\.zone must be a function/,
    );
    expect(
      () =>
        new ReconcileLoop<Node, string, Secondaries>({
          ...base,
          secondary: { pods: { source: new InProcessSource<Pod>('pods'), keyMap: (p) => p.node, indexers: [] as never } },
        }),
    ).toThrow(/secondary\.pods\.indexers must be an object of index functions/);
  });
});
