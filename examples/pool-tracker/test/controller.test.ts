/**
 * The long-running controller (README's example) against the embedded apiserver over real loopback
 * HTTP: a clean run and stop, and each broken cluster printing a clear error and exiting non-zero.
 * Every wait is bounded (`within`) and woken by the controller's own output.
 */
import { replaceEvent, type Source } from '@reconcile-loop/loop';
import { within } from '@reconcile-loop/test-support';
import { cleanups, get } from './helpers.js';
import { describe, expect, it } from 'vitest';
import { runController, type ControllerOptions } from '../src/controller.js';
import { CONTROLLER_NAMESPACE, startFaultyCluster, type Fault } from '../src/faults.js';
import type { PodView } from '../src/pod-view.js';

// A deadline per wait, not a speed claim. 5 s was too short under a fresh machine's CI (three cells
// and a control plane on two cores): the in-process sync alone took longer.
const WAIT_MS = 15_000;

/** Runs the controller on a (possibly broken) embedded cluster; output lines are collected. */
async function run(fault: Fault, options: Partial<ControllerOptions> = {}) {
  const cluster = await startFaultyCluster(fault, 'pool');
  cleanups.push(() => cluster.server.close());
  const out: string[] = [];
  const err: string[] = [];
  let wake: (() => void) | undefined;
  const abort = new AbortController();
  let probes: string | undefined;
  const exit = runController({
    kubeconfigYaml: cluster.server.kubeconfig(),
    namespace: CONTROLLER_NAMESPACE,
    selector: cluster.selector,
    healthPort: 0,
    onListening: (url) => (probes = url),
    signal: abort.signal,
    print: (line) => {
      out.push(line);
      wake?.();
    },
    printError: (line) => {
      err.push(line);
      wake?.();
    },
    ...(cluster.hangReconcile && { beforeReconcile: () => new Promise<void>(() => {}) }),
    ...options,
  });
  cleanups.push(async () => {
    abort.abort();
    await exit.catch(() => {});
  });
  /** Waits (bounded) until some output line matches. */
  const printed = async (pattern: RegExp): Promise<string> => {
    for (;;) {
      const line = [...out, ...err].find((l) => pattern.test(l));
      if (line !== undefined) return line;
      await within(new Promise<void>((resolve) => (wake = resolve)), `output matching ${pattern}`, WAIT_MS);
    }
  };
  // The exit's deadline runs from when a test waits for it, not from the start: started here, it
  // fired (an unhandled rejection) while a slow sync was still being waited for.
  const exited = (): Promise<number> => within(exit, 'the controller to exit', WAIT_MS);
  return { cluster, out, err, abort, exited, printed, probes: () => probes! };
}

describe('the long-running controller', () => {
  it('[demo: long-running controller] syncs, reports every pool, answers the probes, and stops cleanly on SIGTERM with exit 0', async () => {
    const { out, err, abort, exited, printed, probes } = await run('none');
    await printed(/synced 3 pods in 2 pools/);
    await printed(/pool ml\/trainers: 1 cell/);
    expect(out).toContain('pool ml/engines: 2 cells, 0 ready, 0 restarts  (engine-0 Pending r0, engine-1 Pending r0)');
    expect(await get(`${probes()}/readyz`)).toEqual({ status: 200, body: 'ok' });
    expect(await get(`${probes()}/healthz`)).toEqual({ status: 200, body: 'ok' });
    abort.abort(); // what SIGTERM does in main.ts
    expect(await exited()).toBe(0);
    expect(out.at(-1)).toBe('pool-tracker: stopped cleanly');
    expect(err).toEqual([]);
  });

  it('[demo: long-running controller] a selector the apiserver rejects (400) fails the start and exits 1 with the error', async () => {
    const { err, exited } = await run('bad-selector', { syncTimeoutMs: 1_000 });
    expect(await exited()).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(/^pool-tracker: cannot start: .*pods\(ml, pool in \(engines\)/);
  });

  it('[demo: long-running controller] RBAC forbidding the LIST: readiness is red while it retries, then the sync timeout exits 1', async () => {
    const { err, exited, printed, probes } = await run('forbidden', { syncTimeoutMs: 1_500 });
    await printed(/tracking pods/);
    const ready = await get(`${probes()}/readyz?verbose`);
    expect(ready.status).toBe(500);
    expect(ready.body).toContain('[-]source:pods(ml, pool) failed: not synced yet');
    expect((await get(`${probes()}/healthz`)).status).toBe(200); // retrying is not wedged
    expect(await exited()).toBe(1);
    expect(err[0]).toMatch(/^pool-tracker: cannot start: source "pods\(ml, pool\)" did not sync within 1500 ms/);
  });

  it('[demo: long-running controller] a reconcile that never settles: SIGTERM stops after the grace period, names the abandoned pool and exits 1', async () => {
    const { err, abort, exited, printed } = await run('hung-reconcile', { graceMs: 200 });
    await printed(/synced 3 pods/);
    abort.abort();
    expect(await exited()).toBe(1);
    expect(err).toEqual(['pool-tracker: stopped after the grace period; abandoned reconciles of ml/engines']);
  });

  it('[demo: long-running controller] a permanent source failure after start stops the controller with exit 1 and the Status line', async () => {
    let fail: ((error: unknown) => void) | undefined;
    const source: Source<PodView> = {
      name: 'pods',
      async *open() {
        yield replaceEvent<PodView>([]);
        await new Promise((_, reject) => (fail = reject));
      },
    };
    const { err, exited, printed } = await run('none', { source });
    await printed(/synced 0 pods/);
    fail!(
      Object.assign(new Error('gone'), {
        permanent: true,
        status: { code: 400, reason: 'BadRequest', message: 'the server rejected our request' },
      }),
    );
    expect(await exited()).toBe(1);
    expect(err).toEqual(['pool-tracker: stopped: 400 BadRequest: the server rejected our request']);
  });

  it('[demo: long-running controller] a kubeconfig that cannot be loaded prints why and exits 1', async () => {
    const err: string[] = [];
    const code = await runController({
      kubeconfig: '/nonexistent/kubeconfig',
      namespace: 'ml',
      selector: 'pool',
      signal: new AbortController().signal,
      print: () => {},
      printError: (line) => err.push(line),
    });
    expect(code).toBe(1);
    expect(err[0]).toMatch(/^pool-tracker: cannot load the kubeconfig: /);
  });
});
