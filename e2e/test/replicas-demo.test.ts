import { randomBytes } from 'node:crypto';
import { CoreV1Api, CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplicas, type ReplicasReport } from '../../examples/pool-tracker/src/replicas.js';
import { get } from '../../examples/pool-tracker/test/helpers.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';
import { eventually } from '../src/index.js';

// Issue 14's main job against the real kube-apiserver: `./dev demo --replicas 3 --metrics-port P`
// with a kubeconfig runs `runReplicas` exactly as here. Three in-process replicas elect a leader on a
// real coordination.k8s.io/v1 Lease, every replica lists and watches, only the leader reconciles;
// the leader is killed without a release and a standby takes over once the Lease expires; /metrics
// of each replica has controller-runtime's names. Short timings (3 s / 2 s / 0.5 s) keep it quick.

const availability = e2eAvailability();

describe.skipIf(!availability.run)('--replicas against the real kube-apiserver', () => {
  const env = useE2eEnvironment(availability);
  const ns = `e2e-replicas-${randomBytes(3).toString('hex')}`;
  let core: CoreV1Api;
  let leases: CoordinationV1Api;

  beforeAll(async () => {
    const kc = new KubeConfig();
    kc.loadFromString(env().endpoint.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    leases = kc.makeApiClient(CoordinationV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    for (const [name, pool] of [
      ['engine-0', 'engines'],
      ['engine-1', 'engines'],
      ['trainer-0', 'trainers'],
    ] as const) {
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name, labels: { pool } },
          spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        },
      });
    }
  });

  afterAll(async () => {
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it("[demo: --replicas] on a real cluster: one leader reconciles, standbys stay ready, a killed leader is replaced after the Lease expires, /metrics counts the leader's reconciles", async () => {
    const out: string[] = [];
    let urls: string[] = [];
    let metricsWhileLeading: string | undefined;
    let standbyReady: number | undefined;
    const stop = new AbortController();
    const running: Promise<ReplicasReport> = runReplicas({
      replicas: 3,
      kubeconfigYaml: env().endpoint.kubeconfig,
      namespace: ns,
      selector: 'pool',
      timings: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 },
      metricsPort: 0,
      killAfterMs: 3_000,
      signal: stop.signal,
      print: (line) => out.push(line),
      onListening: (u) => (urls = u),
    });
    try {
      await eventually(
        'replica-0 reconciling both pools',
        () => ['engines', 'trainers'].every((p) => out.some((l) => l.startsWith(`[replica-0] pool ${ns}/${p}`))),
        () => out,
        60_000,
      );
      metricsWhileLeading = (await get(`${urls[0]}/metrics`)).body;
      standbyReady = (await get(`${urls[1]}/readyz`)).status;
      await eventually(
        'a standby taking over and re-driving both pools',
        () => {
          const taker = out.find((l) => /^\[replica-[12]\] started leading/.test(l))?.slice(0, 11);
          return (
            taker !== undefined && ['engines', 'trainers'].every((p) => out.some((l) => l.startsWith(`${taker} pool ${ns}/${p}`)))
          );
        },
        () => out,
        60_000,
      );
    } finally {
      stop.abort();
    }
    const report = await running;

    expect(metricsWhileLeading).toMatch(
      /^controller_runtime_reconcile_total\{controller="pool-tracker",result="success"\} [1-9]\d*$/m,
    );
    expect(metricsWhileLeading).toMatch(/^workqueue_adds_total\{.*name="pool-tracker".*\} [1-9]\d*$/m);
    expect(standbyReady).toBe(200); // a synced standby is ready
    expect(report.killed).toBe('replica-0');
    const terms = report.leaders.map((id) => id.split('_')[1]!);
    expect(terms[0]).toBe('replica-0');
    expect(terms[1]).not.toBe('replica-0');
    // A replica that never led never reconciled.
    for (const [name, pools] of Object.entries(report.reconciles)) if (!terms.includes(name)) expect(pools).toEqual([]);
    // The graceful end released the real Lease for the next leader.
    const lease = await leases.readNamespacedLease({ name: 'pool-tracker', namespace: ns });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
    expect(lease.spec?.leaseTransitions).toBe(terms.length - 1);
  }, 120_000);
});
