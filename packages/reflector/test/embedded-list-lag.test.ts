/**
 * The list-lag probe over real loopback HTTP against the embedded apiserver: with
 * `listLagProbeIntervalMs`, `health().listLag` reports the probe LIST's resourceVersion against
 * the stream's; a stalled watch falls behind (revisions > 0, `caughtUpAt` stays at an older probe)
 * and catches up once it flows again; without the option no probe is sent.
 */
import type { Pod } from '@reconcile-loop/k8s-types';
import { afterEach, describe, expect, it } from 'vitest';
import { podReflector } from '../src/index.js';
import { fastClock, kubeConfigFor, runCleanups, server, tapOf, WAIT_MS, within } from './embedded-helpers.js';

const NS = 'pool-a';

afterEach(runCleanups);

/** Polls `read` (every 10 ms, bounded by WAIT_MS) until `test` holds; returns that reading. */
async function until<V>(read: () => V, test: (value: V) => boolean, what: string): Promise<V> {
  return within(
    (async () => {
      for (;;) {
        const value = read();
        if (test(value)) return value;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })(),
    what,
    WAIT_MS,
  );
}

describe('reflector list lag (embedded apiserver)', () => {
  it('[k8s_reflector: List lag] a probe LIST every listLagProbeIntervalMs: caught up while the watch flows; a stalled watch reads revisions behind with caughtUpAt held at an older probe; flowing again it catches up', async () => {
    const s = await server();
    s.seedPods(3, { namespace: NS, namePrefix: 'engine' });
    // fastClock: 1,000 clock ms are 50 ms of real time, so a probe every 1,000 is one every 50 ms.
    const reflector = podReflector({
      kubeConfig: kubeConfigFor(s),
      namespace: NS,
      listLagProbeIntervalMs: 1_000,
      clock: fastClock,
      random: () => 0,
    });
    const { tap } = tapOf<Pod>(reflector);
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    const caughtUp = await until(
      () => reflector.health().listLag,
      (lag) => lag?.caughtUpAt !== undefined && lag.revisions === 0,
      'a probe the stream has caught up with',
    );
    expect(caughtUp!.listResourceVersion).toBe(String(s.revision));

    expect(s.stallWatches()).toBe(1);
    s.createPod({ metadata: { name: 'engine-8', namespace: NS } });
    s.createPod({ metadata: { name: 'engine-9', namespace: NS } });
    const behind = await until(
      () => reflector.health().listLag,
      (lag) => lag?.revisions === 2,
      'the probe to see two writes the stalled watch did not deliver',
    );
    expect(behind!.caughtUpAt).toBeLessThan(behind!.probedAt);
    expect(behind!.listResourceVersion).toBe(String(s.revision));

    s.unstallWatches();
    await tap.until((e) => e.type === 'upsert' && e.key === `${NS}/engine-9`, 'the held-back create');
    const again = await until(
      () => reflector.health().listLag,
      (lag) => lag?.revisions === 0 && lag.caughtUpAt !== undefined && lag.caughtUpAt >= behind!.probedAt,
      'the stream to catch up with a probe taken while it was behind',
    );
    expect(again!.streamResourceVersion).toBe(String(s.revision));
  });

  it('[k8s_reflector: List lag] without listLagProbeIntervalMs there is no probe: one LIST, no listLag', async () => {
    const s = await server();
    s.seedPods(2, { namespace: NS, namePrefix: 'engine' });
    const reflector = podReflector({ kubeConfig: kubeConfigFor(s), namespace: NS, clock: fastClock, random: () => 0 });
    const { tap } = tapOf<Pod>(reflector);
    await tap.next('the listing');
    await s.waitForWatches(1, WAIT_MS);
    // Ten would-be probe intervals of real time.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reflector.health().listLag).toBeUndefined();
    expect(reflector.stats.lists).toBe(1);
  });
});
