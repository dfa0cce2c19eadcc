import { KubeConfig } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';

/** The embedded apiserver and a client-node KubeConfig for it. */
export async function apiServer(): Promise<{ server: ApiServer; kubeConfig: KubeConfig }> {
  const server = await startApiServer();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  return { server, kubeConfig };
}

/** Polls `condition` every 10 ms; rejects after `ms` naming what never became true. */
export async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** GET over loopback HTTP, JSON-decoded. */
export async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return (await res.json()) as Record<string, unknown>;
}

/** Short Lease timings (whole seconds, as a Lease records them), so a handover fits a test. */
export const FAST_LEASE = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 } as const;
