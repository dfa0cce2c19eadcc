/**
 * Cache cost and the memory budget over real loopback HTTP against the embedded apiserver: the
 * reflector's `health().cache` counts what it handed on (objects, estimated bytes as a running
 * sum), and with `memoryBudgetBytes` it stops handing on new objects once the budget is full,
 * reports them as refused with a reason, and logs the condition once, instead of growing.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { recordingLogger } from '@reconcile-loop/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { estimateBytes } from '../src/cache-cost.js';
import { podReflector, type Reflector } from '../src/index.js';
import { fastClock, kubeConfigFor, runCleanups, server, tapOf, WAIT_MS, type Tap } from './embedded-helpers.js';

const NS = 'pool-a';
const SCOPE = { namespace: NS, labelSelector: 'pool' };

afterEach(runCleanups);

/** The invariant: the running sum equals the estimate recomputed over what the consumer's store holds. */
function expectLedgerMatchesStore(reflector: Reflector<Pod>, tap: Tap<Pod>): void {
  const cache = reflector.health().cache!;
  const held = [...tap.store.snapshot()];
  expect(cache.objects).toBe(held.length);
  // Each entry: its view, its key string (16 + length rounded to 8) and the store's 40-byte slot.
  const recomputed = held.reduce((sum, [key, pod]) => sum + estimateBytes(pod) + 40 + 16 + ((key.length + 7) & ~7), 0);
  expect(cache.bytesEstimate).toBe(recomputed);
}

describe('reflector cache cost and memory budget (embedded apiserver)', () => {
  it('[k8s_reflector: Cache cost] health().cache counts the objects handed on and their estimated bytes as a running sum that equals a recount after a listing, creates, updates and deletes', async () => {
    const s = await server();
    s.seedPods(6, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const reflector = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    expect(reflector.health().cache).toEqual({
      objects: 0,
      bytesEstimate: 0,
      budgetBytes: undefined,
      refused: 0,
      reason: undefined,
    });
    const { tap } = tapOf<Pod>(reflector);
    await tap.next('the listing');
    expectLedgerMatchesStore(reflector, tap);
    const listed = reflector.health().cache!.bytesEstimate;
    expect(listed).toBeGreaterThan(6 * 200);

    await s.waitForWatches(1, WAIT_MS);
    s.createPod({ metadata: { name: 'engine-9', namespace: NS, labels: { pool: 'engines' } } });
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-9', 'the create');
    expect(reflector.health().cache!.bytesEstimate).toBeGreaterThan(listed);
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-0', 'the bind');
    expectLedgerMatchesStore(reflector, tap);
    s.deletePod(NS, 'engine-9', { gracePeriodSeconds: 0 });
    s.deletePod(NS, 'engine-1', { gracePeriodSeconds: 0 });
    await tap.until((e) => e.type === 'delete' && e.key === 'pool-a/engine-1', 'the deletes');
    expectLedgerMatchesStore(reflector, tap);
    expect(reflector.health().cache!.refused).toBe(0);
  });

  it('[k8s_reflector: Memory budget] past memoryBudgetBytes new objects are not cached: the store stops growing, health().cache reports them refused with a reason, a warning and one error are logged; once the refused objects are deleted on the server the cache is complete again', async () => {
    const s = await server();
    s.seedPods(4, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    // Measure one pod's cost with an unbudgeted reflector, then allow room for four and a half.
    const probe = podReflector({ kubeConfig: kubeConfigFor(s), ...SCOPE, clock: fastClock, random: () => 0 });
    const probeTap = tapOf<Pod>(probe).tap;
    await probeTap.next('the probe listing');
    const perPod = probe.health().cache!.bytesEstimate / 4;
    const budget = Math.floor(perPod * 4.5);

    const logger = recordingLogger();
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      ...SCOPE,
      memoryBudgetBytes: budget,
      logger,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<Pod>(reflector);
    await tap.next('the listing');
    expect(reflector.health().cache).toMatchObject({ objects: 4, budgetBytes: budget, refused: 0 });
    expect(logger.entries.filter((e) => e.level === 'warn' && /memory budget/.test(e.message))).toHaveLength(1);

    await s.waitForWatches(2, WAIT_MS);
    for (let i = 10; i < 16; i++) s.createPod({ metadata: { name: `engine-${i}`, namespace: NS, labels: { pool: 'engines' } } });
    // The last create is refused too: wait until every one of the six has been seen.
    await expect.poll(() => reflector.health().cache!.refused, { timeout: WAIT_MS }).toBe(6);
    const cache = reflector.health().cache!;
    expect(tap.store.size).toBe(4);
    expect(cache.objects).toBe(4);
    expect(cache.bytesEstimate).toBeLessThanOrEqual(budget);
    expect(cache.reason).toMatch(/memory budget of \d+ bytes full \(\d+ held\): 6 objects not cached/);
    expect(tap.events.filter((e) => e.type === 'upsert' && /engine-1\d$/.test(e.key))).toHaveLength(0);
    // An update of a cached object is still handed on: a stale object would be worse than a full budget.
    s.kubelet.bind(NS, 'engine-0', 'node-a');
    await tap.until((e) => e.type === 'upsert' && e.key === 'pool-a/engine-0', 'the bind of a cached pod');
    expect(logger.entries.filter((e) => e.level === 'error' && /memory budget full/.test(e.message))).toHaveLength(1);

    // Deleting a refused object on the server takes it out of the refused set; a relist re-admits up to the budget.
    for (let i = 10; i < 16; i++) s.deletePod(NS, `engine-${i}`, { gracePeriodSeconds: 0 });
    await expect.poll(() => reflector.health().cache!.refused, { timeout: WAIT_MS }).toBe(0);
    expect(reflector.health().cache!.reason).toBeUndefined();
    expect(logger.entries.some((e) => e.level === 'info' && /fits its memory budget again/.test(e.message))).toBe(true);
  });

  it('[k8s_reflector: Memory budget] a listing larger than the budget is cut at the budget: the replace carries only what fits, the rest is refused', async () => {
    const s = await server();
    s.seedPods(8, { namespace: NS, labels: { pool: 'engines' }, namePrefix: 'engine' });
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      ...SCOPE,
      memoryBudgetBytes: 2_000,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<Pod>(reflector);
    const listing = await tap.next('the listing');
    const cache = reflector.health().cache!;
    expect(listing.type === 'replace' ? listing.objects.size : -1).toBe(cache.objects);
    expect(cache.objects).toBeLessThan(8);
    expect(cache.objects + cache.refused).toBe(8);
    expect(cache.bytesEstimate).toBeLessThanOrEqual(2_000);
    expect(tap.store.size).toBe(cache.objects);
  });
});
