import { afterAll, beforeAll } from 'vitest';
import { ENV, flag } from './config.js';
import { ControlPlane, externalCluster, type Endpoint } from './control-plane.js';
import { ProvisionError, probeToolchain } from './toolchain.js';

/** Whether this layer can run here, decided at collection time without building anything. */
export type Availability =
  | { readonly run: true; readonly mode: 'provisioned' | 'external' }
  | { readonly run: false; readonly reason: string };

let announced = false;

/**
 * Decides at collection time: an external kubeconfig runs against that cluster; cached
 * binaries or a Go toolchain provision one; neither skips the layer with a printed reason,
 * or throws under RECONCILE_LOOP_E2E_REQUIRE=1 (CI) so a missing toolchain cannot pass as green.
 */
export function e2eAvailability(env: NodeJS.ProcessEnv = process.env): Availability {
  if (externalCluster(env) !== undefined) return { run: true, mode: 'external' };
  const status = probeToolchain(env);
  if (status.kind !== 'missing') return { run: true, mode: 'provisioned' };
  if (flag(ENV.require, env)) throw new ProvisionError(`${ENV.require}=1: ${status.reason}`);
  const reason = `${status.reason}. Skipping the e2e layer; set ${ENV.require}=1 to make this a failure, or ${ENV.kubeconfig} to use a cluster.`;
  if (!announced) {
    announced = true;
    process.stderr.write(`[e2e] ${reason}\n`);
  }
  return { run: false, reason };
}

/** What a scenario gets. */
export interface E2eEnvironment {
  readonly mode: 'provisioned' | 'external';
  /** The apiserver scenarios talk to: the watch-cached one when provisioned. */
  readonly endpoint: Endpoint;
  /** etcd, both apiservers, proxies: only when this harness provisioned the cluster. */
  readonly controlPlane: ControlPlane | undefined;
}

/**
 * Registers beforeAll/afterAll that provision the environment for this file (or open the
 * external cluster) and tear it down even when tests fail. Returns an accessor for tests.
 * The build can take many minutes the first time, hence the hook's own timeout.
 */
export function useE2eEnvironment(availability: Availability, options: { buildTimeoutMs?: number } = {}): () => E2eEnvironment {
  let environment: E2eEnvironment | undefined;
  if (!availability.run) {
    return () => {
      throw new ProvisionError(availability.reason);
    };
  }
  beforeAll(
    async () => {
      const external = externalCluster();
      if (external !== undefined) {
        environment = { mode: 'external', endpoint: external.endpoint, controlPlane: undefined };
        return;
      }
      const controlPlane = await ControlPlane.start({ onProgress: (line) => process.stderr.write(`${line}\n`) });
      environment = { mode: 'provisioned', endpoint: controlPlane.cachedEndpoint, controlPlane };
    },
    options.buildTimeoutMs ?? 60 * 60_000,
  );
  afterAll(async () => {
    await environment?.controlPlane?.teardown();
  }, 120_000);
  return () => {
    if (environment === undefined) throw new ProvisionError('e2e environment used outside a test (or its beforeAll failed)');
    return environment;
  };
}

/**
 * The provisioned control plane, or a skip with the reason when the run uses an external
 * cluster (no etcd, no process control, no uncached apiserver there).
 */
export function requireControlPlane(context: { skip: (note?: string) => never }, environment: E2eEnvironment): ControlPlane {
  if (environment.controlPlane === undefined) {
    return context.skip(`needs etcd and process control, which ${ENV.kubeconfig} (an external cluster) does not give`);
  }
  return environment.controlPlane;
}
