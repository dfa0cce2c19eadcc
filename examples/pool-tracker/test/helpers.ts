/** What the demo's process-level tests share: cleanups run after each test, and a plain HTTP GET. */
import { request } from 'node:http';
import { afterEach } from 'vitest';

/** Cleanups registered by a test; run in reverse order after it, also when it failed. */
export const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** GET over loopback HTTP; resolves with the status and the whole body (probes, /metrics). */
export function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}
