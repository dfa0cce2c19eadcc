import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

// A matrix cell is only evidence if it ran where its line says. scripts/test-all.sh sets
// RECONCILE_LOOP_EXPECT_NODE to the Node version it put first on PATH, and RECONCILE_LOOP_CLIENT_NODE
// selects the client-node major (vitest.config.ts aliases the package for 1); these tests fail when
// the process or the resolved package is anything else.

describe('[support: runtime matrix] the cell runs where it says', () => {
  it('[support: runtime matrix] @kubernetes/client-node resolves to the major the cell names (deep imports included)', async () => {
    const want = process.env.RECONCILE_LOOP_CLIENT_NODE ?? '2';
    const manifest = (await import('@kubernetes/client-node/package.json', { with: { type: 'json' } })).default as {
      name: string;
      version: string;
    };
    expect(manifest.name).toBe('@kubernetes/client-node');
    expect(manifest.version.split('.')[0]).toBe(want);
    // The module the tests import is that same copy: a KubeConfig from it loads a config.
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(kc.getCurrentCluster()?.server).toBe('http://127.0.0.1:1');
  });

  it('[support: runtime matrix] the Node version is the one the cell provisioned', () => {
    const want = process.env.RECONCILE_LOOP_EXPECT_NODE;
    // Outside the matrix runner (a plain `pnpm test`) only the supported floor is checked.
    if (want !== undefined) expect(process.versions.node).toBe(want);
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    expect(major > 22 || (major === 22 && minor >= 19)).toBe(true);
  });
});
