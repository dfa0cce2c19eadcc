/** What the demo's process-level tests share: cleanups run after each test, and a plain HTTP GET. */
import { httpGet } from '@reconcile-loop/test-support';
import { afterEach } from 'vitest';

/** Cleanups registered by a test; run in reverse order after it, also when it failed. */
export const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** GET over loopback HTTP: the status and the whole body (probes, /metrics). */
export async function get(url: string): Promise<{ status: number; body: string }> {
  const { status, body } = await httpGet(url);
  return { status, body };
}
