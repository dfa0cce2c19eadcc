#!/usr/bin/env node
// Release metadata check, run on a package exactly as it would be published (the extracted tarball's
// package/ directory): every field npm, provenance and a user's tooling read is there and says the
// same thing in every package, and the tarball ships what users need and nothing else.
//
//   node scripts/release-metadata.mjs <extracted-package-dir>...   exit 1 and one line per problem
//
// scripts/lint-package.mjs runs it on every package's packed tarball in CI's build cell (turbo lint).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The one repository URL every package names (npm provenance checks `repository.url` against the forge). */
export const REPOSITORY_URL = 'https://github.com/reconcile-loop/reconcile-loop';
const SCOPE = '@reconcile-loop/';

/** Paths a published tarball must never hold: tests, fixtures, sources, build configuration. */
const FORBIDDEN = [
  [/(^|\/)(test|tests|__tests__|spec)\//, 'a test directory'],
  [/(^|\/)(fixtures?|__fixtures__|testdata)\//, 'a fixture directory'],
  [/\.(test|spec|bench)\.[cm]?[jt]sx?$/, 'a test file'],
  [/^src\//, 'the TypeScript sources (the exports point at dist/)'],
  [/(^|\/)tsconfig[^/]*\.json$|(^|\/)tsup\.config\.[cm]?ts$|\.tsbuildinfo$/, 'build configuration'],
  [/(^|\/)node_modules\//, 'node_modules'],
];

function listFiles(dir, base = dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...listFiles(path, base));
    else out.push(relative(base, path).split('\\').join('/'));
  }
  return out;
}

/**
 * The problems of one published package: `manifest` is its package.json as packed, `files` the
 * tarball's paths relative to package/. An empty list means it may be published.
 */
export function releaseProblems(manifest, files) {
  const problems = [];
  const need = (ok, what) => {
    if (!ok) problems.push(what);
  };
  const short = typeof manifest.name === 'string' && manifest.name.startsWith(SCOPE) ? manifest.name.slice(SCOPE.length) : '';
  need(short !== '', `name ${JSON.stringify(manifest.name)} is not in the ${SCOPE} scope`);
  need(manifest.private !== true, 'private: true (a published package cannot be private)');
  need(
    typeof manifest.version === 'string' && /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(manifest.version),
    `version ${JSON.stringify(manifest.version)} is not a semver version`,
  );
  need(typeof manifest.description === 'string' && manifest.description.length >= 20, 'description is missing or too short');
  need(
    Array.isArray(manifest.keywords) && manifest.keywords.length > 0 && manifest.keywords.every((k) => typeof k === 'string'),
    'keywords is missing or empty',
  );
  need(manifest.license === 'Apache-2.0', `license is ${JSON.stringify(manifest.license)}, want "Apache-2.0"`);
  const repo = manifest.repository;
  need(
    typeof repo === 'object' &&
      repo !== null &&
      repo.type === 'git' &&
      repo.url === `git+${REPOSITORY_URL}.git` &&
      repo.directory === `packages/${short}`,
    `repository is ${JSON.stringify(repo)}, want {"type":"git","url":"git+${REPOSITORY_URL}.git","directory":"packages/${short}"}`,
  );
  need(
    manifest.homepage === `${REPOSITORY_URL}/tree/main/packages/${short}#readme`,
    `homepage is ${JSON.stringify(manifest.homepage)}, want ${REPOSITORY_URL}/tree/main/packages/${short}#readme`,
  );
  need(
    manifest.bugs?.url === `${REPOSITORY_URL}/issues`,
    `bugs is ${JSON.stringify(manifest.bugs)}, want {"url":"${REPOSITORY_URL}/issues"}`,
  );
  need(
    Array.isArray(manifest.files) && manifest.files.length > 0,
    'files is missing (without it npm ships everything not ignored)',
  );
  need(
    typeof manifest.sideEffects === 'boolean' || Array.isArray(manifest.sideEffects),
    'sideEffects is missing (false when importing it runs nothing but definitions)',
  );
  need(
    manifest.publishConfig?.access === 'public',
    'publishConfig.access is not "public" (a scoped package is private by default)',
  );
  for (const file of ['package.json', 'README.md', 'LICENSE']) need(files.includes(file), `the tarball has no ${file}`);
  for (const file of files) {
    for (const [pattern, what] of FORBIDDEN) if (pattern.test(file)) problems.push(`the tarball ships ${what}: ${file}`);
  }
  // Every path `exports` names (per condition) must be in the tarball: a wrong entry fails here, not at a user's import.
  const targets = [];
  const walk = (node) => {
    if (typeof node === 'string') targets.push(node);
    else if (node && typeof node === 'object') for (const value of Object.values(node)) walk(value);
  };
  walk(manifest.exports);
  for (const key of ['main', 'module', 'types']) if (typeof manifest[key] === 'string') targets.push(manifest[key]);
  for (const target of new Set(targets)) {
    const path = target.replace(/^\.\//, '');
    need(files.includes(path), `exports/main/types name ${target}, which the tarball does not hold`);
  }
  return problems;
}

/** The problems of an extracted package directory (package/ of a tarball). */
export function checkExtracted(dir) {
  if (!existsSync(join(dir, 'package.json'))) return [`${dir} has no package.json`];
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return releaseProblems(manifest, listFiles(dir));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dirs = process.argv.slice(2);
  if (dirs.length === 0) {
    console.error('usage: node scripts/release-metadata.mjs <extracted-package-dir>...');
    process.exit(2);
  }
  let failed = 0;
  for (const dir of dirs) {
    const problems = checkExtracted(dir);
    const name = existsSync(join(dir, 'package.json')) ? JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name : dir;
    for (const problem of problems) console.error(`release metadata: ${name}: ${problem}`);
    if (problems.length) failed++;
  }
  if (failed) process.exit(1);
  console.log(`release metadata: ${dirs.length} package(s) ok`);
}
