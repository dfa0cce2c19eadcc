import { ManualClock } from '@reconcile-loop/primitives';
import { FakeLeaderGate, recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { InProcessSource, ReconcileLoop } from '../src/index.js';

interface Item {
  parent: string;
}
interface Child {
  owner: string;
}

function harness() {
  const clock = new ManualClock();
  const gate = new FakeLeaderGate();
  const logger = recordingLogger();
  const parents = new InProcessSource<Item>('sets', [
    ['a', { parent: 'a' }],
    ['b', { parent: 'b' }],
    ['c', { parent: 'c' }],
  ]);
  const children = new InProcessSource<Child>('pods', [['c-0', { owner: 'c' }]]);
  const reconciled: string[] = [];
  const loop = new ReconcileLoop<Item, string, { pods: Child }>({
    source: parents,
    keyMap: (item) => item.parent,
    secondary: { pods: { source: children, keyMap: (child) => child.owner } },
    leadership: { gate },
    clock,
    logger,
    reconcile: (key) => void reconciled.push(key),
  });
  return { clock, gate, logger, parents, children, reconciled, loop };
}

describe('[loop: Standby drops gone parents] at the start of a term, queued keys whose parent has no object in any store are dropped', () => {
  it('a standby queues events; deleted parents are dropped when it starts leading, a parent that still has owned objects is kept', async () => {
    const h = harness();
    await h.loop.start(); // a standby: synced, not leading
    await settle();
    h.parents.upsert('d', { parent: 'd' });
    h.loop.enqueue('x'); // a manual trigger for a parent no store knows
    h.parents.delete('a'); // gone, and nothing maps to it
    h.parents.delete('c'); // gone, but its pod still maps to it (controller-runtime's EnqueueRequestForOwner replays it)
    h.parents.upsert('e', { parent: 'e' });
    h.parents.delete('e'); // created and deleted while standby
    await settle();
    expect(h.reconciled).toEqual([]);
    expect(h.loop.health().queueDepth).toBe(6); // a, b, c (initial), d, x, e
    h.gate.grant();
    await settle();
    expect(h.reconciled.sort()).toEqual(['b', 'c', 'd']);
    const drop = h.logger.entries.filter((e) => /parents are gone/.test(e.message));
    expect(drop).toHaveLength(1);
    expect(drop[0]!.fields).toEqual({ dropped: 3 }); // a, x, e
    await h.loop.stop();
  });

  it('while leading nothing is dropped: a deleted parent is reconciled (its delete event), and keys left from an earlier term whose parents went are dropped at the next', async () => {
    const h = harness();
    await h.loop.start();
    h.gate.grant();
    await settle();
    expect(h.reconciled.sort()).toEqual(['a', 'b', 'c']);
    h.reconciled.length = 0;
    h.parents.delete('a'); // leading: the delete event runs a reconcile (finalizer-less cleanup, as upstream)
    await settle();
    expect(h.reconciled).toEqual(['a']);
    h.gate.revoke();
    await settle();
    h.parents.delete('b');
    h.children.delete('c-0');
    h.parents.delete('c'); // c now has no object anywhere
    await settle();
    h.reconciled.length = 0;
    h.gate.grant();
    await settle();
    expect(h.reconciled).toEqual([]); // b and c are gone from every store: nothing to replay
    await h.loop.stop();
  });
});
