import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Directory of the provisioning sources (build.sh, versions.env, wrapper Go modules). */
export const provisionDir: string = resolve(dirname(fileURLToPath(import.meta.url)), '../provision');

/** The environment variables this layer reads, named once so the README and code agree. */
export const ENV = {
  /** `1`: leave the control plane running after the run and print how to reach it. */
  keep: 'RECONCILE_LOOP_E2E_KEEP',
  /** Path to a kubeconfig: run against that cluster instead of provisioning one. */
  kubeconfig: 'RECONCILE_LOOP_E2E_KUBECONFIG',
  /** `1` (set in CI): a missing Go toolchain fails the run instead of skipping it. */
  require: 'RECONCILE_LOOP_E2E_REQUIRE',
  /** Root of the binary cache; default `~/.cache/reconcile-loop/e2e`. */
  cache: 'RECONCILE_LOOP_E2E_CACHE',
} as const;

/** Pinned versions, parsed from provision/versions.env (shared with build.sh). */
export interface Versions {
  readonly kubernetes: string;
  readonly staging: string;
  readonly etcd: string;
}

/** Reads provision/versions.env; throws when a pin is missing so a typo cannot build the wrong thing. */
export function readVersions(): Versions {
  const text = readFileSync(join(provisionDir, 'versions.env'), 'utf8');
  const values = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  const get = (k: string): string => {
    const v = values.get(k);
    if (v === undefined || v === '') throw new Error(`e2e/provision/versions.env: ${k} is not set`);
    return v;
  };
  return { kubernetes: get('KUBERNETES_VERSION'), staging: get('STAGING_VERSION'), etcd: get('ETCD_VERSION') };
}

/** Root of the binary cache, outside the work tree so clones and clean checkouts reuse it. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env[ENV.cache];
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'reconcile-loop', 'e2e');
}

/** Cache directory of one version pair; must match build.sh's `out_dir`. */
export function binaryDir(versions: Versions = readVersions(), env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), `k8s-${versions.kubernetes}-etcd-${versions.etcd}`);
}

/** True when the variable is set to a truthy flag (`1`, `true`, `yes`). */
export function flag(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env[name]?.toLowerCase();
  return v === '1' || v === 'true' || v === 'yes';
}
