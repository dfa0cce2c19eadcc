#!/usr/bin/env node
// Packaging smoke test: every package is packed exactly as published (pnpm pack) and installed
// ALONE into an empty project with plain npm, outside the workspace; then it is imported from ESM
// and required from CJS and used once. Unpublished sibling packages resolve to their tarballs
// through npm `overrides`, so the project lists only the package under test.
// Fails when a package that must not see the Kubernetes client pulls @kubernetes/client-node in.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const only = process.argv.slice(2);

/** One line of real use per package, run from ESM and from CJS; `m` is the package's exports. */
const uses = {
  'work-queue': `const q = new m.WorkQueue(); q.add('a'); q.add('a'); if (q.size !== 1 || q.tryGet() !== 'a') throw new Error('dedup');`,
  'retry-scheduler': `const s = new m.RetryScheduler({ onRetry() {} }); if (!(s.schedule('a') > 0)) throw new Error('delay'); s.shutdown();`,
  'object-store': `const st = new m.ObjectStore({ keyMap: (o) => o.p }); const a = st.apply(m.replaceEvent([['k', { p: 'x' }]])); if (!a.has('x') || st.members('x').size !== 1) throw new Error('store');`,
  'k8s-types': `const p = m.podSchema.parse({ metadata: { name: 'a', namespace: 'n' } }); if (p.metadata.name !== 'a') throw new Error('pod');`,
  'stream-driver': `if (typeof m.StreamDriver !== 'function') throw new Error('driver');`,
  'loop': `if (typeof m.ReconcileLoop !== 'function') throw new Error('loop');`,
  'reflector': `if (typeof m.Reflector !== 'function') throw new Error('reflector');`,
  'kube-client': `const c = new m.KubeClient({ server: 'https://k8s.invalid', rateLimit: false, transport: async () => ({ status: 404, header: () => undefined, body: [JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' })], close() {} }) }); const e = await c.resource({ group: '', version: 'v1', plural: 'pods' }).inNamespace('d').get('x').catch((x) => x); if (!m.isNotFound(e) || e.code !== 'KUBE_API_ERROR') throw new Error('kube-client');`,
  'leader-election': `const lock = { identity: 'a', describe: () => 'ns/l', get: async () => undefined, create: async () => {}, update: async () => {} }; const e = new m.LeaderElector({ lock }); if (e.isLeader() || e.timings.leaseDurationMs !== 15000) throw new Error('elector'); let code; try { new m.LeaderElector({ lock, leaseDurationMs: 1000 }); } catch (x) { code = x.code; } if (code !== 'LEADER_ELECTION_OPTIONS') throw new Error('validation');`,
  'testing': `const s = await m.startApiServer(); try { const r = await fetch(s.url + '/api/v1/pods'); if (r.status !== 200) throw new Error('apiserver ' + r.status); } finally { await s.close(); }`,
};
/** Packages that must install without @kubernetes/client-node. */
const noKubernetesClient = new Set(['work-queue', 'retry-scheduler', 'object-store', 'k8s-types', 'stream-driver', 'loop', 'testing', 'kube-client', 'leader-election']);
/** Packages with zero runtime dependencies. */
const zeroDeps = new Set(['work-queue', 'retry-scheduler', 'object-store']);

const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
const work = mkdtempSync(join(tmpdir(), 'rl-smoke-'));
const tarballs = join(work, 'tarballs');
mkdirSync(tarballs);
const failures = [];
let passed = 0;
try {
  const names = readdirSync(join(root, 'packages')).filter((n) => existsSync(join(root, 'packages', n, 'package.json')));
  // With names on the command line, pack only those and the sibling packages they depend on.
  const wanted = new Set(only.length ? only : names);
  // A Set visits what is added while iterating it: the closure over sibling dependencies, transitively.
  for (const name of wanted) {
    const deps = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8')).dependencies ?? {};
    for (const dep of Object.keys(deps)) if (dep.startsWith('@reconcile-loop/')) wanted.add(dep.slice('@reconcile-loop/'.length));
  }
  const tarballOf = {};
  for (const name of names.filter((n) => wanted.has(n))) {
    const dir = join(root, 'packages', name);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    if (manifest.private) continue;
    if (!existsSync(join(dir, 'dist'))) throw new Error(`packages/${name}/dist is missing: run the build first`);
    const out = sh('pnpm', ['pack', '--pack-destination', tarballs], dir).trim().split('\n').pop();
    tarballOf[manifest.name] = resolve(dir, out);
  }
  for (const name of names) {
    const pkgName = `@reconcile-loop/${name}`;
    if (!tarballOf[pkgName] || (only.length && !only.includes(name))) continue;
    const project = join(work, `consumer-${name}`);
    mkdirSync(project);
    const overrides = Object.fromEntries(Object.entries(tarballOf).filter(([n]) => n !== pkgName).map(([n, t]) => [n, `file:${t}`]));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true, overrides }, null, 2));
    const label = `${pkgName}`;
    try {
      sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarballOf[pkgName]], project);
      const installed = JSON.parse(readFileSync(join(project, 'node_modules', pkgName, 'package.json'), 'utf8'));
      if (zeroDeps.has(name) && Object.keys(installed.dependencies ?? {}).length > 0) throw new Error(`has runtime dependencies: ${Object.keys(installed.dependencies)}`);
      if (JSON.stringify(installed).includes('workspace:')) throw new Error('published manifest still has a workspace: range');
      if (JSON.stringify(installed.exports).includes('/src/')) throw new Error('published exports point into src/');
      const hasClient = existsSync(join(project, 'node_modules', '@kubernetes', 'client-node'));
      if (noKubernetesClient.has(name) && hasClient) throw new Error('installing it brought @kubernetes/client-node into node_modules');
      if (name === 'reflector' && !installed.peerDependencies?.['@kubernetes/client-node']) throw new Error('reflector must declare @kubernetes/client-node as a peer');
      const use = uses[name] ?? '';
      writeFileSync(join(project, 'use.mjs'), `import * as m from '${pkgName}';\n${use}\nconsole.log('esm ok');\n`);
      writeFileSync(join(project, 'use.cjs'), `const m = require('${pkgName}');\n(async () => {\n${use}\nconsole.log('cjs ok');\n})().catch((e) => { console.error(e); process.exit(1); });\n`);
      sh('node', ['use.mjs'], project);
      sh('node', ['use.cjs'], project);
      console.log(`ok   ${label}${hasClient ? ' (with its @kubernetes/client-node peer)' : ' (no @kubernetes/client-node)'}`);
      passed++;
    } catch (error) {
      const detail = [error.message, error.stdout, error.stderr].filter(Boolean).join('\n').trim();
      console.log(`FAIL ${label}: ${detail}`);
      failures.push(label);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`pack-smoke: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
