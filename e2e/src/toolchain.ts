import { execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { binaryDir, provisionDir, readVersions, type Versions } from './config.js';

/** Paths of the two control-plane binaries at the pinned versions. */
export interface Binaries {
  readonly dir: string;
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly versions: Versions;
}

/** What the machine can do about the binaries, decided without building anything. */
export type ToolchainStatus =
  | { readonly kind: 'cached'; readonly binaries: Binaries }
  | { readonly kind: 'buildable'; readonly go: string }
  | { readonly kind: 'missing'; readonly reason: string };

/** Raised when build.sh fails; `code` is stable across ESM/CJS copies of this module. */
export class ProvisionError extends Error {
  readonly code = 'E2E_PROVISION_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'ProvisionError';
  }
}

/** First executable named `name` on PATH, or undefined. */
export function which(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function reportsVersion(binary: string, expected: string): boolean {
  if (!existsSync(binary)) return false;
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] }).includes(
      expected,
    );
  } catch {
    return false;
  }
}

function binariesFor(versions: Versions, env: NodeJS.ProcessEnv): Binaries {
  const dir = binaryDir(versions, env);
  return { dir, etcd: join(dir, 'etcd'), kubeApiserver: join(dir, 'kube-apiserver'), versions };
}

/**
 * Decides, without building, whether the binaries are cached at the pinned versions, can be
 * built (Go on PATH), or cannot be had — the last is a skip, or a failure under REQUIRE.
 */
export function probeToolchain(env: NodeJS.ProcessEnv = process.env): ToolchainStatus {
  const versions = readVersions(env);
  const binaries = binariesFor(versions, env);
  // Same checks as build.sh's is_current, so a cached hit here is a cached hit there.
  if (
    reportsVersion(binaries.etcd, `etcd Version: ${versions.etcd.replace(/^v/, '')}`) &&
    reportsVersion(binaries.kubeApiserver, `Kubernetes ${versions.kubernetes}`)
  ) {
    return { kind: 'cached', binaries };
  }
  const go = which('go', env);
  if (go !== undefined) return { kind: 'buildable', go };
  return {
    kind: 'missing',
    reason: `no Go toolchain on PATH and no cached binaries in ${binaries.dir}: the e2e layer builds kube-apiserver ${versions.kubernetes} and etcd ${versions.etcd} from the Go module proxy`,
  };
}

/**
 * Runs provision/build.sh (idempotent; minutes the first time) and returns the binaries.
 * Progress lines go to `onProgress` (default: stderr) as the build prints them.
 */
export async function ensureBinaries(
  options: { env?: NodeJS.ProcessEnv; onProgress?: (line: string) => void } = {},
): Promise<Binaries> {
  const env = options.env ?? process.env;
  const onProgress = options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const status = probeToolchain(env);
  if (status.kind === 'cached') return status.binaries;
  if (status.kind === 'missing') throw new ProvisionError(status.reason);
  // The line is passed explicitly so build.sh cannot resolve another one than this process did.
  const versions = readVersions(env);
  const child = spawn('bash', [join(provisionDir, 'build.sh'), versions.line], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      onProgress(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
  });
  const code = await new Promise<number | null>((resolveExit, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolveExit(c));
  });
  if (pending !== '') onProgress(pending);
  if (code !== 0) throw new ProvisionError(`e2e/provision/build.sh exited with ${String(code)}; see the lines above`);
  const binaries = binariesFor(versions, env);
  if (stdout.trim().split('\n').at(-1) !== binaries.dir) {
    throw new ProvisionError(`build.sh built into ${stdout.trim()} but the harness expects ${binaries.dir}`);
  }
  return binaries;
}
