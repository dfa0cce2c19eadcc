/**
 * What the model-based check (loop.model.test.ts) found, each shrunk to a deterministic case: a
 * divergence from upstream (fixed), and a behaviour shared with upstream worth pinning.
 */
import { ManualClock } from '@reconcile-loop/primitives';
import { FakeLeaderGate, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { generationChanged, InProcessSource, ReconcileLoop } from '../../src/index.js';

interface Parent {
  metadata: { name: string; uid: string; generation: number };
}
interface Pod {
  metadata: { name: string; ownerReferences: Array<{ kind: string; name: string; controller: boolean }> };
}

const parentOf = (name: string, uid: string): [string, Parent] => [name, { metadata: { name, uid, generation: 1 } }];

describe('divergences found by the model-based check', () => {
  it('[loop: Model-based] a parent deleted and re-created while its key waits in the queue drops the old expectations at the delete, as DeleteExpectations does: the new parent runs at once, not after the TTL', async () => {
    const clock = new ManualClock();
    const parents = new InProcessSource<Parent>('parents', [parentOf('a', 'uid-1')]);
    const pods = new InProcessSource<Pod>('pods');
    const seen: Array<{ key: string; uid: string | undefined; at: number }> = [];
    let releaseB: (() => void) | undefined;
    const loop = new ReconcileLoop<Parent, string, { pods: Pod }>({
      source: parents,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'Parent' } } },
      clock,
      reconcile: async (key, ctx) => {
        seen.push({ key, uid: ctx.parent?.metadata.uid, at: clock.now() });
        // a's first run creates pod a-0 (the write the cache has not shown yet); b blocks the one worker.
        if (key === 'a' && ctx.parent?.metadata.uid === 'uid-1') ctx.expect('pods').creations('a-0');
        if (key === 'b') await new Promise<void>((resolve) => (releaseB = resolve));
      },
    });
    await loop.start();
    await settle();
    expect(seen).toEqual([{ key: 'a', uid: 'uid-1', at: 0 }]);

    parents.upsert(...parentOf('b', 'uid-2')); // the only worker is now busy with b
    await settle();
    parents.delete('a'); // a is gone: upstream's delete handler calls DeleteExpectations(a) here
    parents.upsert(...parentOf('a', 'uid-3')); // re-created under the same name; a waits in the queue meanwhile
    await settle();
    releaseB?.();
    await settle();
    // The new a has nothing in flight; it must not wait for the old a's pod (garbage collected with it).
    expect(seen.at(-1)).toEqual({ key: 'a', uid: 'uid-3', at: 0 });
    await loop.stop();
  });

  it('[loop: Model-based] a parked parent deleted and re-created at generation 1 while the watch was down is reconciled at the relist, though generationChanged filters updates (a new uid is a create, not an update), and is released', async () => {
    const clock = new ManualClock();
    const parents = new InProcessSource<Parent>('parents', [parentOf('a', 'uid-1')], {
      retry: { initialMs: 50, maxMs: 50, factor: 1 },
    });
    const seen: Array<string | undefined> = [];
    const loop = new ReconcileLoop<Parent, string>({
      source: parents,
      keyMap: (_, key) => key,
      updateFilter: generationChanged,
      retry: { budget: { delaysMs: [0] } },
      clock,
      reconcile: (_key, ctx) => {
        seen.push(ctx.parent?.metadata.uid);
        if (ctx.parent?.metadata.uid === 'uid-1') throw new Error('uid-1 cannot be reconciled');
      },
    });
    await loop.start();
    await clock.advanceAsync(0);
    expect(seen).toEqual(['uid-1', 'uid-1']);
    expect(loop.parked().map((p) => p.key)).toEqual(['a']);

    parents.disconnect(); // the watch is down ...
    parents.delete('a'); // ... while a is deleted and re-created: a new uid at generation 1
    parents.upsert(...parentOf('a', 'uid-2'));
    await clock.advanceAsync(50); // the reopen lists uid-2 as one update of a; its uid moved, so no filter drops it
    expect(loop.store.get('a')?.metadata.uid).toBe('uid-2');
    expect(seen).toEqual(['uid-1', 'uid-1', 'uid-2']);
    expect(loop.parked()).toEqual([]);
    await loop.stop();
  });

  // Found with RL_MODEL_SEED=69343552 RL_MODEL_PATH=900:1:1:2:2:7:6:20:23:21:28:27:27:20:20 RL_MODEL_REPLAY=///I:P:
  // the model kept the expectations the loop had dropped; the loop was right (the model now allows it).
  it('[loop: Model-based] a parent deleted during its reconcile, whose call recorded a create, drops those expectations when a worker dequeues it while the parent is gone, as syncReplicaSet does on NotFound, even when a frozen term then turns it away: the parent re-created later runs at once, not after the TTL', async () => {
    const clock = new ManualClock();
    const parents = new InProcessSource<Parent>('parents', [parentOf('a', 'uid-1')]);
    const pods = new InProcessSource<Pod>('pods');
    const gate = new FakeLeaderGate();
    const seen: Array<{ uid: string | undefined; at: number }> = [];
    let finish: (() => void) | undefined;
    const loop = new ReconcileLoop<Parent, string, { pods: Pod }>({
      source: parents,
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, owner: { kind: 'Parent' } } },
      controller: { concurrency: 2 },
      leadership: { gate },
      clock,
      reconcile: async (_key, ctx) => {
        seen.push({ uid: ctx.parent?.metadata.uid, at: clock.now() });
        if (ctx.parent?.metadata.uid !== 'uid-1') return;
        await new Promise<void>((resolve) => (finish = resolve));
        ctx.expect('pods').creations('p1'); // the create returned; its ADDED never comes (the parent is gone)
      },
    });
    await loop.start();
    gate.grant();
    await settle();
    expect(seen).toEqual([{ uid: 'uid-1', at: 0 }]);

    parents.delete('a'); // gone while its call runs: a is marked dirty
    await settle();
    gate.freeze(); // isLeader() false, the term not yet ended
    finish?.(); // the call records p1 and ends; its dirty re-add is dequeued at once, a is still gone
    await settle();
    expect(seen).toHaveLength(1); // the leadership check turned it away (the term ended there) ...
    parents.upsert(...parentOf('a', 'uid-2')); // ... after the dequeue dropped the expectations
    gate.grant();
    await settle();
    // The new a has nothing in flight: it must not wait 5 min for the old a's p1.
    expect(seen.at(-1)).toEqual({ uid: 'uid-2', at: 0 });
    await loop.stop();
  });

  it('[loop: Model-based] a same-uid update at the same generation is still filtered by generationChanged', async () => {
    const clock = new ManualClock();
    const parents = new InProcessSource<Parent>('parents', [parentOf('a', 'uid-1')]);
    const seen: Array<string | undefined> = [];
    const loop = new ReconcileLoop<Parent, string>({
      source: parents,
      keyMap: (_, key) => key,
      updateFilter: generationChanged,
      clock,
      reconcile: (_key, ctx) => {
        seen.push(ctx.parent?.metadata.uid);
      },
    });
    await loop.start();
    await clock.advanceAsync(0);
    parents.upsert(...parentOf('a', 'uid-1')); // same uid, same generation: a status-like write
    await clock.advanceAsync(0);
    expect(seen).toEqual(['uid-1']);
    await loop.stop();
  });
});
