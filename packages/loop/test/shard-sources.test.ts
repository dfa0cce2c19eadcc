import { describe, expect, it } from 'vitest';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { ManualClock, shardHash, silentLogger, type ShardRange } from '@reconcile-loop/primitives';
import { settle } from '@reconcile-loop/test-support';
import { gains } from '../src/shard.js';
import { primaryShardValue, ShardedSource, type RangesFollower } from '../src/shard-sources.js';
import { InProcessSource, ReconcileLoop, type SourceHealth } from '../src/index.js';
import { FakeShardGate } from './fake-shard-gate.js';

const MID = '0x8000000000000000';
const LOW: readonly ShardRange[] = [{ start: '0x0000000000000000', end: MID }];
const HIGH: readonly ShardRange[] = [{ start: MID, end: '0x10000000000000000' }];
const low = (uid: string): boolean => shardHash(uid) < MID.slice(2);

interface Obj {
  metadata: {
    uid: string;
    namespace?: string;
    ownerReferences?: Array<{ kind: string; name: string; uid: string; controller?: boolean }>;
  };
}

/**
 * Twelve parents (keys p0…p11); each has one child c-pN owned (controller) by it. The uids start
 * with a hash of the key: FNV-1a spreads strings that differ in their first bytes, not in their last.
 */
const uidOf = (key: string): string => `${shardHash(key)}-${key}`;
function harness(gate: FakeShardGate) {
  const clock = new ManualClock();
  const keys = Array.from({ length: 12 }, (_, i) => `p${i}`);
  const parents = new InProcessSource<Obj>(
    'parents',
    keys.map((k) => [k, { metadata: { uid: uidOf(k) } }]),
  );
  const children = new InProcessSource<Obj>(
    'children',
    keys.map((k) => [
      `c-${k}`,
      { metadata: { uid: `cu-${k}`, ownerReferences: [{ kind: 'Parent', name: k, uid: uidOf(k), controller: true }] } },
    ]),
  );
  const starts: Array<{ key: string; parent: boolean; children: number; admitted: boolean }> = [];
  const loop = new ReconcileLoop<Obj, string, { children: Obj }>({
    source: parents,
    keyMap: (_o, key) => key,
    secondary: { children: { source: children, owner: { kind: 'Parent' } } },
    shard: { gate },
    sources: { resyncPeriodMs: 0 },
    clock,
    reconcile: async (key, ctx) => {
      starts.push({
        key,
        parent: ctx.parent !== undefined,
        children: ctx.owned('children').size,
        admitted: gate.admits(shardHash(uidOf(key))),
      });
    },
  });
  const lowKeys = keys.filter((k) => low(uidOf(k)));
  const highKeys = keys.filter((k) => !low(uidOf(k)));
  return { clock, parents, children, loop, starts, keys, lowKeys, highKeys };
}

/**
 * The harness behind a gate with these ranges that admits every key, started and settled;
 * `beforeStart` runs on it first (to wrap a source's `open`).
 */
async function started(ranges: readonly ShardRange[], beforeStart?: (h: ReturnType<typeof harness>) => void) {
  const gate = new FakeShardGate();
  gate.ranges = ranges;
  const h = harness(gate);
  for (const k of h.keys) gate.admit(uidOf(k));
  beforeStart?.(h);
  await h.loop.start();
  await settle(10);
  return { ...h, gate };
}

describe('sources that follow the shard ranges', () => {
  it('[loop: Sharded sources follow the ranges] the primary store holds only parents whose uid hash is in the ranges, owned children only when their controller owner is; a move releases the lost ones (never reconciled as deleted) and relists the gained ones, admitted only once every source relisted', async () => {
    const h = await started(LOW);
    const { gate } = h;
    // Not vacuous: the fixed uids fall on both sides.
    expect(h.lowKeys.length).toBeGreaterThan(0);
    expect(h.highKeys.length).toBeGreaterThan(0);
    expect([...h.loop.store.keys()].sort()).toEqual([...h.lowKeys].sort());
    expect([...h.loop.stores.children.keys()].sort()).toEqual(h.lowKeys.map((k) => `c-${k}`).sort());
    expect([...new Set(h.starts.map((s) => s.key))].sort()).toEqual([...h.lowKeys].sort());

    // The ranges move to the other half: the held ones are released, the others relisted.
    h.starts.length = 0;
    gate.setRanges(HIGH);
    await settle(10);
    expect([...h.loop.store.keys()].sort()).toEqual([...h.highKeys].sort());
    expect([...h.loop.stores.children.keys()].sort()).toEqual(h.highKeys.map((k) => `c-${k}`).sort());
    await h.clock.advanceAsync(1_000);
    await settle(10);
    expect([...new Set(h.starts.map((s) => s.key))].sort()).toEqual([...h.highKeys].sort());
    // No reconcile saw a missing parent (a release is not a deletion) or a parent without its child (cold sources).
    expect(h.starts.every((s) => s.parent && s.children === 1 && s.admitted)).toBe(true);

    // A new object outside the ranges is not stored; inside, it is.
    const outside = h.lowKeys[0]!;
    h.parents.upsert(outside, { metadata: { uid: uidOf(outside) } });
    await settle();
    expect(h.loop.store.get(outside)).toBeUndefined();
    expect(h.loop.health().shard).toMatchObject({ ranges: HIGH, coldSources: [] });
    await h.loop.stop();
  });

  it('[loop: Sharded sources follow the ranges] a gained hash is not admitted while a source is still relisting (cold); empty ranges hold nothing', async () => {
    const h = await started([]);
    const { gate } = h;
    expect(h.loop.store.keys()).toHaveLength(0);
    expect(h.loop.stores.children.keys()).toHaveLength(0);
    expect(h.starts).toEqual([]);
    // Hold the children's relist: its stream is closed by the gain, and opening it again fails until released.
    const open = h.children.open.bind(h.children);
    let refuse = true;
    h.children.open = (signal: AbortSignal) =>
      refuse
        ? (async function* () {
            yield* []; // an iterator that fails on its first read
            throw new Error('apiserver unavailable');
          })()
        : open(signal);
    gate.setRanges(HIGH);
    await settle(10);
    expect([...h.loop.store.keys()].sort()).toEqual([...h.highKeys].sort());
    expect(h.loop.health().shard?.coldSources).toEqual(['children']);
    await h.clock.advanceAsync(1_000);
    await settle(10);
    expect(h.starts).toEqual([]);
    refuse = false;
    for (let i = 0; i < 5 && h.starts.length < h.highKeys.length; i++) {
      await h.clock.advanceAsync(2_000);
      await settle(10);
    }
    expect(h.loop.health().shard?.coldSources).toEqual([]);
    expect([...new Set(h.starts.map((s) => s.key))].sort()).toEqual([...h.highKeys].sort());
    expect(h.starts.every((s) => s.parent && s.children === 1)).toBe(true);
    await h.loop.stop();
  });

  it('[loop: Sharded sources follow the ranges] before the gate has ranges no source is opened (a replica starting does not list the whole kind): the stores sync empty, and the first ranges open each source once', async () => {
    const opened = { parents: 0, children: 0 };
    // start() resolves once every store synced: here, empty.
    const h = await started([], (h) => {
      for (const name of ['parents', 'children'] as const) {
        const source = h[name];
        const open = source.open.bind(source);
        source.open = (signal: AbortSignal) => {
          opened[name] += 1;
          return open(signal);
        };
      }
    });
    const { gate } = h;
    expect(opened).toEqual({ parents: 0, children: 0 });
    expect(h.loop.store.keys()).toHaveLength(0);
    gate.setRanges(LOW);
    await settle(10);
    expect(opened).toEqual({ parents: 1, children: 1 });
    expect([...h.loop.store.keys()].sort()).toEqual([...h.lowKeys].sort());
    await h.clock.advanceAsync(1_000);
    await settle(10);
    expect([...new Set(h.starts.map((s) => s.key))].sort()).toEqual([...h.lowKeys].sort());
    await h.loop.stop();
  });

  it('[loop: Sharded sources follow the ranges] a source with reshard(ranges) and a shard of the same field is resharded at construction and on every change (the server filters); one of another field is not', async () => {
    const resharded: Array<readonly ShardRange[]> = [];
    const make = (field: 'uid' | 'namespace') => {
      const inner = new InProcessSource<Obj>('parents');
      return Object.assign(inner, {
        reshard: (ranges: readonly ShardRange[]) => resharded.push(ranges),
        health: (): SourceHealth => ({ shard: { field } }) as unknown as SourceHealth,
      });
    };
    const gate = new FakeShardGate();
    gate.ranges = LOW;
    const loop = new ReconcileLoop<Obj, string>({
      source: make('uid'),
      keyMap: (_o, key) => key,
      shard: { gate },
      reconcile: async () => {},
    });
    expect(resharded).toEqual([LOW]);
    await loop.start();
    gate.setRanges(HIGH);
    gate.setRanges([]); // nothing to ask the server for: the selector stays, the filter holds nothing
    expect(resharded).toEqual([LOW, HIGH]);
    await loop.stop();

    resharded.length = 0;
    const other = new ReconcileLoop<Obj, string>({
      source: make('namespace'),
      keyMap: (_o, key) => key,
      shard: { gate },
      reconcile: async () => {},
    });
    expect(resharded).toEqual([]);
    await other.stop();
  });

  it('[loop: Sharded sources follow the ranges] shard.field namespace: a parent and its children are kept by their namespace', async () => {
    const gate = new FakeShardGate();
    const namespaces = Array.from({ length: 8 }, (_, i) => `${shardHash(String(i)).slice(0, 8)}-team`);
    const inLow = namespaces.filter((ns) => low(ns));
    expect(inLow.length).toBeGreaterThan(0);
    expect(inLow.length).toBeLessThan(namespaces.length);
    gate.ranges = LOW;
    for (const ns of namespaces) gate.admit(ns);
    const parents = new InProcessSource<Obj>(
      'parents',
      namespaces.map((ns) => [`${ns}/p`, { metadata: { uid: `u-${ns}`, namespace: ns } }]),
    );
    const children = new InProcessSource<Obj>(
      'children',
      namespaces.map((ns) => [
        `${ns}/c`,
        {
          metadata: {
            uid: `c-${ns}`,
            namespace: ns,
            ownerReferences: [{ kind: 'Parent', name: 'p', uid: `u-${ns}`, controller: true }],
          },
        },
      ]),
    );
    const seen: string[] = [];
    const loop = new ReconcileLoop<Obj, string, { children: Obj }>({
      source: parents,
      keyMap: (_o, key) => key,
      secondary: { children: { source: children, owner: { kind: 'Parent' } } },
      shard: { gate, field: 'namespace' },
      reconcile: async (key, ctx) => {
        if (ctx.owned('children').size === 1) seen.push(key);
      },
    });
    await loop.start();
    await settle();
    expect([...loop.store.keys()].sort()).toEqual(inLow.map((ns) => `${ns}/p`).sort());
    expect([...loop.stores.children.keys()].sort()).toEqual(inLow.map((ns) => `${ns}/c`).sort());
    expect([...new Set(seen)].sort()).toEqual(inLow.map((ns) => `${ns}/p`).sort());
    await loop.stop();
  });

  it('[loop: Sharded source trusts the server filter] an upsert is hashed here unless a listing applied since the last ranges change showed the source filtering these ranges on the server: checked during a reshard, not per event once settled', () => {
    let current: readonly ShardRange[] = LOW;
    const followers: RangesFollower[] = [];
    // The inner source as a reflector reports itself; its reshard takes the ranges at once and says
    // 'server' throughout, so only the wrapper's own bookkeeping can tell a reshard is pending.
    let theirs: readonly ShardRange[] = [];
    let filter: 'server' | 'client' | 'unverified' = 'server';
    const inner = Object.assign(new InProcessSource<Obj>('parents'), {
      reshard: (ranges: readonly ShardRange[]) => void (theirs = ranges),
      health: (): SourceHealth => ({ shard: { field: 'uid', filter, ranges: theirs } }) as unknown as SourceHealth,
    });
    const applied: SourceEvent<Obj>[] = [];
    let hashed = 0;
    const value = primaryShardValue('uid');
    const sharded = new ShardedSource<Obj, string>({
      source: inner,
      writer: { apply: (event) => (applied.push(event), new Set<string>()) },
      has: () => false,
      valueOf: (object) => (hashed++, value(object)),
      reshard: 'uid',
      ranges: {
        get ranges() {
          return current;
        },
        follow: (f) => void followers.push(f),
      },
      onReleased: () => {},
      logger: silentLogger,
    });
    expect(theirs).toEqual(LOW); // resharded at construction
    const keys = Array.from({ length: 12 }, (_, i) => `p${i}`);
    const object = (k: string): Obj => ({ metadata: { uid: uidOf(k) } });
    const lowKeys = keys.filter((k) => low(uidOf(k)));
    const highKeys = keys.filter((k) => !low(uidOf(k)));
    const upserts = (ks: readonly string[]) => {
      applied.length = 0;
      hashed = 0;
      for (const k of ks) sharded.writer.apply({ type: 'upsert', key: k, object: object(k) });
      return applied.filter((e) => e.type === 'upsert').map((e) => e.key);
    };
    const listing = () => sharded.writer.apply({ type: 'replace', objects: new Map(keys.map((k) => [k, object(k)])) });

    // Before a listing: every upsert is hashed, those outside the ranges refused.
    expect(upserts(keys)).toEqual(lowKeys);
    expect(hashed).toBe(keys.length);
    // A listing with the source filtering LOW on the server: upserts pass unhashed.
    listing();
    expect(upserts(lowKeys)).toEqual(lowKeys);
    expect(hashed).toBe(0);
    const checkedBefore = sharded.checked;

    // The ranges move (a reshard pending): the source says 'server' with the new ranges at once, yet
    // an old watch's frame outside them is still hashed and refused until a listing is applied.
    current = HIGH;
    followers[0]!.rangesChanged(HIGH, true);
    expect(theirs).toEqual(HIGH);
    expect(upserts(lowKeys)).toEqual([]);
    expect(hashed).toBe(lowKeys.length);
    expect(sharded.checked).toBe(checkedBefore + lowKeys.length);
    listing();
    expect(upserts(highKeys)).toEqual(highKeys);
    expect(hashed).toBe(0);

    // A listing the server did not filter (the fallback): every upsert is hashed again.
    filter = 'client';
    listing();
    expect(upserts(keys)).toEqual(highKeys);
    expect(hashed).toBe(keys.length);
  });

  it('[loop: Sharded sources follow the ranges] gains(before, after) is true exactly when after holds a hash before does not', () => {
    const r = (start: string, end: string): ShardRange => ({ start, end });
    const a = '0x1000000000000000';
    const b = '0x2000000000000000';
    const c = '0x3000000000000000';
    expect(gains([], LOW)).toBe(true);
    expect(gains(LOW, [])).toBe(false);
    expect(gains(LOW, LOW)).toBe(false);
    expect(gains(LOW, HIGH)).toBe(true);
    expect(gains([r(a, c)], [r(a, b)])).toBe(false);
    expect(gains([r(a, b), r(b, c)], [r(a, c)])).toBe(false);
    expect(gains([r(a, b)], [r(a, c)])).toBe(true);
    expect(gains([r(b, c)], [r(a, c)])).toBe(true);
    expect(gains([r(a, b), r(MID, '0x10000000000000000')], [r(a, c)])).toBe(true);
  });
});
