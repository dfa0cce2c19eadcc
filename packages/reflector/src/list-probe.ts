/** The list-lag probe loop (what it measures: `list-lag.ts`). */
import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { sleep } from '@reconcile-loop/primitives';
import type { ReflectorCore } from './core.js';

/**
 * Probes every `intervalMs` on the reflector's clock until `signal` aborts: a LIST with `limit=1`
 * while a watch is open (a probe while listing would only measure the listing). Never rejects.
 */
export async function probeListLag<T extends KubernetesObjectView>(
  core: ReflectorCore<T>,
  intervalMs: number,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await sleep(core.clock, intervalMs, signal);
    } catch {
      return; // only the signal rejects sleep
    }
    if (!core.health().streaming) continue;
    try {
      const list = await core.client.list({ ...core.scope, limit: 1, signal });
      core.listLag.probed(list.resourceVersion, core.clock.now(), core.resourceVersion);
    } catch (error) {
      if (signal.aborted) return;
      core.logger.debug(core.fields({ err: error }), 'list lag probe failed (the stream is not affected)');
    }
  }
}
