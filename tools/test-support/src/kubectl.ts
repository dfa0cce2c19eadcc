import { execFileSync } from 'node:child_process';

/** Why a kubectl test cannot run, and how to fix it. */
export const KUBECTL_MISSING =
  'kubectl not found on PATH; run packages/testing/scripts/ensure-kubectl.sh (installs Debian kubernetes-client)';

let found: { path: string | undefined } | undefined;

/**
 * The kubectl on PATH (as the shell finds it), or `undefined` when there is none. Looked up once per
 * process. In CI a missing kubectl is a broken environment (scripts/test-all.sh installs it), so a
 * test suite fails there instead of skipping.
 */
export function kubectlBinary(): string | undefined {
  if (found === undefined) {
    try {
      const out = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
      found = { path: out === '' ? undefined : out };
    } catch {
      found = { path: undefined };
    }
  }
  return found.path;
}
