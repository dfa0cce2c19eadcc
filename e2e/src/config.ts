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
  /** Which pinned Kubernetes line to run: `1.36` or `v1.36.3`; default the newest in versions.env. */
  k8s: 'RECONCILE_LOOP_K8S',
} as const;

/** One Kubernetes line's pins, parsed from provision/versions.env (shared with build.sh). */
export interface Versions {
  /** The minor line, e.g. `1.36`. */
  readonly line: string;
  /** The line's minor number, e.g. 36, for version-dependent expectations. */
  readonly minor: number;
  readonly kubernetes: string;
  readonly staging: string;
  readonly etcd: string;
}

function parseVersionsEnv(): Map<string, string> {
  const text = readFileSync(join(provisionDir, 'versions.env'), 'utf8');
  const values = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return values;
}

/**
 * Every pinned line, newest first (the order of `KUBERNETES_LINES`); throws when a pin is missing
 * so a typo cannot build the wrong thing.
 */
export function readAllVersions(): Versions[] {
  const values = parseVersionsEnv();
  const get = (k: string): string => {
    const v = values.get(k);
    if (v === undefined || v === '') throw new Error(`e2e/provision/versions.env: ${k} is not set`);
    return v;
  };
  return get('KUBERNETES_LINES')
    .split(',')
    .map((line) => {
      if (!/^1\.\d+$/.test(line)) throw new Error(`e2e/provision/versions.env: KUBERNETES_LINES names '${line}', not a 1.N line`);
      const key = line.replaceAll('.', '_');
      return {
        line,
        minor: Number(line.slice(2)),
        kubernetes: get(`KUBERNETES_VERSION_${key}`),
        staging: get(`STAGING_VERSION_${key}`),
        etcd: get(`ETCD_VERSION_${key}`),
      };
    });
}

/**
 * The pins of the line this run uses: `RECONCILE_LOOP_K8S` (a line, `1.36`, or its pinned version,
 * `v1.36.3`; the same resolution as build.sh), the newest line when unset. An unpinned value throws
 * rather than silently running another version.
 */
export function readVersions(env: NodeJS.ProcessEnv = process.env): Versions {
  const all = readAllVersions();
  const want = env[ENV.k8s];
  const newest = all[0];
  if (newest === undefined) throw new Error('e2e/provision/versions.env: KUBERNETES_LINES is empty');
  if (want === undefined || want === '') return newest;
  const found = all.find((v) => want === v.line || want === `v${v.line}` || want === v.kubernetes);
  if (found === undefined) {
    const pinned = all.map((v) => `${v.line} (${v.kubernetes})`).join(', ');
    throw new Error(`${ENV.k8s}=${want} is not a pinned line; pinned: ${pinned} (e2e/provision/versions.env)`);
  }
  return found;
}

/** Root of the binary cache, outside the work tree so clones and clean checkouts reuse it. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env[ENV.cache];
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'reconcile-loop', 'e2e');
}

/** Cache directory of one version pair; must match build.sh's `out_dir`. */
export function binaryDir(versions?: Versions | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const v = versions ?? readVersions(env);
  return join(cacheRoot(env), `k8s-${v.kubernetes}-etcd-${v.etcd}`);
}

/** True when the variable is set to a truthy flag (`1`, `true`, `yes`). */
export function flag(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env[name]?.toLowerCase();
  return v === '1' || v === 'true' || v === 'yes';
}
