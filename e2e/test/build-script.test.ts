import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { binaryDir, ENV, probeToolchain, readAllVersions, readVersions, renderKubeconfig } from '../src/index.js';
import { e2eAvailability } from '../src/environment.js';

const script = join(import.meta.dirname, '..', 'provision', 'build.sh');

// These run without building anything: they check the script's contract with the harness.
describe('provision/build.sh', () => {
  it('[test layers: self-provisioned] build.sh fails with exit 127 and a clear message when go is not on PATH', () => {
    const result = spawnSync('/bin/bash', [script], { env: { PATH: '/nonexistent', HOME: '/tmp' }, encoding: 'utf8' });
    expect(result.status).toBe(127);
    expect(result.stderr).toContain("'go' is not on PATH");
    expect(result.stderr).toContain(ENV.kubeconfig);
  });

  it('--print-dir names the same cache directory the harness computes, keyed by both versions, for every line', () => {
    const env = { ...process.env, [ENV.cache]: '/tmp/e2e-cache-probe' };
    for (const versions of readAllVersions()) {
      const result = spawnSync('bash', [script, '--print-dir', versions.line], { env, encoding: 'utf8' });
      expect(result.status).toBe(0);
      expect(result.stdout.trim()).toBe(binaryDir(versions, env));
      expect(result.stdout.trim()).toBe(`/tmp/e2e-cache-probe/k8s-${versions.kubernetes}-etcd-${versions.etcd}`);
    }
  });

  it(`[e2e: Kubernetes lines] ${ENV.k8s} picks the line (by line or exact version) in build.sh and the harness alike; unset is the newest; an unpinned one is refused`, () => {
    const all = readAllVersions();
    expect(all.length).toBeGreaterThanOrEqual(3);
    // Newest first: the default is the newest line.
    expect(all.map((v) => v.minor)).toEqual([...all.map((v) => v.minor)].sort((a, b) => b - a));
    const base: NodeJS.ProcessEnv = { ...process.env, [ENV.cache]: '/tmp/e2e-cache-probe' };
    delete base[ENV.k8s];
    expect(readVersions(base)).toEqual(all[0]);
    expect(spawnSync('bash', [script, '--print-dir'], { env: base, encoding: 'utf8' }).stdout.trim()).toBe(
      binaryDir(all[0], base),
    );
    for (const versions of all) {
      for (const pick of [versions.line, versions.kubernetes]) {
        const env = { ...base, [ENV.k8s]: pick };
        expect(readVersions(env)).toEqual(versions);
        const result = spawnSync('bash', [script, '--print-dir'], { env, encoding: 'utf8' });
        expect(result.stdout.trim()).toBe(binaryDir(versions, env));
      }
    }
    const unpinned = { ...base, [ENV.k8s]: '1.20' };
    expect(() => readVersions(unpinned)).toThrow(/not a pinned line/);
    const refused = spawnSync('bash', [script, '--print-dir'], { env: unpinned, encoding: 'utf8' });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('not a pinned line');
    expect(spawnSync('bash', [script, '--lines'], { env: base, encoding: 'utf8' }).stdout.trim()).toBe(
      all.map((v) => v.line).join(' '),
    );
  });

  it("each line's wrapper module pins its k8s.io/kubernetes and replaces every staging module with the matching tag", async () => {
    const { readFileSync } = await import('node:fs');
    for (const versions of readAllVersions()) {
      const dir = join(import.meta.dirname, '..', 'provision', `k8s-${versions.line}`);
      expect(versions.kubernetes.startsWith(`v${versions.line}.`)).toBe(true);
      expect(versions.staging).toBe(versions.kubernetes.replace(/^v1\./, 'v0.'));
      const gomod = readFileSync(join(dir, 'kube-apiserver', 'go.mod'), 'utf8');
      expect(gomod).toContain(`k8s.io/kubernetes ${versions.kubernetes}`);
      const replaces = [...gomod.matchAll(/^\s+(k8s\.io\/\S+) => (\S+) (\S+)$/gm)];
      expect(replaces.length).toBeGreaterThanOrEqual(30);
      for (const [, from, to, version] of replaces) {
        expect(to).toBe(from);
        expect(version).toBe(versions.staging);
      }
      const etcdmod = readFileSync(join(dir, 'etcd', 'go.mod'), 'utf8');
      expect(etcdmod).toContain(`go.etcd.io/etcd/server/v3 ${versions.etcd}`);
      expect(gomod).toContain(`go.etcd.io/etcd/client/v3 ${versions.etcd}`);
    }
  });
});

describe('toolchain availability', () => {
  function bareEnv(extra: Record<string, string> = {}): { env: NodeJS.ProcessEnv; cleanup: () => void } {
    const cache = mkdtempSync(`${tmpdir()}/e2e-empty-cache-`);
    return {
      env: { PATH: '/nonexistent', HOME: cache, [ENV.cache]: cache, ...extra },
      cleanup: () => rmSync(cache, { recursive: true, force: true }),
    };
  }

  it('no go and no cached binaries: the layer is skipped with a reason naming the escape hatches', () => {
    const { env, cleanup } = bareEnv();
    try {
      expect(probeToolchain(env).kind).toBe('missing');
      const availability = e2eAvailability(env);
      expect(availability.run).toBe(false);
      if (!availability.run) {
        expect(availability.reason).toContain(ENV.require);
        expect(availability.reason).toContain(ENV.kubeconfig);
      }
    } finally {
      cleanup();
    }
  });

  it(`[env: MILES_K8S_REQUIRE → ${ENV.require}] ${ENV.require}=1 turns the missing toolchain into a failure instead of a skip`, () => {
    const { env, cleanup } = bareEnv({ [ENV.require]: '1' });
    try {
      expect(() => e2eAvailability(env)).toThrow(expect.objectContaining({ code: 'E2E_PROVISION_FAILED' }));
    } finally {
      cleanup();
    }
  });

  it(`[env: MILES_K8S_KUBECONFIG → ${ENV.kubeconfig}] ${ENV.kubeconfig} runs against that cluster without needing a toolchain`, () => {
    const { env, cleanup } = bareEnv({ [ENV.require]: '1' });
    const kubeconfig = join(env[ENV.cache] ?? '', 'external.kubeconfig');
    writeFileSync(kubeconfig, renderKubeconfig('external', { server: 'https://127.0.0.1:1', token: 't' }));
    try {
      expect(e2eAvailability({ ...env, [ENV.kubeconfig]: kubeconfig })).toEqual({ run: true, mode: 'external' });
    } finally {
      cleanup();
    }
  });
});
