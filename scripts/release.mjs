#!/usr/bin/env node
// The release, one script for the maintainer's real run and for CI's rehearsal of it (RELEASING.md).
//
//   node scripts/release.mjs --registry URL [--tag TAG] [--provenance]
//       The real release, from the repository as it is (versions already cut by `changeset version`,
//       packages built): `changeset publish` to URL (token: NODE_AUTH_TOKEN or NPM_TOKEN), then the
//       same verification as the rehearsal against URL. .github/workflows/release.yml runs this.
//   node scripts/release.mjs --rehearse [--nodes "26.12.1 24.22.3 22.19.0"] [--report FILE] [--serve]
//       CI's rehearsal: starts its own npm registry (Verdaccio, tools/registry, pinned) on loopback
//       with a throwaway config and storage; runs `changeset version` on a throwaway copy of the
//       workspace (the repository is never modified), publishes with `changeset publish`, verifies, runs
//       the single-package case and the fault cases, and stops the registry on every exit path.
//
// Verification (both modes): prints every package's version and tarball size as the registry serves
// it; on every Node of --nodes a fresh npm project installs every package BY NAME from the registry
// (plus the peers a user adds) and runs each README example marked `<!-- rehearse: ... -->`, taken
// from the README inside the installed tarball (scripts/readme-examples.mjs); one pnpm project does
// the same for the loop's example. Every child process has a deadline.
//
// --serve keeps the rehearsal's registry up after the run (until Ctrl-C), to try the README's Install
// commands by hand. --keep-going runs every case after a failure. --report FILE writes the cases as a vitest-style JSON report, so scripts/alignment-check.mjs sees
// the `[release: ...]` cases like any other test.
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { kubeconfigHarness, readmeExamples } from './readme-examples.mjs';

const root = resolve(import.meta.dirname, '..');
const { values: opts } = parseArgs({
  options: {
    rehearse: { type: 'boolean', default: false },
    registry: { type: 'string' },
    tag: { type: 'string' },
    provenance: { type: 'boolean', default: false },
    nodes: { type: 'string' },
    report: { type: 'string' },
    'keep-going': { type: 'boolean', default: false },
    serve: { type: 'boolean', default: false },
  },
});
if (opts.rehearse === (opts.registry !== undefined)) {
  console.error('usage: release.mjs --rehearse | --registry URL [--tag TAG] [--provenance]');
  process.exit(2);
}

const SCOPE = '@reconcile-loop/';
/**
 * The dist-tag this release goes to: --tag, else the pre mode tag of .changeset/pre.json (changesets
 * publishes prereleases there), else latest. Consumers install `name@tag` unless it is latest.
 */
let distTag = 'latest';
const spec = (name) => (distTag === 'latest' ? name : `${name}@${distTag}`);
const INSTALL_MS = 240_000;
const EXAMPLE_MS = 60_000;
const env = Object.fromEntries(
  readFileSync(join(root, 'scripts', 'runtimes.env'), 'utf8')
    .matchAll(/^(\w+)="?([^"\n]*)"?$/gm)
    .map((m) => [m[1], m[2]]),
);
const nodes = (opts.nodes ?? env.NODE_MATRIX).split(/\s+/).filter(Boolean);
const started = Date.now();

// --- processes: every child has a deadline; the registry is stopped on every path ---------------
const cleanups = [];
/** The children running now, each the leader of its own process group (killed whole on cleanup). */
const children = new Set();
/** Kills the running commands first (they may be writing into the temp dir), then runs the cleanups newest first. */
async function cleanup() {
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }
  while (cleanups.length) {
    try {
      await cleanups.pop()();
    } catch (error) {
      console.error(`cleanup: ${error.message}`);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    console.error(`release: ${signal}, stopping`);
    cleanup().finally(() => process.exit(130));
  });
}

class CommandError extends Error {}
/**
 * Runs a command to completion within `timeoutMs` (then SIGKILL to its whole process group); resolves
 * with its stdout+stderr, rejects with them unless it exits 0. Asynchronous, so a signal to this
 * script is handled at once (the registry stopped, the running command killed).
 */
function run(cmd, args, { cwd = root, env: extra = {}, timeoutMs = INSTALL_MS, path } = {}) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, {
      cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(path ? { PATH: path } : {}), ...extra },
    });
    children.add(child);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(new CommandError(`${cmd} ${args.join(' ')}: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (timedOut) reject(new CommandError(`${cmd} ${args.join(' ')}: no exit within ${timeoutMs} ms\n${out}`));
      else if (code !== 0)
        reject(new CommandError(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${code ?? signal}\n${out.trim()}`));
      else resolveRun(out);
    });
  });
}

// --- the report -------------------------------------------------------------------------------
const results = [];
async function check(title, body) {
  const t0 = Date.now();
  try {
    const note = await body();
    results.push({ title, status: 'passed' });
    console.log(`ok   ${title}${note ? `: ${note}` : ''} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (error) {
    results.push({ title, status: 'failed', message: error.message });
    console.log(`FAIL ${title}: ${error.message}`);
    if (!opts['keep-going']) throw error;
  }
}
function writeReport() {
  if (!opts.report) return;
  const passed = results.filter((r) => r.status === 'passed').length;
  writeFileSync(
    opts.report,
    JSON.stringify({
      numPassedTests: passed,
      numFailedTests: results.length - passed,
      numPendingTests: 0,
      numTodoTests: 0,
      testResults: [
        {
          name: 'scripts/release.mjs',
          assertionResults: results.map((r) => ({
            title: r.title,
            fullName: r.title,
            status: r.status,
            failureMessages: r.message ? [r.message] : [],
          })),
        },
      ],
    }),
  );
}

// --- the workspace ----------------------------------------------------------------------------
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));
/** The published packages of a workspace: short name → package.json. */
function publishedPackages(workspace) {
  const out = {};
  for (const name of readdirSync(join(workspace, 'packages')).sort()) {
    const file = join(workspace, 'packages', name, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = readJson(file);
    if (!manifest.private) out[name] = manifest;
  }
  return out;
}
/** Every workspace package's version (private ones too): what `changeset version` may move. */
function allVersions(workspace) {
  const out = {};
  for (const dir of ['packages', 'examples', 'tools']) {
    if (!existsSync(join(workspace, dir))) continue;
    for (const name of readdirSync(join(workspace, dir))) {
      const file = join(workspace, dir, name, 'package.json');
      if (existsSync(file)) out[readJson(file).name] = readJson(file).version;
    }
  }
  for (const dir of ['bench', 'e2e'])
    if (existsSync(join(workspace, dir, 'package.json')))
      out[readJson(join(workspace, dir, 'package.json')).name] = readJson(join(workspace, dir, 'package.json')).version;
  return out;
}

/**
 * A throwaway copy of the workspace as git sees it (tracked and untracked-but-not-ignored files) plus
 * every package's built dist/: what `changeset version` and `changeset publish` would act on in the
 * repository, without touching it.
 */
async function copyWorkspace(dest) {
  const files = (await run('git', ['ls-files', '-z', '-co', '--exclude-standard'], { timeoutMs: 30_000 }))
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(root, file))) continue; // deleted in the work tree, not yet in the index
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(root, file), join(dest, file));
  }
  for (const name of Object.keys(publishedPackages(root))) {
    const dist = join(root, 'packages', name, 'dist');
    if (!existsSync(dist)) throw new Error(`packages/${name}/dist is missing: build first (pnpm exec turbo run build)`);
    cpSync(dist, join(dest, 'packages', name, 'dist'), { recursive: true });
  }
  // pnpm publish rewrites `workspace:` ranges from the installed workspace links: install the copy
  // from the lockfile, out of the store this checkout already filled (no network, no scripts). The
  // store is named explicitly: pnpm picks one per filesystem, and the temp dir may be on another.
  const store = (await run('pnpm', ['store', 'path'], { timeoutMs: 30_000 }))
    .split('\n')
    .filter((l) => l.startsWith('/'))
    .pop();
  await run(
    'pnpm',
    [
      'install',
      '--offline',
      '--frozen-lockfile',
      '--ignore-scripts',
      '--filter',
      './packages/**',
      '--filter',
      './tools/test-support',
      ...(store ? ['--store-dir', store] : []),
    ],
    {
      cwd: dest,
      env: { CI: 'true' },
    },
  );
  return dest;
}

const changesetBin = join(root, 'node_modules', '@changesets', 'cli', 'bin.js');
const changeset = (workspace, args, extra = {}) => run(process.execPath, [changesetBin, ...args], { cwd: workspace, env: extra });

// --- the registry -----------------------------------------------------------------------------
function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}
/** The registry this machine's npm uses (stdout only: npm prints its warnings to stderr). */
const upstreamRegistry = () => {
  const r = spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', timeout: 30_000 });
  const url = r.status === 0 ? r.stdout.trim() : '';
  return /^https?:\/\/\S+$/.test(url) ? url : 'https://registry.npmjs.org/';
};

/**
 * Verdaccio on 127.0.0.1 with its config, storage and users under `dir`. @reconcile-loop/* is served
 * only from what was published to it (no uplink: a dependency on a package that exists only inside
 * the workspace is a 404, as on the public registry); everything else is proxied to the machine's
 * registry. Resolves once GET /-/ping answers; the returned stop() ends it within 10 s.
 */
async function startRegistry(dir) {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `storage: ${join(dir, 'storage')}
plugins: ${join(dir, 'plugins')}
web:
  enable: false
auth:
  htpasswd:
    file: ${join(dir, 'htpasswd')}
    max_users: 10
uplinks:
  upstream:
    url: ${upstreamRegistry()}
    timeout: 60s
packages:
  '${SCOPE}*':
    access: $all
    publish: $authenticated
    unpublish: $authenticated
  '**':
    access: $all
    publish: $authenticated
    proxy: upstream
middlewares:
  audit:
    enabled: false
server:
  keepAliveTimeout: 60
log: { type: stdout, format: pretty, level: warn }
listen: 127.0.0.1:${port}
`,
  );
  const bin = join(root, 'tools', 'registry', 'node_modules', 'verdaccio', 'bin', 'verdaccio');
  if (!existsSync(bin)) throw new Error('tools/registry has no verdaccio: run pnpm install');
  const child = spawn(process.execPath, [bin, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r(code ?? signal)));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    console.log(`registry: stopped (pid ${child.pid})`);
  };
  cleanups.push(stop);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode}) before answering:\n${log}`);
    try {
      if ((await fetch(`${url}/-/ping`, { signal: AbortSignal.timeout(2_000) })).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`verdaccio did not answer ${url}/-/ping within 30 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(
    `registry: verdaccio ${readJson(join(dirname(dirname(bin)), 'package.json')).version} at ${url} (pid ${child.pid})`,
  );
  return { url, log: () => log };
}

/** A user on the rehearsal registry (what `npm adduser` does); resolves to its token. */
async function addUser(url) {
  const name = 'rehearsal';
  const res = await fetch(`${url}/-/user/org.couchdb.user:${name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name,
      password: `rehearsal-${process.pid}-${Date.now()}`,
      type: 'user',
      roles: [],
      date: new Date().toISOString(),
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.json();
  if (!res.ok || typeof body.token !== 'string') throw new Error(`adduser on ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body.token;
}

/** An npmrc that publishes to `url` with `token` (npm and pnpm read it through npm_config_userconfig). */
function npmrc(dir, url, token) {
  const file = join(dir, 'npmrc');
  const host = url.replace(/^https?:/, '').replace(/\/?$/, '/');
  writeFileSync(
    file,
    `registry=${url.replace(/\/?$/, '/')}\n${token ? `${host}:_authToken=${token}\n` : ''}fund=false\naudit=false\nupdate-notifier=false\n`,
  );
  return file;
}

// --- publish ----------------------------------------------------------------------------------
/** `changeset publish` from `workspace` to `url`; returns what it says it published. */
async function publish(workspace, url, userconfig, { rehearsal }) {
  const args = ['publish'];
  if (opts.tag) args.push('--tag', opts.tag);
  // A rehearsal's copy is no git repository; the real run tags every published version.
  if (rehearsal) args.push('--no-git-tag');
  const out = await changeset(workspace, args, {
    npm_config_registry: url.replace(/\/?$/, '/'),
    npm_config_userconfig: userconfig,
    ...(opts.provenance ? { npm_config_provenance: 'true' } : {}),
  });
  // "packages published successfully:" then one name@version per line (changesets' logReleases).
  const section = out.split('packages published successfully:')[1]?.split(/Creating git tag|packages failed/)[0] ?? '';
  const published = [...section.matchAll(/(@reconcile-loop\/[\w-]+@\d+\.\d+\.\d+\S*)/g)].map((m) => m[1]);
  if (/packages failed to publish/.test(out)) throw new Error(`changeset publish failed:\n${out}`);
  return { out, published };
}

/** What the registry serves for each package: its latest (or --tag) version and that tarball's size in bytes. */
async function served(url, names) {
  const rows = [];
  for (const name of names) {
    const res = await fetch(`${url.replace(/\/$/, '')}/${name.replace('/', '%2f')}`, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw new Error(`${name}: the registry answers ${res.status}`);
    const doc = await res.json();
    const version = doc['dist-tags']?.[distTag];
    const tarball = doc.versions?.[version]?.dist?.tarball;
    if (!tarball) throw new Error(`${name}: no tarball for ${version}`);
    const bytes = (await (await fetch(tarball, { signal: AbortSignal.timeout(60_000) })).arrayBuffer()).byteLength;
    rows.push({ name, version, bytes });
  }
  return rows;
}

// --- consumers --------------------------------------------------------------------------------
const pathFor = new Map();
/** The PATH that runs Node `version` (and the pinned npm/pnpm under it), from scripts/runtime.sh. */
async function nodePath(version) {
  if (!pathFor.has(version)) {
    const out = await run('bash', ['-c', `. scripts/runtime.sh >/dev/null && rl_path_for ${version}`], { timeoutMs: 600_000 });
    pathFor.set(version, out.trim().split('\n').pop());
  }
  return pathFor.get(version);
}

/** The peers a user adds beside the packages (the READMEs say which), and tsx to run the TypeScript examples. */
function userDependencies() {
  const peers = new Set();
  for (const manifest of Object.values(publishedPackages(root))) {
    for (const [dep, range] of Object.entries(manifest.peerDependencies ?? {})) peers.add(`${dep}@${range}`);
  }
  const tsx = readJson(join(root, 'package.json')).devDependencies.tsx;
  return [...peers, `tsx@${tsx}`];
}

function newProject(dir, name) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  return dir;
}

/** Runs every marked example of every installed package's README in `project`; returns how many ran. */
async function runExamples(project, path, names) {
  let ran = 0;
  for (const name of names) {
    const readme = join(project, 'node_modules', name, 'README.md');
    if (!existsSync(readme)) throw new Error(`${name}: the installed package has no README.md`);
    const short = name.slice(SCOPE.length);
    const dir = join(project, 'examples', short);
    mkdirSync(dir, { recursive: true });
    for (const [i, example] of readmeExamples(readFileSync(readme, 'utf8')).entries()) {
      if (example.mode === 'install') continue; // the root README's, run by installCommands()
      if (example.mode === 'file') {
        writeFileSync(join(dir, example.file), example.code);
        continue;
      }
      const file = join(dir, `example-${i + 1}.ts`);
      writeFileSync(file, example.code);
      const where = `${name} README line ${example.line}`;
      try {
        if (example.kubeconfig) {
          writeFileSync(join(project, 'with-apiserver.mjs'), kubeconfigHarness);
          await run('node', ['with-apiserver.mjs', file, JSON.stringify(example.kubeconfig), String(EXAMPLE_MS)], {
            cwd: project,
            path,
            timeoutMs: EXAMPLE_MS + 15_000,
          });
        } else {
          await run('node', [join(project, 'node_modules', 'tsx', 'dist', 'cli.mjs'), file], {
            cwd: project,
            path,
            timeoutMs: EXAMPLE_MS,
          });
        }
      } catch (error) {
        throw new Error(`${where}: ${error.message}`);
      }
      ran++;
    }
  }
  return ran;
}

const npmInstall = (project, path, url, specs) =>
  run('npm', ['install', '--registry', url, '--prefer-online', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: project,
    path,
    env: { npm_config_userconfig: join(project, '.npmrc-none') },
  });

/** Every package by name with plain npm on Node `version`, then every README example. */
async function npmConsumer(work, url, version, names) {
  const path = await nodePath(version);
  const project = newProject(join(work, `consumer-npm-${version}`), `consumer-npm-${version.replaceAll('.', '-')}`);
  await npmInstall(project, path, url, [...names.map(spec), ...userDependencies()]);
  for (const name of names) {
    const installed = readJson(join(project, 'node_modules', name, 'package.json'));
    if (JSON.stringify(installed).includes('workspace:'))
      throw new Error(`${name}: the published manifest has a workspace: range`);
  }
  const ran = await runExamples(project, path, names);
  return `${names.length} packages by name, ${ran} README examples on node ${(await run('node', ['--version'], { path })).trim()}`;
}

/** The loop, the reflector, kube-client and testing by name with pnpm (primary Node), and their README examples. */
async function pnpmConsumer(work, url, version) {
  const path = await nodePath(version);
  const project = newProject(join(work, 'consumer-pnpm'), 'consumer-pnpm');
  // What the loop's CocoonSet example imports directly (pnpm's strict node_modules shows only these).
  const names = ['loop', 'reflector', 'kube-client', 'testing', 'k8s-types'].map((n) => SCOPE + n);
  await run(
    'pnpm',
    [
      'add',
      '--registry',
      url,
      '--cache-dir',
      join(work, 'pnpm-cache'),
      '--config.auto-install-peers=false',
      ...names.map(spec),
      ...userDependencies(),
    ],
    { cwd: project, path, env: { npm_config_userconfig: join(project, '.npmrc-none') } },
  );
  const ran = await runExamples(project, path, names);
  return `${names.length} packages by name, ${ran} README examples`;
}

/**
 * The root README's Install block, each command as printed with only `--registry URL` added, each in
 * a fresh project on the primary Node: every @reconcile-loop package it names must be installed.
 */
async function installCommands(work, url) {
  const path = await nodePath(env.NODE_PRIMARY);
  const blocks = readmeExamples(readFileSync(join(root, 'README.md'), 'utf8')).filter((e) => e.mode === 'install');
  const commands = blocks.flatMap((b) => b.commands);
  if (commands.length === 0) throw new Error('README.md has no <!-- rehearse: install --> block');
  for (const [i, command] of commands.entries()) {
    const project = newProject(join(work, `install-${i}`), `install-${i}`);
    const [tool, ...args] = command.split(/\s+/);
    await run(tool, [...args, '--registry', url], {
      cwd: project,
      path,
      env: {
        npm_config_userconfig: join(project, '.npmrc-none'),
        npm_config_prefer_online: 'true',
        npm_config_cache_dir: join(work, 'pnpm-cache'),
      },
    });
    for (const name of command.match(/@reconcile-loop\/[\w-]+/g) ?? []) {
      if (!existsSync(join(project, 'node_modules', name, 'package.json')))
        throw new Error(`\`${command}\` did not install ${name}`);
    }
  }
  return `${commands.length} commands`;
}

// --- the rehearsal's extra cases ----------------------------------------------------------------
/**
 * One leaf package released alone: a patch changeset for work-queue only. `changeset version` must
 * move work-queue and nothing else (its dependents declare `workspace:^`, published as `^0.x.y`,
 * which already admits the patch, so changesets leaves them alone); `changeset publish`
 * must publish exactly that; a consumer that installed only the loop gets it on `npm update`.
 */
async function singlePackage(workspace, work, url, userconfig) {
  const path = await nodePath(env.NODE_PRIMARY);
  const consumer = newProject(join(work, 'consumer-loop-only'), 'consumer-loop-only');
  await npmInstall(consumer, path, url, [`${SCOPE}loop`]);
  const leaf = () => readJson(join(consumer, 'node_modules', `${SCOPE}work-queue`, 'package.json')).version;
  const before = leaf();
  const versionsBefore = allVersions(workspace);
  writeFileSync(
    join(workspace, '.changeset', 'rehearsal-work-queue.md'),
    `---\n'${SCOPE}work-queue': patch\n---\n\nRehearsal: a patch of one leaf package.\n`,
  );
  await changeset(workspace, ['version']);
  const versionsAfter = allVersions(workspace);
  const moved = Object.keys(versionsAfter).filter((n) => versionsAfter[n] !== versionsBefore[n]);
  if (moved.join() !== `${SCOPE}work-queue`)
    throw new Error(`changeset version moved ${moved.join(', ') || 'nothing'}, want only ${SCOPE}work-queue`);
  const { published } = await publish(workspace, url, userconfig, { rehearsal: true });
  const want = `${SCOPE}work-queue@${versionsAfter[`${SCOPE}work-queue`]}`;
  if (published.join() !== want)
    throw new Error(`changeset publish published ${published.join(', ') || 'nothing'}, want only ${want}`);
  await run('npm', ['update', '--registry', url, '--prefer-online', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: consumer,
    path,
    env: { npm_config_userconfig: join(consumer, '.npmrc-none') },
  });
  const after = leaf();
  if (after !== versionsAfter[`${SCOPE}work-queue`])
    throw new Error(`npm update left work-queue at ${after}, want ${versionsAfter[`${SCOPE}work-queue`]}`);
  const loop = readJson(join(consumer, 'node_modules', `${SCOPE}loop`, 'package.json')).version;
  return `published only ${want}; a loop@${loop} consumer moved work-queue ${before} -> ${after} on npm update`;
}

/**
 * The faults the rehearsal exists to catch, each published as a prerelease of work-queue under its
 * own dist-tag (never `latest`) and installed by name in a fresh project: the install or the import
 * must fail, naming the fault.
 */
const faults = {
  'a missing file': (pkg) => rmSync(join(pkg, 'dist', 'index.cjs')),
  'a wrong exports entry': (pkg) => {
    const file = join(pkg, 'package.json');
    const m = readJson(file);
    m.publishConfig.exports['.'].import.default = './dist/queue.js';
    writeFileSync(file, JSON.stringify(m, null, 2));
  },
  'a dependency resolvable only inside the workspace': (pkg, workspace) => {
    // The private test-support package, linked as `pnpm add @reconcile-loop/test-support --workspace`
    // would: pnpm publish rewrites the range to ^0.0.0, which no registry serves.
    const file = join(pkg, 'package.json');
    const m = readJson(file);
    m.dependencies = { ...m.dependencies, [`${SCOPE}test-support`]: 'workspace:^' };
    writeFileSync(file, JSON.stringify(m, null, 2));
    symlinkSync(join(workspace, 'tools', 'test-support'), join(pkg, 'node_modules', '@reconcile-loop', 'test-support'));
  },
};
async function faultCase(workspace, work, url, userconfig, fault, index) {
  const path = await nodePath(env.NODE_PRIMARY);
  const pkg = join(work, `fault-${index}`);
  cpSync(join(workspace, 'packages', 'work-queue'), pkg, { recursive: true });
  const file = join(pkg, 'package.json');
  const m = readJson(file);
  m.version = `${m.version}-fault.${index}`;
  writeFileSync(file, JSON.stringify(m, null, 2));
  faults[fault](pkg, workspace);
  // Inside the copied workspace, so pnpm rewrites workspace: ranges as it does for a real publish.
  const inWorkspace = join(workspace, 'packages', `fault-${index}`);
  cpSync(pkg, inWorkspace, { recursive: true });
  try {
    await run('pnpm', ['publish', '--no-git-checks', '--tag', `fault-${index}`, '--registry', url], {
      cwd: inWorkspace,
      path,
      env: { npm_config_userconfig: userconfig },
    });
  } catch (error) {
    // pnpm itself refusing (e.g. a workspace: range it cannot resolve) is the fault caught too.
    return `refused at publish: ${error.message.split('\n').find((l) => /ERR|error/i.test(l)) ?? 'pnpm publish failed'}`;
  } finally {
    rmSync(inWorkspace, { recursive: true, force: true });
  }
  const consumer = newProject(join(work, `consumer-fault-${index}`), `consumer-fault-${index}`);
  try {
    await npmInstall(consumer, path, url, [`${SCOPE}work-queue@fault-${index}`]);
    writeFileSync(join(consumer, 'use.mjs'), `import { WorkQueue } from '${SCOPE}work-queue';\nnew WorkQueue().add('a');\n`);
    writeFileSync(join(consumer, 'use.cjs'), `const { WorkQueue } = require('${SCOPE}work-queue');\nnew WorkQueue().add('a');\n`);
    await run('node', ['use.mjs'], { cwd: consumer, path, timeoutMs: EXAMPLE_MS });
    await run('node', ['use.cjs'], { cwd: consumer, path, timeoutMs: EXAMPLE_MS });
  } catch (error) {
    const line = error.message.split('\n').find((l) => /E404|ERR_|Cannot find|not found|ENOENT|EUNSUPPORTEDPROTOCOL/i.test(l));
    return `caught: ${(line ?? error.message.split('\n')[0]).trim().slice(0, 160)}`;
  }
  throw new Error(`${fault}: published, installed by name and ran without an error`);
}

// --- main -------------------------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'rl-release-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
let failed = false;
try {
  let workspace = root;
  let url = opts.registry;
  let token = process.env.NODE_AUTH_TOKEN ?? process.env.NPM_TOKEN;
  const names = Object.values(publishedPackages(root)).map((m) => m.name);
  if (opts.rehearse) {
    workspace = await copyWorkspace(join(work, 'workspace'));
    await check('[release: rehearsal] changeset version cuts every package to a real version', async () => {
      const before = allVersions(workspace);
      await changeset(workspace, ['version']);
      const after = publishedPackages(workspace);
      const bad = Object.values(after).filter((m) => !/^\d+\.\d+\.\d+$/.test(m.version) || m.version === '0.0.0');
      if (bad.length) throw new Error(`no release version: ${bad.map((m) => `${m.name}@${m.version}`).join(', ')}`);
      const noLog = Object.keys(after).filter(
        (n) => before[SCOPE + n] !== after[n].version && !existsSync(join(workspace, 'packages', n, 'CHANGELOG.md')),
      );
      if (noLog.length) throw new Error(`moved without a CHANGELOG.md: ${noLog.join(', ')}`);
      const left = readdirSync(join(workspace, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
      if (left.length) throw new Error(`changesets left unconsumed: ${left.join(', ')}`);
      return Object.values(after)
        .map((m) => `${m.name.slice(SCOPE.length)}@${m.version}`)
        .join(' ');
    });
    url = (await startRegistry(join(work, 'registry'))).url;
    token = await addUser(url);
  }
  if (!url) throw new Error('no registry');
  const userconfig = npmrc(work, url, token);
  const pre = join(workspace, '.changeset', 'pre.json');
  distTag = opts.tag ?? (existsSync(pre) && readJson(pre).mode === 'pre' ? readJson(pre).tag : 'latest');
  let publishedCount = 0;
  await check('[release: rehearsal] changeset publish publishes every package', async () => {
    const { published } = await publish(workspace, url, userconfig, { rehearsal: opts.rehearse });
    if (opts.rehearse && published.length !== names.length)
      throw new Error(`published ${published.join(', ')}, want all ${names.length}`);
    publishedCount = published.length;
    return `${published.length} published under dist-tag ${distTag}${published.length ? `: ${published.join(' ')}` : ''}`;
  });
  if (!opts.rehearse && publishedCount === 0) {
    // Nothing new on the registry: what is there was verified when it was published.
    console.log('release: every version is on the registry already; nothing to publish or verify');
    throw Object.assign(new Error('nothing to publish'), { nothingToDo: true });
  }
  const rows = await served(url, names);
  console.log('\npackage                              version     tarball');
  for (const r of rows) console.log(`${r.name.padEnd(36)} ${r.version.padEnd(11)} ${(r.bytes / 1024).toFixed(1).padStart(7)} kB`);
  console.log(`${'total'.padEnd(48)} ${(rows.reduce((s, r) => s + r.bytes, 0) / 1024).toFixed(1).padStart(7)} kB\n`);
  for (const version of nodes) {
    await check(
      `[release: rehearsal] every package installs by name with npm and its README examples run on Node ${version.split('.')[0]}`,
      () => npmConsumer(work, url, version, names),
    );
  }
  await check('[release: rehearsal] the loop, reflector, kube-client, testing and k8s-types install by name with pnpm', () =>
    pnpmConsumer(work, url, env.NODE_PRIMARY),
  );
  // The Install lines name no tag: they install latest, which a prerelease leaves alone.
  if (distTag === 'latest') {
    await check('[release: install] the README Install commands work as printed against the registry', () =>
      installCommands(work, url),
    );
  }
  // In pre mode every version is a prerelease: the single-package and fault cases assume latest.
  if (opts.rehearse && distTag === 'latest') {
    await check(
      '[release: single package] a patch changeset for work-queue publishes only work-queue; a loop consumer gets it on npm update',
      () => singlePackage(workspace, work, url, userconfig),
    );
    for (const [index, fault] of Object.keys(faults).entries()) {
      await check(`[release: rehearsal] ${fault} fails the rehearsal`, () =>
        faultCase(workspace, work, url, userconfig, fault, index),
      );
    }
  }
  if (opts.rehearse && opts.serve) {
    console.log(`\nregistry: serving ${url}/ until Ctrl-C (try the README Install commands with --registry ${url}/)`);
    await new Promise(() => {}); // the signal handlers stop the registry and exit
  }
} catch (error) {
  failed = error.nothingToDo !== true;
  // A failure outside a case (the registry, the copy) is reported as one; a case's is reported already.
  if (failed && !results.some((r) => r.status === 'failed')) {
    console.error(`release: ${error.stack ?? error}`);
    results.push({ title: 'release: setup', status: 'failed', message: String(error.message) });
  }
} finally {
  await cleanup();
  writeReport();
}
const nfailed = results.filter((r) => r.status === 'failed').length;
console.log(
  `release${opts.rehearse ? ' rehearsal' : ''}: ${results.length - nfailed} passed, ${nfailed} failed (${Math.round((Date.now() - started) / 1000)} s)`,
);
process.exit(failed || nfailed ? 1 : 0);
