import { KubeClient, type Transport } from '@reconcile-loop/kube-client';
import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SHUTDOWN_GRACE_MS, stopController } from '../demo/run.js';
import { createCellSetController } from '../src/controller.js';

/** Answers every write at once (an apiserver that accepts everything); records the paths. */
function acceptingTransport(paths: string[]): Transport {
  return async (request) => {
    paths.push(`${request.method} ${request.url.pathname}`);
    const body = JSON.stringify({ metadata: { name: 'e', resourceVersion: '1' } });
    return {
      status: request.method === 'POST' ? 201 : 200,
      header: () => undefined,
      body: (async function* () {
        yield body;
      })(),
      close: () => {},
    };
  };
}

describe('[loop: Shutdown budget] the flagship stops within its grace: the loop, then the Lease release, then the Events for the time left', () => {
  it('5,000 pending Events: stop() returns at the grace on the clock, the Lease released before the flush, ONE log line counts the dropped Events', async () => {
    const clock = new ManualClock(0);
    const paths: string[] = [];
    const client = new KubeClient({ server: 'https://k8s.test', transport: acceptingTransport(paths), clock });
    const logger = recordingLogger();
    const controller = createCellSetController({ client, namespace: 'default', clock, logger });
    const recorder = controller.events;
    for (let i = 0; i < 5_000; i++)
      recorder.event(
        { apiVersion: 'v1', kind: 'Pod', name: `web-${i}`, namespace: 'default' },
        {
          type: 'Normal',
          reason: 'SuccessfulCreate',
          action: 'CreatePod',
        },
      );
    await settle();
    const order: string[] = [];
    const close = recorder.close.bind(recorder);
    recorder.close = (options) => {
      order.push(`flush (${paths.length} Event writes so far)`);
      return close(options);
    };
    let released!: () => void;
    const lease = new Promise<void>((resolve) => (released = resolve));
    let done = false;
    const graceMs = 3_000;
    const stopping = stopController(controller, {
      graceMs,
      clock,
      beforeFlush: () => lease.then(() => void order.push('lease released')),
    }).then((report) => {
      done = true;
      return report;
    });
    await clock.advanceAsync(500); // the release takes 500 ms: the flush waits for it
    expect(order).toEqual([]);
    released();
    await settle();
    expect(order[0]).toBe('lease released');
    expect(order[1]).toMatch(/^flush/);
    await clock.advanceAsync(graceMs - 500 - 1);
    expect(done).toBe(false);
    await clock.advanceAsync(1);
    const report = await stopping;
    expect(done).toBe(true);
    expect(clock.now()).toBe(graceMs);
    expect(report).toEqual({ abandoned: [], abandonedSources: [] });
    // The recorder's queue holds 1,000 (client-go's maxQueuedEvents): the other 4,000 were refused
    // when recorded; every one of the 5,000 is accounted for.
    const { created, droppedAtDeadline, droppedQueueFull } = recorder.stats;
    expect(droppedQueueFull).toBeGreaterThan(3_900); // the one being written left the queue at once
    expect(created + droppedAtDeadline + droppedQueueFull).toBe(5_000);
    expect(droppedAtDeadline).toBeGreaterThan(950);
    const dropped = logger.entries.filter((e) => /pending events dropped/.test(e.message));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.fields['dropped']).toBe(droppedAtDeadline);
    expect(DEFAULT_SHUTDOWN_GRACE_MS).toBeLessThan(30_000);
  });

  it('a release that never settles costs the Events their time, never the budget', async () => {
    const clock = new ManualClock(0);
    const client = new KubeClient({ server: 'https://k8s.test', transport: acceptingTransport([]), clock });
    const controller = createCellSetController({ client, namespace: 'default', clock });
    for (let i = 0; i < 50; i++)
      controller.events.event({ name: `web-${i}`, namespace: 'default' }, { type: 'Normal', reason: 'R', action: 'A' });
    let done = false;
    const stopping = stopController(controller, { graceMs: 1_000, clock, beforeFlush: () => new Promise(() => {}) }).then(
      () => (done = true),
    );
    await clock.advanceAsync(1_000);
    await stopping;
    expect(done).toBe(true);
    expect(controller.events.stats.droppedAtDeadline).toBeGreaterThan(0);
  });
});
