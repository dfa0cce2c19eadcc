#!/usr/bin/env node
// Packaging smoke test: every package is packed exactly as published (pnpm pack) and installed
// ALONE into an empty project with plain npm, outside the workspace, under whichever Node is first
// on PATH; then it is imported from ESM and required from CJS and used once. Unpublished sibling
// packages resolve to their tarballs through npm `overrides`, so the project lists only the package
// under test. It also checks what the tarball promises: LICENSE, license, engines, no placeholder
// repository, truthful peer ranges; and it runs the testing package's bin from node_modules/.bin.
//
//   node scripts/pack-smoke.mjs [names...]          pack into a temp dir, then check
//   node scripts/pack-smoke.mjs --pack DIR          only pack (DIR/index.json maps names to tarballs)
//   node scripts/pack-smoke.mjs --tarballs DIR ...  check tarballs packed earlier (one per Node of the matrix)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkBin } from './pack-smoke-bin.mjs';

const root = resolve(import.meta.dirname, '..');
const { values: opts, positionals: only } = parseArgs({
  options: { pack: { type: 'string' }, tarballs: { type: 'string' } },
  allowPositionals: true,
});

/** One line of real use per package, run from ESM and from CJS; `m` is the package's exports. */
const uses = {
  primitives: `const c = new m.ManualClock(); const b = new m.Backoff({ initialMs: 10, maxMs: 40 }); const d = [b.next(), b.next(), b.next(), b.next()]; let e; try { c.advance(-1); } catch (x) { e = x; } if (d.join() !== '10,20,40,40' || !(e instanceof m.ReconcileLoopError) || e.code !== 'RL_INVALID_CLOCK_STEP') throw new Error('primitives');`,
  'work-queue': `const q = new m.WorkQueue(); q.add('a'); q.add('a'); if (q.size !== 1 || q.tryGet() !== 'a') throw new Error('dedup'); q.stop(); const e = await q.get().catch((x) => x); if (!m.isQueueStopped(e) || e.code !== 'RL_QUEUE_STOPPED') throw new Error('stopped');`,
  'retry-scheduler': `const s = new m.RetryScheduler({ onRetry() {} }); const o = s.fail('a', { error: new Error('x') }); if (!(o.delayMs > 0)) throw new Error('delay'); let e; try { s.requeueAfter('a', -1); } catch (x) { e = x; } if (e?.code !== 'RL_RETRY_INVALID_DELAY') throw new Error('code'); s.shutdown();`,
  'object-store': `const st = new m.ObjectStore({ keyMap: (o) => o.p }); const a = st.apply(m.replaceEvent([['k', { p: 'x' }]])); if (!a.has('x') || st.members('x').size !== 1) throw new Error('store'); let e; try { st.apply({ type: 'nope' }); } catch (x) { e = x; } if (!(e instanceof m.InvalidSourceEventError) || e.code !== 'RL_STORE_INVALID_SOURCE_EVENT') throw new Error('code');`,
  'k8s-types': `const p = m.podSchema.parse({ metadata: { name: 'a', namespace: 'n' } }); if (p.metadata.name !== 'a') throw new Error('pod');`,
  'stream-driver': `if (typeof m.StreamDriver !== 'function') throw new Error('driver'); let e; try { new m.StreamDriver({}); } catch (x) { e = x; } if (e?.code !== 'RL_INVALID_OPTIONS') throw new Error('options');`,
  loop: `if (typeof m.ReconcileLoop !== 'function') throw new Error('loop'); const e = new m.LoopStoppedError('stopped'); if (!m.isLoopStopped(e) || e.code !== 'RL_LOOP_STOPPED' || m.isLoopStopped(new Error('x'))) throw new Error('guard');`,
  reflector: `if (typeof m.Reflector !== 'function') throw new Error('reflector');`,
  'kube-client': `const c = new m.KubeClient({ server: 'https://k8s.invalid', rateLimit: false, transport: async () => ({ status: 404, header: () => undefined, body: [JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' })], close() {} }) }); const e = await c.resource({ group: '', version: 'v1', plural: 'pods' }).inNamespace('d').get('x').catch((x) => x); if (!(e instanceof m.KubeApiError) || e.statusCode !== 404 || e.code !== 'RL_KUBE_API_ERROR') throw new Error('kube-client');`,
  'leader-election': `const lock = { identity: 'a', describe: () => 'ns/l', get: async () => undefined, create: async () => {}, update: async () => {} }; const e = new m.LeaderElector({ lock }); if (e.isLeader() || e.timings.leaseDurationMs !== 15000) throw new Error('elector'); let code; try { new m.LeaderElector({ lock, leaseDurationMs: 1000 }); } catch (x) { code = x.code; } if (code !== 'RL_INVALID_OPTIONS') throw new Error('validation');`,
  sharding: `const r = new m.HashRing(['a', 'b']); const ranges = [...r.rangesOf('a'), ...r.rangesOf('b')]; if (ranges.length === 0 || r.ownerOf('0000000000000000') === undefined) throw new Error('ring'); let code; try { new m.ShardMember({}); } catch (x) { code = x.code; } if (code !== 'RL_INVALID_OPTIONS') throw new Error('options');`,
  metrics: `const { Registry } = await import('prom-client'); const l = await import('@reconcile-loop/loop'); const registry = new Registry(); const loop = new l.ReconcileLoop({ controller: { name: 'c' }, source: new l.InProcessSource('s', [['k', {}]]), keyMap: (_, k) => k, reconcile: () => undefined, observer: m.controllerMetrics({ registry }) }); await loop.start(); const want = 'controller_runtime_reconcile_total{controller="c",result="success"} 1'; let text = ''; for (let i = 0; i < 200 && !text.includes(want); i++) { await new Promise((r) => setTimeout(r, 10)); text = await registry.metrics(); } await loop.stop(); if (!text.includes(want) || !text.includes('workqueue_depth{name="c",controller="c",priority="0"} 0')) throw new Error('metrics: ' + text.slice(0, 400));`,
  manager: `const up = { name: 'u', open: async function* () { yield { type: 'replace', objects: new Map([['k', 1]]) }; } }; const sh = m.shareSource(up); const c = new AbortController(); const first = await sh.subscribe('a').open(c.signal)[Symbol.asyncIterator]().next(); c.abort(); if (first.value?.type !== 'replace' || first.value.objects.get('k') !== 1 || sh.upstreamOpens !== 1) throw new Error('shareSource'); let code; try { new m.Manager({}); } catch (x) { code = x.code; } if (code !== 'RL_INVALID_OPTIONS') throw new Error('options');`,
  testing: `const s = await m.startApiServer(); try { const r = await fetch(s.url + '/api/v1/pods'); if (r.status !== 200) throw new Error('apiserver ' + r.status); } finally { await s.close(); }`,
};
/** Packages that must install without @kubernetes/client-node. */
const noKubernetesClient = new Set([
  'primitives',
  'work-queue',
  'retry-scheduler',
  'object-store',
  'k8s-types',
  'stream-driver',
  'loop',
  'testing',
  'kube-client',
  'leader-election',
  'sharding',
  'metrics',
  'reflector',
  'manager',
]);
/** Packages with zero runtime dependencies. */
const zeroDeps = new Set(['primitives']);
/**
 * The peer ranges CI proves (scripts/test-all.sh runs client-node 1.4.x and 2.0.x, zod from its
 * floor 4.5.0 here to the locked 4.x in the workspace). A tarball declaring anything else fails.
 */
const peers = {
  'k8s-types': { zod: '^4.5.0' },
  // client-node reaches the reflector through kube-client (its optional peer); the reflector has none of its own.
  reflector: { zod: '^4.5.0' },
  // client-node is an optional peer there (auth borrowed from a KubeConfig); zod types the caller's views.
  'kube-client': { '@kubernetes/client-node': '^1.4.0 || ^2.0.0', zod: '^4.5.0' },
  // prom-client 15 is the current major; the metrics package's tests run the locked 15.x.
  metrics: { 'prom-client': '^15.0.0' },
  // zod through the kinds' views the shared reflectors validate with, as the reflector's.
  manager: { zod: '^4.5.0' },
};
const rootEngines = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node;

/**
 * A script that loads `pkgName` as ESM and as CJS in one process and checks every exported error
 * class: an instance from either copy is `instanceof` the other copy's class, and is a
 * `ReconcileLoopError` of both copies of primitives. Prints "N error classes across ESM/CJS".
 */
function dualCopyCheck(pkgName) {
  return `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const esm = await import('${pkgName}');
const cjs = require('${pkgName}');
const baseEsm = (await import('@reconcile-loop/primitives')).ReconcileLoopError;
const baseCjs = require('@reconcile-loop/primitives').ReconcileLoopError;
const argSets = [[], ['x'], ['x', 'x'], [{}], ['x', {}], [{}, {}], ['x', 'x', 'x'], [1], [1, 1], ['x', []]];
// Classes whose constructors need real arguments, by name; the rest take one of argSets.
const known = {
  ApiServerUsageError: ['RL_APISERVER_CLOSED', 'closed'],
  ListRejectedError: [{ verb: 'list', path: '/api/v1/pods', statusCode: 400, reason: 'BadRequest' }, 'pods'],
};
const make = (C) => { for (const args of known[C.name] ? [known[C.name]] : argSets) { try { return new C(...args); } catch {} } return undefined; };
const bad = [];
let checked = 0;
for (const [name, C] of Object.entries(esm)) {
  if (typeof C !== 'function' || C === baseEsm || !(C.prototype instanceof Error)) continue;
  const D = cjs[name];
  const a = make(C);
  const b = typeof D === 'function' ? make(D) : undefined;
  if (a === undefined || b === undefined) { bad.push(name + ': cannot construct it with ' + JSON.stringify(argSets)); continue; }
  if (!(a instanceof D) || !(b instanceof C)) bad.push(name + ': instanceof fails across the ESM and CJS copies');
  if (!(a instanceof baseEsm) || !(a instanceof baseCjs) || !(b instanceof baseEsm)) bad.push(name + ': not a ReconcileLoopError');
  if (typeof a.code !== 'string' || !a.code.startsWith('RL_')) bad.push(name + ': code ' + String(a.code) + ' does not start with RL_');
  checked++;
}
if (bad.length) { console.error(bad.join('\\n')); process.exit(1); }
console.log(checked + ' error classes across ESM/CJS');
`;
}

const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
const npmInstall = (project, ...specs) =>
  sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], project);

const packageNames = readdirSync(join(root, 'packages')).filter((n) => existsSync(join(root, 'packages', n, 'package.json')));

/** Packs the wanted packages (and the sibling packages they depend on) into `dir`; returns name → tarball. */
function packAll(dir, wantedNames) {
  const wanted = new Set(wantedNames.length ? wantedNames : packageNames);
  // A Set visits what is added while iterating it: the closure over sibling dependencies, transitively.
  for (const name of wanted) {
    const deps = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8')).dependencies ?? {};
    for (const dep of Object.keys(deps)) if (dep.startsWith('@reconcile-loop/')) wanted.add(dep.slice('@reconcile-loop/'.length));
  }
  const tarballOf = {};
  for (const name of packageNames.filter((n) => wanted.has(n))) {
    const pkgDir = join(root, 'packages', name);
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    if (manifest.private) continue;
    if (!existsSync(join(pkgDir, 'dist'))) throw new Error(`packages/${name}/dist is missing: run the build first`);
    const out = sh('pnpm', ['pack', '--pack-destination', dir], pkgDir).trim().split('\n').pop();
    tarballOf[manifest.name] = resolve(pkgDir, out);
  }
  writeFileSync(join(dir, 'index.json'), JSON.stringify(tarballOf, null, 2));
  return tarballOf;
}

/** What the tarball itself promises, read from the extracted package/ directory. */
function checkManifest(name, extracted) {
  const manifest = JSON.parse(readFileSync(join(extracted, 'package.json'), 'utf8'));
  const license = join(extracted, 'LICENSE');
  if (!existsSync(license)) throw new Error('the tarball has no LICENSE file');
  const text = readFileSync(license, 'utf8');
  if (
    !text.includes('Apache License') ||
    !text.includes('Version 2.0, January 2004') ||
    !text.includes('END OF TERMS AND CONDITIONS')
  ) {
    throw new Error('LICENSE is not the full Apache-2.0 text');
  }
  if (manifest.license !== 'Apache-2.0') throw new Error(`license is ${JSON.stringify(manifest.license)}, want Apache-2.0`);
  const repo = typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
  if (repo !== undefined && /example\.(invalid|com|org)|localhost/.test(repo))
    throw new Error(`repository is a placeholder: ${repo}`);
  if (manifest.engines?.node !== rootEngines)
    throw new Error(`engines.node is ${JSON.stringify(manifest.engines?.node)}, want ${rootEngines} (the tested floor)`);
  const want = peers[name] ?? {};
  const got = manifest.peerDependencies ?? {};
  if (JSON.stringify(Object.entries(got).sort()) !== JSON.stringify(Object.entries(want).sort())) {
    throw new Error(`peerDependencies ${JSON.stringify(got)}, want exactly ${JSON.stringify(want)}`);
  }
  if (manifest.dependencies?.zod || manifest.dependencies?.['@kubernetes/client-node'])
    throw new Error('zod and client-node must be peers, not dependencies');
  return manifest;
}

function floorOf(range) {
  const m = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (!m) throw new Error(`cannot take the floor of ${range}`);
  return m[1];
}

/** The reflector, packed, syncing from the packed embedded apiserver through the registry's client-node. */
const reflectorSync = `import { KubeConfig } from '@kubernetes/client-node';
import { podReflector } from '@reconcile-loop/reflector';
import { startApiServer } from '@reconcile-loop/testing';
const deadline = setTimeout(() => { console.error('no listing within 30 s'); process.exit(1); }, 30_000);
const server = await startApiServer();
server.seedPods(3, { namespace: 'default', labels: { pool: 'a' } });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(server.kubeconfig());
const controller = new AbortController();
try {
  for await (const event of podReflector({ kubeConfig, namespace: 'default', labelSelector: 'pool=a' }).open(controller.signal)) {
    if (event.type !== 'replace') throw new Error('first event ' + event.type);
    if (event.objects.size !== 3) throw new Error('listed ' + event.objects.size + ' pods, want 3');
    break;
  }
} finally {
  controller.abort();
  await server.close();
  clearTimeout(deadline);
}
console.log('reflector synced');
`;

/**
 * A small controller from the packed packages, the way a user assembles one: a ReconcileLoop over the
 * pod reflector, grouping pods by their pool label, writing one ConfigMap per pool through kube-client
 * (createIfAbsent, so a second reconcile of the same pool is a no-op), against the packed apiserver.
 */
const controllerRun = `import { KubeConfig } from '@kubernetes/client-node';
import { createIfAbsent, KubeClient } from '@reconcile-loop/kube-client';
import { ReconcileLoop } from '@reconcile-loop/loop';
import { podReflector } from '@reconcile-loop/reflector';
import { startApiServer } from '@reconcile-loop/testing';
const deadline = setTimeout(() => { console.error('the controller did not converge within 30 s'); process.exit(1); }, 30_000);
const server = await startApiServer();
server.seedPods(2, { namespace: 'default', labels: { pool: 'a' }, namePrefix: 'a' });
server.seedPods(1, { namespace: 'default', labels: { pool: 'b' }, namePrefix: 'b' });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(server.kubeconfig());
const client = new KubeClient({ kubeConfig });
const configMaps = client.resource({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' }).inNamespace('default');
const loop = new ReconcileLoop({
  controller: { name: 'pools' },
  source: podReflector({ kubeConfig, namespace: 'default', labelSelector: 'pool' }),
  keyMap: (pod) => pod.metadata.labels?.pool,
  reconcile: async (pool, ctx) => {
    await createIfAbsent(configMaps, { metadata: { name: 'pool-' + pool }, data: { cells: String(ctx.members.size) } }, { signal: ctx.signal });
  },
});
await loop.start();
try {
  for (;;) {
    const names = (await configMaps.list()).items.map((c) => c.metadata.name).sort();
    if (names.join() === 'pool-a,pool-b') break;
    await new Promise((r) => setTimeout(r, 20));
  }
} finally {
  await loop.stop();
  await server.close();
  clearTimeout(deadline);
}
console.log('controller converged');
`;

const work = mkdtempSync(join(tmpdir(), 'rl-smoke-'));
const failures = [];
let passed = 0;
try {
  let tarballOf = {};
  if (opts.pack !== undefined) {
    mkdirSync(opts.pack, { recursive: true });
    const packed = packAll(resolve(opts.pack), only);
    console.log(`packed ${Object.keys(packed).length} packages into ${opts.pack}`);
  } else if (opts.tarballs !== undefined) {
    tarballOf = JSON.parse(readFileSync(join(opts.tarballs, 'index.json'), 'utf8'));
  } else {
    mkdirSync(join(work, 'tarballs'));
    tarballOf = packAll(join(work, 'tarballs'), only);
  }
  const node = process.versions.node;
  for (const name of opts.pack !== undefined ? [] : packageNames) {
    const pkgName = `@reconcile-loop/${name}`;
    if (!tarballOf[pkgName] || (only.length && !only.includes(name))) continue;
    const project = join(work, `consumer-${name}`);
    mkdirSync(project);
    const overrides = Object.fromEntries(
      Object.entries(tarballOf)
        .filter(([n]) => n !== pkgName)
        .map(([n, t]) => [n, `file:${t}`]),
    );
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true, overrides }, null, 2),
    );
    const label = `${pkgName} (node ${node})`;
    const notes = [];
    try {
      mkdirSync(join(project, 'extracted'));
      sh('tar', ['-xzf', tarballOf[pkgName], '-C', join(project, 'extracted')]);
      checkManifest(name, join(project, 'extracted', 'package'));
      // zod's floor is installed explicitly, so the lowest version the peer range admits is the one used.
      const extra = name === 'k8s-types' ? [`zod@${floorOf(peers['k8s-types'].zod)}`] : [];
      npmInstall(project, tarballOf[pkgName], ...extra);
      const installed = JSON.parse(readFileSync(join(project, 'node_modules', pkgName, 'package.json'), 'utf8'));
      if (zeroDeps.has(name) && Object.keys(installed.dependencies ?? {}).length > 0)
        throw new Error(`has runtime dependencies: ${Object.keys(installed.dependencies)}`);
      if (JSON.stringify(installed).includes('workspace:')) throw new Error('published manifest still has a workspace: range');
      if (JSON.stringify(installed.exports).includes('/src/')) throw new Error('published exports point into src/');
      const hasClient = existsSync(join(project, 'node_modules', '@kubernetes', 'client-node'));
      if (noKubernetesClient.has(name) && hasClient)
        throw new Error('installing it brought @kubernetes/client-node into node_modules');
      const use = uses[name] ?? '';
      writeFileSync(join(project, 'use.mjs'), `import * as m from '${pkgName}';\n${use}\nconsole.log('esm ok');\n`);
      writeFileSync(
        join(project, 'use.cjs'),
        `const m = require('${pkgName}');\n(async () => {\n${use}\nconsole.log('cjs ok');\n})().catch((e) => { console.error(e); process.exit(1); });\n`,
      );
      sh('node', ['use.mjs'], project);
      sh('node', ['use.cjs'], project);
      // Every exported error class, from the ESM and the CJS build loaded in one process: instanceof
      // must hold both ways (the error base brands instances), and each must be a ReconcileLoopError.
      writeFileSync(join(project, 'dual.mjs'), dualCopyCheck(pkgName));
      const dual = sh('node', ['dual.mjs'], project).trim();
      notes.push('LICENSE/engines/peers', 'esm+cjs', dual);
      if (name === 'k8s-types') {
        notes.push(`zod ${floorOf(peers['k8s-types'].zod)}`);
        // The peer range must keep zod 3 out: npm refuses the install instead of failing at run time.
        const zod3 = join(work, 'consumer-k8s-types-zod3');
        mkdirSync(zod3);
        writeFileSync(join(zod3, 'package.json'), JSON.stringify({ name: 'zod3', version: '1.0.0', private: true }));
        let refused = false;
        try {
          npmInstall(zod3, tarballOf[pkgName], 'zod@3');
        } catch (error) {
          refused = /ERESOLVE|peer/i.test(`${error.stderr}${error.stdout}`);
          if (!refused) throw error;
        }
        if (!refused) throw new Error('npm installed it beside zod 3 without complaint');
        notes.push('zod 3 refused');
      }
      if (name === 'reflector') {
        // A second project: the reflector beside the testing package (a user's test setup).
        const both = join(work, 'consumer-reflector-with-testing');
        mkdirSync(both);
        const pair = new Set([pkgName, '@reconcile-loop/testing', '@reconcile-loop/loop']);
        const rest = Object.fromEntries(
          Object.entries(tarballOf)
            .filter(([n]) => !pair.has(n))
            .map(([n, t]) => [n, `file:${t}`]),
        );
        writeFileSync(
          join(both, 'package.json'),
          JSON.stringify({ name: 'consumer-reflector-with-testing', version: '1.0.0', private: true, overrides: rest }, null, 2),
        );
        // client-node is the user's (for the KubeConfig), an optional peer of kube-client: installed
        // explicitly, once per major the peer range claims, so each is proven from the tarballs.
        for (const clientNode of ['@kubernetes/client-node@^2.0.1', '@kubernetes/client-node@~1.4.0']) {
          rmSync(join(both, 'node_modules'), { recursive: true, force: true });
          rmSync(join(both, 'package-lock.json'), { force: true });
          npmInstall(
            both,
            tarballOf[pkgName],
            tarballOf['@reconcile-loop/testing'],
            tarballOf['@reconcile-loop/loop'],
            clientNode,
          );
          const cn = JSON.parse(
            readFileSync(join(both, 'node_modules', '@kubernetes', 'client-node', 'package.json'), 'utf8'),
          ).version;
          writeFileSync(join(both, 'sync.mjs'), reflectorSync);
          sh('node', ['sync.mjs'], both);
          writeFileSync(join(both, 'controller.mjs'), controllerRun);
          sh('node', ['controller.mjs'], both);
          notes.push(`synced and ran a controller from the packed apiserver with client-node ${cn}`);
        }
      }
      if (name === 'testing') {
        npmInstall(project, '@kubernetes/client-node@^2.0.1');
        for (const check of await checkBin(project)) notes.push(`bin ${check}`);
      }
      const pending = notes.filter((n) => n.includes('pending:'));
      console.log(`ok   ${label}: ${notes.join('; ')}`);
      for (const p of pending) console.log(`NOTE ${label}: ${p}`);
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
if (opts.pack === undefined)
  console.log(`pack-smoke: ${passed} passed, ${failures.length} failed (node ${process.versions.node})`);
process.exit(failures.length ? 1 : 0);
