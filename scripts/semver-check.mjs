#!/usr/bin/env node
// Semver from the public API reports: every change to packages/<pkg>/api/*.api.md since the last
// release needs a pending changeset for <pkg> whose bump is at least what the change is.
//
//   node scripts/semver-check.mjs [--root DIR] [--base REF]
//
// The last release is the newest commit that touched a packages/*/CHANGELOG.md (only `changeset
// version` writes those); before the first release it is the empty tree, so every report is new.
// --base names another commit. The pending changesets are the .changeset/*.md of the work tree.
//
// What a change needs (one export is one `### \`name\`` section of a report):
//   an export added                          -> patch at 0.x, minor from 1.0
//   an export removed or its section changed,
//   or a whole report (entry point) removed  -> minor at 0.x (the breaking bump there), major from 1.0
// A changed section counts as incompatible even when it only widens a type: the report cannot tell,
// and at 0.x a minor costs nothing. Runs in CI's build cell after `api-report.mjs --check`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({ options: { root: { type: 'string' }, base: { type: 'string' } } });
const root = resolve(opts.root ?? join(import.meta.dirname, '..'));
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const RANK = { none: 0, patch: 1, minor: 2, major: 3 };

function git(args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function lastRelease() {
  if (opts.base) return opts.base;
  const sha = git(['log', '-1', '--format=%H', '--', 'packages/*/CHANGELOG.md']).trim();
  return sha || EMPTY_TREE;
}

/** A report as export name -> its section text (heading and declaration). */
function sections(text) {
  const out = new Map();
  let name;
  for (const line of text.split('\n')) {
    const heading = /^### `([^`]+)`/.exec(line);
    if (heading) {
      name = heading[1];
      out.set(name, `${line}\n`);
    } else if (line.startsWith('## ')) {
      name = undefined;
    } else if (name !== undefined) {
      out.set(name, `${out.get(name)}${line}\n`);
    }
  }
  for (const [key, value] of out) out.set(key, value.trim());
  return out;
}

/** The pending changesets' bump per package name (the highest one wins, as in `changeset version`). */
function pendingBumps() {
  const bumps = new Map();
  const dir = join(root, '.changeset');
  if (!existsSync(dir)) return bumps;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'README.md')) {
    const front = /^---\n([\s\S]*?)\n---/.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? '';
    for (const m of front.matchAll(/^\s*["']?([^"':\s]+)["']?\s*:\s*(patch|minor|major)\s*$/gm)) {
      if (RANK[m[2]] > RANK[bumps.get(m[1])?.bump ?? 'none']) bumps.set(m[1], { bump: m[2], file });
    }
  }
  return bumps;
}

const base = lastRelease();
const baseFiles = new Set(git(['ls-tree', '-r', '--name-only', base, '--', 'packages']).split('\n').filter(Boolean));
const bumps = pendingBumps();
const problems = [];
let checked = 0;
for (const pkg of readdirSync(join(root, 'packages')).sort()) {
  const manifestPath = join(root, 'packages', pkg, 'package.json');
  if (!existsSync(manifestPath)) continue;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  if (manifest.private) continue;
  const apiDir = join(root, 'packages', pkg, 'api');
  const now = existsSync(apiDir) ? readdirSync(apiDir).filter((f) => f.endsWith('.api.md')) : [];
  const before = [...baseFiles]
    .filter((f) => f.startsWith(`packages/${pkg}/api/`) && f.endsWith('.api.md'))
    .map((f) => f.split('/').pop());
  const added = [];
  const broken = [];
  for (const file of new Set([...now, ...before])) {
    const oldText = before.includes(file) ? git(['show', `${base}:packages/${pkg}/api/${file}`]) : undefined;
    const newText = now.includes(file) ? readFileSync(join(apiDir, file), 'utf8') : undefined;
    if (newText === undefined) {
      broken.push(`${file} removed`);
      continue;
    }
    const oldSections = sections(oldText ?? '');
    const newSections = sections(newText);
    for (const [name, text] of oldSections) {
      if (!newSections.has(name)) broken.push(`${file}: ${name} removed`);
      else if (newSections.get(name) !== text) broken.push(`${file}: ${name} changed`);
    }
    for (const name of newSections.keys()) if (!oldSections.has(name)) added.push(`${file}: ${name} added`);
  }
  checked++;
  if (!added.length && !broken.length) continue;
  const atLeastOne = !/^0\./.test(manifest.version);
  const need = broken.length ? (atLeastOne ? 'major' : 'minor') : atLeastOne ? 'minor' : 'patch';
  const have = bumps.get(manifest.name);
  const what = [...broken, ...added];
  const shown = `${what.slice(0, 5).join('; ')}${what.length > 5 ? `; and ${what.length - 5} more` : ''}`;
  if (!have) {
    problems.push(
      `${manifest.name}: its API report changed since ${base.slice(0, 10)} (${shown}) but no pending changeset names it; add one (pnpm changeset) with at least a ${need} bump`,
    );
  } else if (RANK[have.bump] < RANK[need]) {
    problems.push(
      `${manifest.name}@${manifest.version}: ${broken.length ? 'a removal or incompatible change' : 'an addition'} (${shown}) needs at least a ${need} bump; the pending changesets give only ${have.bump} (${have.file})`,
    );
  }
}
for (const p of problems) console.error(`semver-check: ${p}`);
console.log(
  `semver-check: ${checked} packages against ${base === EMPTY_TREE ? 'the empty tree (never released)' : base.slice(0, 10)}, ${problems.length} problem(s)`,
);
process.exit(problems.length ? 1 : 0);
