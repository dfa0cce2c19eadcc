/**
 * `--controller` without a kubeconfig: an embedded apiserver with a small pool, optionally broken
 * in one of the ways README's Troubleshooting section shows, so each failure's output can be seen
 * without a cluster.
 */
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';

/** The ways the embedded cluster can be broken. */
export const FAULTS = ['none', 'bad-selector', 'forbidden', 'hung-list', 'hung-reconcile'] as const;
export type Fault = (typeof FAULTS)[number];

/** The namespace and label of the seeded pool. */
export const CONTROLLER_NAMESPACE = 'ml';

/** What the controller is pointed at. */
export interface FaultyCluster {
  readonly server: ApiServer;
  /** The selector to track with (a bad one for `bad-selector`). */
  readonly selector: string;
  /** True when every reconcile should hang (`hung-reconcile`). */
  readonly hangReconcile: boolean;
}

/** Starts the embedded apiserver with two engines and a trainer, then breaks it as asked. */
export async function startFaultyCluster(fault: Fault, selector: string): Promise<FaultyCluster> {
  const server = await startApiServer();
  server.seedPods(2, { namespace: CONTROLLER_NAMESPACE, labels: { pool: 'engines' }, namePrefix: 'engine' });
  server.seedPods(1, { namespace: CONTROLLER_NAMESPACE, labels: { pool: 'trainers' }, namePrefix: 'trainer' });
  // Enough injected failures to outlast any sync timeout; each LIST attempt consumes one.
  const always = 10_000;
  switch (fault) {
    case 'bad-selector':
      return { server, selector: 'pool in (engines', hangReconcile: false }; // the apiserver answers 400
    case 'forbidden':
      server.failNext({ verb: 'list', status: 403, times: always }); // RBAC forbids the list
      break;
    case 'hung-list':
      server.failNext({ verb: 'list', status: 'hang', times: always }); // accepted, never answered
      break;
    default:
      break;
  }
  return { server, selector, hangReconcile: fault === 'hung-reconcile' };
}
