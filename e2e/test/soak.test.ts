import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';
import { runSoak } from '../scripts/soak-run.js';

// The short variant of `pnpm soak` (e2e/README.md, "Soak"): the same run with 40 actions in at
// most 40 s, one kill -9 and one SIGSTOP of the leader, then the settle and every invariant.

const availability = e2eAvailability();

describe.skipIf(!availability.run)('CellSet soak on the real kube-apiserver (short)', () => {
  const env = useE2eEnvironment(availability);

  it('[cellset: soak] two replicas, 40 random actions, the leader kill -9d and SIGSTOPped: after the settle no missing, extra or orphan pod, no set stuck, no duplicate create, no decision outside a term, no more Events than creates', async (ctx) => {
    requireControlPlane(ctx, env());
    const kc = new KubeConfig();
    kc.loadFromString(env().endpoint.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = `e2e-soak-${randomBytes(3).toString('hex')}`;
    const lines: string[] = [];
    const report = await runSoak({
      kubeconfig: env().endpoint.kubeconfig,
      namespace,
      createNamespace: async () => void (await core.createNamespace({ body: { metadata: { name: namespace } } })),
      start: 30,
      actions: 40,
      durationMs: 40_000,
      kills: 1,
      stops: 1,
      stopMs: 4_000,
      settleMs: 45_000,
      log: (line) => lines.push(line),
    });
    try {
      expect(report.violations, lines.join('\n')).toEqual([]);
      expect({ kills: report.kills, stops: report.stops }, lines.join('\n')).toEqual({ kills: 1, stops: 1 });
      expect(report.violations).toEqual([]);
      // Not vacuous: the run acted, killed and stopped a leader, and the controller created pods.
      expect(report.kills).toBe(1);
      expect(report.stops).toBe(1);
      expect(report.createdDecisions).toBeGreaterThan(0);
      expect(Object.values(report.actions).reduce((a, b) => a + b, 0)).toBeGreaterThan(10);
    } finally {
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    }
  }, 180_000);
});
