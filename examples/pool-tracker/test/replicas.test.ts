/**
 * `--replicas`: three in-process replicas against the embedded apiserver over real loopback HTTP,
 * electing a leader on a Lease the apiserver serves (coordination.k8s.io/v1, resourceVersion/409
 * semantics). Short lease timings (2 s / 1.5 s / 0.3 s); every wait is bounded and woken by output.
 */
import { within } from '@reconcile-loop/test-support';
import { cleanups, get } from './helpers.js';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_NAMESPACE, startFaultyCluster } from '../src/faults.js';
import { runReplicas } from '../src/replicas.js';

describe('--replicas: leader election on the embedded apiserver', () => {
  it('[demo: --replicas] one leader reconciles, the standbys stay synced and ready; the killed leader is replaced once its Lease expires and the new leader re-drives every pool', async () => {
    const cluster = await startFaultyCluster('none', 'pool');
    cleanups.push(() => cluster.server.close());
    const leases = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' }; // served by the embedded apiserver
    const out: string[] = [];
    let wake: () => void = () => {};
    const until = (what: string, test: () => boolean): Promise<void> =>
      within(
        new Promise<void>((resolve) => {
          const check = (): void => (test() ? resolve() : void (wake = check));
          check();
        }),
        what,
        60_000, // from the start: three replicas list, watch and elect; a loaded CI machine took 33 s
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; the replicas printed:\n${out.join('\n')}`);
      });
    const stop = new AbortController();
    let urls: string[] = [];
    const running = runReplicas({
      replicas: 3,
      kubeconfigYaml: cluster.server.kubeconfig(),
      namespace: CONTROLLER_NAMESPACE,
      selector: 'pool',
      timings: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 },
      metricsPort: 0,
      onListening: (u) => (urls = u),
      onSynced: () =>
        cluster.server.seedPods(1, { namespace: CONTROLLER_NAMESPACE, labels: { pool: 'evaluators' }, namePrefix: 'evaluator' }),
      killAfterMs: 1_000,
      signal: stop.signal,
      print: (line) => {
        out.push(line);
        wake();
      },
    });
    cleanups.push(async () => {
      stop.abort();
      await running.catch(() => {});
    });

    await until('the leader reconciling the new pool', () => out.some((l) => l.startsWith('[replica-0] pool ml/evaluators')));
    const standby = await get(`${urls[1]}/readyz?format=json`);
    expect(standby.status).toBe(200); // a synced standby is ready
    expect(JSON.parse(standby.body).checks).toContainEqual(
      expect.objectContaining({ name: 'leader', ok: true, reason: expect.stringContaining('standby') }),
    );
    expect(out.filter((l) => /^\[replica-[12]\] pool/.test(l))).toEqual([]);
    // /metrics beside the probes, with controller-runtime's names: the leader counted its reconciles, a standby none.
    const leaderMetrics = await get(`${urls[0]}/metrics`);
    expect(leaderMetrics.status).toBe(200);
    expect(leaderMetrics.body).toMatch(
      /^controller_runtime_reconcile_total\{controller="pool-tracker",result="success"\} [1-9]\d*$/m,
    );
    expect(leaderMetrics.body).toMatch(/^workqueue_depth\{.*name="pool-tracker".*\} \d+$/m);
    const standbyMetrics = await get(`${urls[1]}/metrics`);
    expect(standbyMetrics.body).toMatch(/^controller_runtime_reconcile_total\{controller="pool-tracker",result="success"\} 0$/m);

    // The first leader after the kill, whoever was killed (a loaded machine may have moved the
    // Lease before it), and what it printed from its start: it re-drives every pool.
    const takeover = (): { taker: string; lines: string[] } | undefined => {
      const kill = out.findIndex((l) => l.startsWith('killing '));
      if (kill < 0) return undefined;
      const killed = out[kill]!.split(' ')[1];
      const start = out.findIndex((l, i) => i > kill && / started leading /.test(l) && !l.startsWith(`[${killed}]`));
      if (start < 0) return undefined;
      const taker = out[start]!.slice(1, out[start]!.indexOf(']'));
      return { taker, lines: out.slice(start).filter((l) => l.startsWith(`[${taker}] pool `)) };
    };
    await until('a takeover re-driving every pool', () => {
      const t = takeover();
      return (
        t !== undefined && ['engines', 'trainers', 'evaluators'].every((p) => t.lines.some((l) => l.includes(` pool ml/${p}:`)))
      );
    });
    stop.abort();
    const report = await within(running, 'a graceful end', 10_000);
    // Leader terms in order; a loaded machine may miss a 1.5 s renew deadline, so a replica can lose
    // and re-take the Lease (the same identity: no transition) or hand over once more.
    const terms = report.leaders.map((id) => id.split('_')[1]!);
    expect(terms[0]).toBe('replica-0');
    expect(report.killed).toBeDefined();
    expect(terms.at(-1)).not.toBe(report.killed); // a killed replica cannot lead again
    // Each term re-drives every pool (a replica that led twice reconciled each pool twice).
    const poolsOf = (replica: string): string[] => [...new Set(report.reconciles[replica])].sort();
    expect(poolsOf(takeover()!.taker)).toEqual(['ml/engines', 'ml/evaluators', 'ml/trainers']);
    expect(poolsOf('replica-0')).toEqual(['ml/engines', 'ml/evaluators', 'ml/trainers']);
    // A replica that never led never reconciled.
    for (const [name, pools] of Object.entries(report.reconciles)) if (!terms.includes(name)) expect(pools).toEqual([]);
    const transitions = report.leaders.filter((id, i) => i > 0 && id !== report.leaders[i - 1]).length;
    // The graceful end released the Lease (no holder) for the next leader to take at once.
    const lease = cluster.server.getObject(leases, CONTROLLER_NAMESPACE, 'pool-tracker') as {
      spec?: { holderIdentity?: string; leaseTransitions?: number };
    };
    expect(lease.spec).toMatchObject({ holderIdentity: '', leaseTransitions: transitions });
  }, 90_000);
});
