import { InProcessSource, ManualClock, ReconcileLoop, TerminalError, type SourceEvent } from '@reconcile-loop/loop';
import { Registry } from 'prom-client';
import { controllerMetrics } from '../src/index.js';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { metricsHarness, thing, metricValue, type Thing } from './harness.js';

/** Stops with no grace on the manual clock (the grace timer runs on it). */
async function stopNow(
  loop: { stop(o: { graceMs: number }): Promise<unknown> },
  clock: { advanceAsync(ms: number): Promise<unknown> },
) {
  const stopping = loop.stop({ graceMs: 1 });
  await settle();
  await clock.advanceAsync(1);
  await stopping;
}

const C = { controller: 'thing-controller' };
const WQ = { name: 'thing-controller', controller: 'thing-controller' };

describe('reconcile metrics from a running loop', () => {
  it('[metrics: Reconcile results] success, error, requeue (0 ms), requeue_after and terminal are counted as controller-runtime counts them', async () => {
    const script: Array<() => unknown> = [
      () => undefined, // success
      () => {
        throw new Error('flaky'); // error, retried after 100 ms (a retry: non-zero delay)
      },
      () => ({ requeueAfterMs: 0 }), // requeue: rate-limited like Requeue: true, re-run after 5 ms (a retry: non-zero delay)
      () => ({ requeueAfterMs: 5_000 }), // requeue_after (a retry: non-zero delay)
      () => {
        throw new TerminalError('bad spec'); // error + terminal, not retried
      },
    ];
    const { loop, clock, registry } = metricsHarness({
      body: () => script.shift()?.() as undefined,
      retry: { backoff: { initialMs: 100, maxMs: 1_000_000 } },
    });
    await loop.start();
    await settle();
    loop.enqueue('ns/a');
    await settle();
    await clock.advanceAsync(100);
    await settle();
    await clock.advanceAsync(5);
    await settle();
    await clock.advanceAsync(5_000);
    await settle();
    expect(script).toHaveLength(0);
    const total = (result: string) => metricValue(registry, 'controller_runtime_reconcile_total', { ...C, result });
    expect(await total('success')).toBe(1);
    expect(await total('error')).toBe(2);
    expect(await total('requeue')).toBe(1);
    expect(await total('requeue_after')).toBe(1);
    expect(await metricValue(registry, 'controller_runtime_reconcile_errors_total', C)).toBe(2);
    expect(await metricValue(registry, 'controller_runtime_terminal_reconcile_errors_total', C)).toBe(1);
    expect(await metricValue(registry, 'controller_runtime_reconcile_time_seconds_count', C)).toBe(5);
    expect(await metricValue(registry, 'workqueue_retries_total', WQ)).toBe(3);
    // Adds: the initial listing, enqueue(), the retry, the 0 ms requeue, the 5 s requeue.
    expect(await metricValue(registry, 'workqueue_adds_total', WQ)).toBe(5);
    expect(await metricValue(registry, 'workqueue_work_duration_seconds_count', WQ)).toBe(5);
    // The loop's own counters agree with the exported ones.
    expect(loop.health().reconciles).toMatchObject({ succeeded: 1, failed: 1, terminal: 1, requeued: 2 });
    await loop.stop();
  });

  it('[metrics: Queue priorities] a FIFO queue (queue.priority false) reports its depth and oldest wait under priority ""', async () => {
    const { loop, clock, registry } = metricsHarness({
      body: () => new Promise<void>((resolve) => clock.setTimeout(resolve, 300)),
      things: [thing('a'), thing('b')],
      queue: { priority: false },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(100);
    expect(await metricValue(registry, 'workqueue_depth', { ...WQ, priority: '' })).toBe(1);
    expect(await metricValue(registry, 'workqueue_depth', { ...WQ, priority: '-100' })).toBeUndefined();
    expect(await metricValue(registry, 'reconcile_loop_queue_oldest_item_seconds', { ...C, priority: '' })).toBeCloseTo(0.1);
    await clock.advanceAsync(1_000);
    await settle();
    await loop.stop();
  });

  it('[metrics: Reconcile time] durations come from the loop clock: a 300 ms reconcile lands in the 0.3 bucket, queue time in the workqueue histogram', async () => {
    const { loop, clock, registry } = metricsHarness({
      body: () => new Promise<void>((resolve) => clock.setTimeout(resolve, 300)),
      things: [thing('a'), thing('b')],
    });
    await loop.start();
    await settle();
    // a runs; b waits in the queue (one worker): the gauges see it mid-flight.
    expect(await metricValue(registry, 'controller_runtime_active_workers', C)).toBe(1);
    expect(await metricValue(registry, 'controller_runtime_max_concurrent_reconciles', C)).toBe(1);
    // b was queued by the listing: controller-runtime's LowPriority (-100); it has waited 0 s so far.
    expect(await metricValue(registry, 'workqueue_depth', { ...WQ, priority: '-100' })).toBe(1);
    expect(await metricValue(registry, 'workqueue_depth', { ...WQ, priority: '0' })).toBe(0);
    await clock.advanceAsync(200);
    expect(await metricValue(registry, 'reconcile_loop_queue_oldest_item_seconds', { ...C, priority: '-100' })).toBeCloseTo(0.2);
    expect(await metricValue(registry, 'reconcile_loop_queue_oldest_item_seconds', { ...C, priority: '0' })).toBe(0);
    expect(await metricValue(registry, 'workqueue_unfinished_work_seconds', WQ)).toBeCloseTo(0.2);
    expect(await metricValue(registry, 'workqueue_longest_running_processor_seconds', WQ)).toBeCloseTo(0.2);
    await clock.advanceAsync(100);
    await settle();
    await clock.advanceAsync(300);
    await settle();
    const bucket = (le: string) => metricValue(registry, 'controller_runtime_reconcile_time_seconds_bucket', { ...C, le });
    expect(await bucket('0.25')).toBe(0);
    expect(await bucket('0.3')).toBe(2);
    expect(await metricValue(registry, 'controller_runtime_reconcile_time_seconds_sum', C)).toBeCloseTo(0.6);
    // b was queued at 0 and handed out at 300 ms: queue time 0.3 s, in the le=1 bucket and not in le=0.1.
    const queued = (le: string) => metricValue(registry, 'workqueue_queue_duration_seconds_bucket', { ...WQ, le });
    expect(await queued('0.1')).toBe(1); // a: handed out at once
    expect(await queued('1')).toBe(2);
    expect(await metricValue(registry, 'controller_runtime_active_workers', C)).toBe(0);
    expect(await metricValue(registry, 'workqueue_unfinished_work_seconds', WQ)).toBe(0);
    await loop.stop();
  });

  it('[metrics: Reconcile time] a timed-out reconcile counts as an error and a controller_runtime_reconcile_timeouts_total', async () => {
    const { loop, clock, registry } = metricsHarness({
      body: () => new Promise<void>(() => {}),
      controller: { reconcileTimeoutMs: 1_000 },
      retry: { backoff: { initialMs: 60_000, maxMs: 1_000_000 } },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(1_000);
    await settle();
    expect(await metricValue(registry, 'controller_runtime_reconcile_timeouts_total', C)).toBe(1);
    expect(await metricValue(registry, 'controller_runtime_reconcile_total', { ...C, result: 'error' })).toBe(1);
    // The hung call still holds its key but its worker moved on: not an active worker.
    expect(await metricValue(registry, 'controller_runtime_active_workers', C)).toBe(0);
    expect(await metricValue(registry, 'workqueue_longest_running_processor_seconds', WQ)).toBe(1);
    await stopNow(loop, clock);
  });

  it('[metrics: Dead-letter] a key that exhausts its budget shows in reconcile_loop_dead_lettered_keys; a stop-ended call is not counted', async () => {
    let calls = 0;
    const { loop, clock, registry, source } = metricsHarness({
      body: () => {
        calls += 1;
        throw new Error('always');
      },
      retry: { budget: { delaysMs: [100] } },
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(100);
    await settle();
    expect(calls).toBe(2);
    expect(await metricValue(registry, 'reconcile_loop_dead_lettered_keys', C)).toBe(1);
    expect(await metricValue(registry, 'workqueue_retries_total', WQ)).toBe(1);
    // A new generation releases it.
    source.upsert(...thing('a', 2));
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_dead_lettered_keys', C)).toBe(0);
    expect(await metricValue(registry, 'controller_runtime_reconcile_total', { ...C, result: 'error' })).toBe(3);
    await loop.stop();
  });

  it('[metrics: Read your writes] a parent held back by a write the cache has not observed shows in reconcile_loop_expectations_pending_keys, its wait in reconcile_loop_expectations_oldest_seconds', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const pods = new InProcessSource<Thing>('pods');
    const loop = new ReconcileLoop<Thing, string, { pods: Thing }>({
      source: new InProcessSource<Thing>('things', [thing('a')]),
      keyMap: (_, key) => key,
      secondary: { pods: { source: pods, keyMap: (pod) => `ns/${pod.metadata.name.split('-')[0]}` } },
      clock,
      observer: controllerMetrics<string>({ registry }),
      controller: { name: 'thing-controller' },
      sources: { resyncPeriodMs: 0 },
      reconcile: (_key, ctx) => ctx.expect('pods').creations('ns/a-0'), // created; not in the pod cache yet
    });
    await loop.start();
    await settle();
    await clock.advanceAsync(3_000);
    expect(await metricValue(registry, 'reconcile_loop_expectations_pending_keys', C)).toBe(1);
    expect(await metricValue(registry, 'reconcile_loop_expectations_oldest_seconds', C)).toBe(3);
    pods.upsert(...thing('a-0')); // the cache observes it
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_expectations_pending_keys', C)).toBe(0);
    expect(await metricValue(registry, 'reconcile_loop_expectations_oldest_seconds', C)).toBe(0);
    await stopNow(loop, clock);
  });

  it('[metrics: Stopped not counted] a reconcile ended by stop() is neither an error nor a duration sample', async () => {
    let ended = 0;
    const { loop, registry, clock } = metricsHarness({
      body: (_, ctx) =>
        new Promise<void>((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))).finally(
          () => (ended += 1),
        ),
    });
    await loop.start();
    await settle();
    await stopNow(loop, clock);
    expect(ended).toBe(1); // the call did end (rejected with the stop's reason)
    await settle();
    expect(await metricValue(registry, 'controller_runtime_reconcile_total', { ...C, result: 'error' })).toBe(0);
    expect(await metricValue(registry, 'controller_runtime_reconcile_time_seconds_count', C)).toBe(0);
  });
});

describe('source metrics', () => {
  it('[metrics: Source series] objects cached, seconds since the last frame, and relists by cause / watch reopens read structurally from a source with stats', async () => {
    const inner = new InProcessSource<Thing>('things', [thing('a'), thing('b'), thing('c')]);
    const stats = { lists: 4, relists: 3, healRelists: 1, watches: 5, bookmarks: 'not a number' };
    // A reflector-shaped source: its own `stats`, read without importing the reflector.
    const source = {
      name: 'things',
      stats,
      open: (signal: AbortSignal): AsyncIterable<SourceEvent<Thing>> => inner.open(signal),
    };
    const { loop, clock, registry } = metricsHarness({ body: () => undefined, source });
    await loop.start();
    await settle();
    const S = { ...C, source: 'things' };
    expect(await metricValue(registry, 'reconcile_loop_objects_cached', S)).toBe(3);
    expect(await metricValue(registry, 'reconcile_loop_quarantined_objects', S)).toBe(0);
    await clock.advanceAsync(7_000);
    expect(await metricValue(registry, 'reconcile_loop_seconds_since_last_watch_frame', S)).toBe(7);
    inner.delete('ns/c');
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_objects_cached', S)).toBe(2);
    expect(await metricValue(registry, 'reconcile_loop_seconds_since_last_watch_frame', S)).toBe(0);
    expect(await metricValue(registry, 'reconcile_loop_relists_total', { ...S, cause: 'heal' })).toBe(1);
    expect(await metricValue(registry, 'reconcile_loop_relists_total', { ...S, cause: 'rejected' })).toBe(2);
    expect(await metricValue(registry, 'reconcile_loop_watch_reopens_total', S)).toBe(4);
    expect(await metricValue(registry, 'reconcile_loop_source_reopens_total', S)).toBe(0);
    stats.relists = 4; // the counter follows the source's own count at the next scrape
    expect(await metricValue(registry, 'reconcile_loop_relists_total', { ...S, cause: 'rejected' })).toBe(3);
    await loop.stop();
  });

  it('[metrics: Source series] a source without stats gets no relist or watch series, and the stream reopen counter counts the loop’s reopens', async () => {
    const { loop, registry } = metricsHarness({ body: () => undefined });
    await loop.start();
    await settle();
    expect(await metricValue(registry, 'reconcile_loop_relists_total', { ...C, source: 'things' })).toBeUndefined();
    expect(await metricValue(registry, 'reconcile_loop_watch_reopens_total', { ...C, source: 'things' })).toBeUndefined();
    expect(await metricValue(registry, 'reconcile_loop_source_reopens_total', { ...C, source: 'things' })).toBe(0);
    await loop.stop();
  });
});

describe('observer safety', () => {
  it('[metrics: Hooks never change the loop] a throwing observer hook is logged and the loop keeps reconciling', async () => {
    const logger = recordingLogger();
    const seen: string[] = [];
    const { loop, source } = metricsHarness({
      body: (key) => void seen.push(key),
      logger,
      observer: {
        onReconcileEnd: () => {
          throw new Error('observer bug');
        },
        queue: {
          onAdd: () => {
            throw new Error('queue hook bug');
          },
        },
      },
    });
    await loop.start();
    await settle();
    source.upsert(...thing('b'));
    await settle();
    expect(seen).toEqual(['ns/a', 'ns/b']);
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.message)).toEqual(
      expect.arrayContaining(['reconcile loop observer hook failed; ignored', 'work queue hook failed']),
    );
    await loop.stop();
  });
});
