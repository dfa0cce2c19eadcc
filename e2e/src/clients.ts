/**
 * Real clients for the e2e layer: client-go-check (e2e/clients/client-go), built from the Go module
 * proxy by e2e/clients/build.sh into the same cache as the apiservers, and run against any
 * kubeconfig; its report is one JSON object of facts to compare between servers.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BUILD = join(dirname(fileURLToPath(import.meta.url)), '..', 'clients', 'build.sh');

/** Builds client-go-check when missing (minutes on a cold Go build cache) and returns its path. */
export async function clientGoCheck(timeoutMs = 20 * 60_000): Promise<string> {
  const { stdout } = await run('bash', [BUILD], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
  const path = stdout.trim().split('\n').pop();
  if (path === undefined || path === '') throw new Error(`${BUILD} printed no path`);
  return path;
}

/** One client-go-check report: check name → facts. */
export type ClientGoReport = Record<string, Record<string, unknown>>;

/** Runs the checks against `kubeconfigPath` in namespace `namespace`; rejects with its stderr when it fails. */
export async function runClientGoCheck(binary: string, kubeconfigPath: string, namespace: string): Promise<ClientGoReport> {
  const { stdout } = await run(binary, ['run', '--kubeconfig', kubeconfigPath, '--namespace', namespace], {
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as ClientGoReport;
}
