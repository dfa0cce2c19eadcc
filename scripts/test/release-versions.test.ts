import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..');
const changesetBin = join(repoRoot, 'node_modules', '@changesets', 'cli', 'bin.js');

/**
 * The repository's own .changeset/config.json on a three-package workspace shaped like ours: a leaf
 * (work-queue), a package depending on it (loop) and one depending on that (metrics), with the ranges
 * the real packages declare. A change to either (`workspace:*`, a `fixed` group, bumping dependents
 * always) makes a leaf's patch republish its dependents, and fails here. Only `changelog` is switched off (its module resolves from the repository's
 * node_modules, which the fixture has not); every versioning rule is the repository's.
 */
/** The range the repository's `from` package declares on `to` (`workspace:^` today; `workspace:*` would pin exact versions). */
const range = (from: string, to: string): string =>
  JSON.parse(readFileSync(join(repoRoot, 'packages', from, 'package.json'), 'utf8')).dependencies[`@reconcile-loop/${to}`];

describe('release versions', () => {
  let dir: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const pkg = (name: string, deps: Record<string, string> = {}) =>
    write(
      `packages/${name}/package.json`,
      JSON.stringify({ name: `@reconcile-loop/${name}`, version: '0.1.0', dependencies: deps }, null, 2),
    );
  const version = (name: string) => JSON.parse(readFileSync(join(dir, 'packages', name, 'package.json'), 'utf8')).version;
  const changesetVersion = (bumps: Record<string, 'patch' | 'minor'>) => {
    const front = Object.entries(bumps)
      .map(([name, bump]) => `'@reconcile-loop/${name}': ${bump}`)
      .join('\n');
    write('.changeset/one-change.md', `---\n${front}\n---\n\nA change.\n`);
    const r = spawnSync(process.execPath, [changesetBin, 'version'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    return { workQueue: version('work-queue'), loop: version('loop'), metrics: version('metrics') };
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-release-versions-'));
    const config = JSON.parse(readFileSync(join(repoRoot, '.changeset', 'config.json'), 'utf8'));
    write('.changeset/config.json', JSON.stringify({ ...config, changelog: false }, null, 2));
    write('package.json', JSON.stringify({ name: 'fixture', private: true, packageManager: 'pnpm@10.34.8' }));
    write('pnpm-workspace.yaml', 'packages:\n  - packages/*\n');
    pkg('work-queue');
    pkg('loop', { '@reconcile-loop/work-queue': range('loop', 'work-queue') });
    pkg('metrics', { '@reconcile-loop/loop': range('metrics', 'loop') });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('[release: single package] a patch changeset for a leaf moves only the leaf', () => {
    // loop's published range ^0.1.0 admits 0.1.1: republishing loop (and metrics) would be noise.
    expect(changesetVersion({ 'work-queue': 'patch' })).toEqual({ workQueue: '0.1.1', loop: '0.1.0', metrics: '0.1.0' });
  });

  it('[release: single package] a minor (breaking at 0.x) bump of a leaf moves the packages whose range must move', () => {
    // ^0.1.0 excludes 0.2.0: loop must be republished with ^0.2.0; metrics' ^0.1.0 still admits loop 0.1.1.
    expect(changesetVersion({ 'work-queue': 'minor' })).toEqual({ workQueue: '0.2.0', loop: '0.1.1', metrics: '0.1.0' });
  });
});
