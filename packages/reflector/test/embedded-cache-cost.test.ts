/**
 * Cache cost and the memory budget over real loopback HTTP against the embedded apiserver, as a
 * loop wires them: the reflector's events reach the store through object-store's `CacheMeter`,
 * which counts what the store holds (objects, estimated bytes as a running sum) and, with a budget,
 * stops the store growing once it is full, reports the objects refused with a reason, and logs the
 * condition once.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { estimateBytes } from '@reconcile-loop/object-store';
import { podReflector } from '../src/index.js';
import { fastClock, kubeConfigFor, runCleanups, server, tapOf, WAIT_MS, type Tap } from './embedded-helpers.js';

const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };

afterEach(runCleanups);

/** The invariant: the running sum equals the estimate recomputed over what the store holds. */
function expectSumMatchesStore(tap: Tap<Pod>): void {
  const cache = tap.meter.cost();
  const held = [...tap.store.snapshot()];
  expect(cache.objects).toBe(held.length);
  // Each entry: its view, its key string (16 + length rounded to 8) and the store's two map entries (74 B).
  const recomputed = held.reduce((sum, [key, pod]) => sum + estimateBytes(pod) + 74 + 16 + ((key.length + 7) & ~7), 0);
  expect(cache.bytesEstimate).toBe(recomputed);
}

describe('cache cost and memory budget of a reflector-fed store (embedded apiserver)', () => {
  it('[k8s_reflector: Cache cost] the meter in front of the store counts the objects it holds and their estimated bytes as a running sum that equals a recount after a listing, creates, updates and deletes', async () => {
    const s = await server();
    s.seedPods(6, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const reflector = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    const { tap } = tapOf<Pod>(reflector);
    expect(tap.meter.cost()).toEqual({
      objects: 0,
      bytesEstimate: 0,
      budgetBytes: undefined,
      refused: 0,
      reason: undefined,
    });
    await tap.next('the listing');
    expectSumMatchesStore(tap);
    const listed = tap.meter.cost().bytesEstimate;
    expect(listed).toBeGreaterThan(6 * 200);

    await s.waitForWatches(1, WAIT_MS);
    s.createPod({ metadata: { name: 'engine-9', namespace: NS, labels: { pool: 'engines' } } });
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-9', 'the create');
    expect(tap.meter.cost().bytesEstimate).toBeGreaterThan(listed);
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-0', 'the bind');
    expectSumMatchesStore(tap);
    s.deletePod(NS, 'engine-9', { gracePeriodSeconds: 0 });
    s.deletePod(NS, 'engine-1', { gracePeriodSeconds: 0 });
    await tap.until((e) => e.type === 'delete' && e.key === 'pool-a/engine-1', 'the deletes');
    expectSumMatchesStore(tap);
    expect(tap.meter.cost().refused).toBe(0);
  });

  it('[k8s_reflector: Memory budget] past the budget new objects are not cached: the store stops growing, the meter reports them refused with a reason, a warning and one error are logged; once the refused objects are deleted on the server the cache is complete again', async () => {
    const s = await server();
    s.seedPods(4, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    // Measure one pod's cost with an unbudgeted reflector, then allow room for four and a half.
    const probe = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    const probeTap = tapOf<Pod>(probe).tap;
    await probeTap.next('the probe listing');
    const perPod = probeTap.meter.cost().bytesEstimate / 4;
    const budget = Math.floor(perPod * 4.5);

    const logger = recordingLogger();
    const reflector = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    const { tap } = tapOf<Pod>(reflector, { budgetBytes: budget, logger });
    await tap.next('the listing');
    expect(tap.meter.cost()).toMatchObject({ objects: 4, budgetBytes: budget, refused: 0 });
    expect(logger.entries.filter((e) => e.level === 'warn' && /memory budget/.test(e.message))).toHaveLength(1);

    await s.waitForWatches(2, WAIT_MS);
    for (let i = 10; i < 16; i++) s.createPod({ metadata: { name: `engine-${i}`, namespace: NS, labels: { pool: 'engines' } } });
    // The last create is refused too: wait until every one of the six has been seen.
    await expect.poll(() => tap.meter.cost().refused, { timeout: WAIT_MS }).toBe(6);
    const cache = tap.meter.cost();
    expect(tap.store.size).toBe(4);
    expect(cache.objects).toBe(4);
    expect(cache.bytesEstimate).toBeLessThanOrEqual(budget);
    expect(cache.reason).toMatch(/memory budget of \d+ bytes full \(\d+ held\): 6 objects not cached/);
    expect(tap.store.keys().filter((key) => /engine-1\d$/.test(key))).toHaveLength(0);
    // An update of a cached object is still handed on: a stale object would be worse than a full budget.
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-0', 'the bind of a cached pod');
    expect(logger.entries.filter((e) => e.level === 'error' && /memory budget full/.test(e.message))).toHaveLength(1);

    // Deleting a refused object on the server takes it out of the refused set; a relist re-admits up to the budget.
    for (let i = 10; i < 16; i++) s.deletePod(NS, `engine-${i}`, { gracePeriodSeconds: 0 });
    await expect.poll(() => tap.meter.cost().refused, { timeout: WAIT_MS }).toBe(0);
    expect(tap.meter.cost().reason).toBeUndefined();
    expect(logger.entries.some((e) => e.level === 'info' && /fits its memory budget again/.test(e.message))).toBe(true);
  });

  it('[k8s_reflector: Memory budget] a listing larger than the budget is cut at the budget: the store takes only what fits, the rest is refused', async () => {
    const s = await server();
    s.seedPods(8, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const reflector = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    const { tap } = tapOf<Pod>(reflector, { budgetBytes: 2_000 });
    const listing = await tap.next('the listing');
    const cache = tap.meter.cost();
    // The reflector hands on the whole listing; the meter cuts it before the store sees it.
    expect(listing.type === 'replace' ? listing.objects.size : -1).toBe(8);
    expect(cache.objects).toBeLessThan(8);
    expect(cache.objects + cache.refused).toBe(8);
    expect(cache.bytesEstimate).toBeLessThanOrEqual(2_000);
    expect(tap.store.size).toBe(cache.objects);
  });
});
