import type { ApiServer } from '@reconcile-loop/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { conforms, pairAgainst, report, runConformance, type Pair } from '../../packages/testing/conformance/runner.js';
import { accessFromKubeconfig } from '../../packages/testing/conformance/target.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';
import { readVersions } from '../src/index.js';

// The raw-API conformance suite of @reconcile-loop/testing: the same requests against the embedded
// apiserver and kube-apiserver (watch cache on, and --watch-cache=false when this layer provisioned
// both), SAME or DIFF per case; a DIFF must be a marked known difference with its reason. The
// report is printed whatever the outcome, so the known differences stay visible. It runs against the
// Kubernetes line RECONCILE_LOOP_K8S picks (CI: each pinned line) and says which in its report.

const availability = e2eAvailability();
const versions = readVersions();
const env = useE2eEnvironment(availability);
const started: ApiServer[] = [];
afterAll(async () => {
  await Promise.allSettled(started.map((s) => s.close()));
});

describe.skipIf(!availability.run)(`conformance: embedded apiserver vs kube-apiserver ${versions.kubernetes} (raw API)`, () => {
  it('[testing: conformance] every case is SAME on both personalities except the marked known differences', async () => {
    const e = env();
    const real =
      e.controlPlane === undefined
        ? [{ personality: 'cached' as const, kubeconfig: e.endpoint.kubeconfig }]
        : [
            { personality: 'cached' as const, kubeconfig: e.controlPlane.cachedEndpoint.kubeconfig },
            { personality: 'uncached' as const, kubeconfig: e.controlPlane.uncachedEndpoint.kubeconfig },
          ];
    const pairs: Pair[] = [];
    for (const r of real) {
      const { pair, server } = await pairAgainst(r.personality, accessFromKubeconfig(r.kubeconfig));
      started.push(server);
      pairs.push(pair);
    }
    const results = await runConformance(pairs);
    const against = e.mode === 'external' ? 'an external cluster' : `kube-apiserver ${versions.kubernetes}`;
    process.stdout.write(`\n[conformance against ${against}]\n${report(results)}\n`);
    expect(results.length).toBeGreaterThanOrEqual(27 * pairs.length);
    expect(conforms(results), report(results)).toBe(true);
  }, 300_000);
});
