/**
 * What the CellSet tests share: the embedded apiserver with the CRD installed through HTTP (the
 * controller's own `ensureCellSetCrd`), a controller against it, typed access to the objects, and
 * bounded, event-driven waits (polling real I/O, never sleeping on a clock).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { ManualClock } from '@reconcile-loop/primitives';
import { httpGet, within } from '@reconcile-loop/test-support';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterEach } from 'vitest';
import { API_VERSION, CELLSET_LABEL, GROUP, KIND, PLURAL, VERSION } from '../src/api.js';
import type { KubeClient } from '@reconcile-loop/kube-client';
import { ensureCellSetCrd } from '../demo/install.js';
import { stopController } from '../demo/run.js';
import { tappedClient, type Taps } from '../demo/tap.js';
import {
  createCellSetController,
  type CellSetController,
  type CellSetControllerOptions,
  type Decision,
} from '../src/controller.js';

export const NS = 'default';
export const WAIT_MS = 5_000;
export const ref = { group: GROUP, version: VERSION, plural: PLURAL };

/** Cleanups registered by a test; run in reverse order after it, also when it failed. */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
export function onCleanup(cleanup: () => Promise<unknown>): void {
  cleanups.push(cleanup);
}

/** Polls `ok` every 5 ms of real time until true, at most `ms`. */
export function until(what: string, ok: () => boolean, ms = WAIT_MS): Promise<void> {
  return within(
    (async () => {
      while (!ok()) await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
    what,
    ms,
  );
}

/** GET over loopback HTTP: the status and the whole body (probes, /metrics). */
export async function get(url: string): Promise<{ status: number; body: string }> {
  const { status, body } = await httpGet(url);
  return { status, body };
}

/** A CellSet body. */
export function cellSet(name: string, replicas: number, image = 'cells/engine:1') {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      template: {
        metadata: { labels: { app: 'engine' } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'engine', image }] },
      },
    },
  };
}

export interface Harness {
  readonly server: ApiServer;
  readonly client: KubeClient;
  readonly controller: CellSetController;
  readonly clock: ManualClock | undefined;
  readonly decisions: Decision[];
  /** Live (not terminating) pods of `owner`, by name, sorted. */
  podNames(owner: string): string[];
  /** Every pod of `owner`, terminating ones included. */
  pods(owner: string): Array<{
    metadata: { name: string; uid?: string; deletionTimestamp?: string; annotations?: Record<string, string> };
    status?: { phase?: string };
  }>;
  /** The CellSet as the server holds it. */
  get(name: string):
    | {
        metadata: { generation?: number; finalizers?: string[]; annotations?: Record<string, string> };
        status?: Record<string, unknown>;
      }
    | undefined;
  decided(reason: string, pod?: string): Decision[];
}

/**
 * Starts the embedded apiserver, installs the CRD over HTTP, builds a controller (not started).
 * `manualClock: true` drives the loop, the reflectors and the rebuild history by a `ManualClock`.
 */
export async function harness(
  options: { manualClock?: boolean; controller?: Partial<CellSetControllerOptions>; taps?: Taps } = {},
): Promise<Harness> {
  const server = await startApiServer({ kubeletAutoFinishDeleteMs: 50 });
  onCleanup(() => server.close());
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  // The tests reach into the controller only from outside: through the wire of its client.
  const client = tappedClient(kubeConfig, options.taps ?? {}, { rateLimit: false });
  await ensureCellSetCrd(client, NS);
  const clock = options.manualClock ? new ManualClock() : undefined;
  const decisions: Decision[] = [];
  const controller = createCellSetController({
    client,
    namespace: NS,
    sourceRetry: { initialMs: 50, maxMs: 30_000 },
    onDecision: (d) => decisions.push(d),
    ...(clock !== undefined && { clock, wallClock: () => clock.now() }),
    ...options.controller,
  });
  onCleanup(() => stopController(controller, { graceMs: 2_000 }));
  const pods = (owner: string) =>
    server
      .listPods(NS)
      .filter(
        (p) => (p.metadata.labels as Record<string, string> | undefined)?.[CELLSET_LABEL] === owner,
      ) as unknown as ReturnType<Harness['pods']>;
  return {
    server,
    client,
    controller,
    clock,
    decisions,
    pods,
    podNames: (owner) =>
      pods(owner)
        .filter((p) => p.metadata.deletionTimestamp === undefined)
        .map((p) => p.metadata.name)
        .sort(),
    get: (name) => {
      try {
        return server.getObject(ref, NS, name) as unknown as ReturnType<Harness['get']>;
      } catch {
        return undefined;
      }
    },
    decided: (reason, pod) => decisions.filter((d) => d.reason === reason && (pod === undefined || d.pod === pod)),
  };
}
