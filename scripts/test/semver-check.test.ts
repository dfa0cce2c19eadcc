import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', 'semver-check.mjs');

const report = (...exports: [string, string][]) =>
  `# API report: @reconcile-loop/work-queue \`.\`\n\nRuntime values: ${exports.length}.\n\n## Exports\n\n${exports
    .map(([name, decl]) => `### \`${name}\` (class; runtime value)\n\n\`\`\`ts\n${decl}\n\`\`\`\n`)
    .join('\n')}`;
const queue: [string, string] = ['WorkQueue', 'class WorkQueue<K> {\n    add(key: K): void;\n}'];
const stopped: [string, string] = ['isQueueStopped', 'function isQueueStopped(error: unknown): boolean;'];

describe('semver-check', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const git = (...args: string[]) => {
    const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
  };
  const run = () => {
    const r = spawnSync(process.execPath, [script, '--root', root], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  };
  const changeset = (bump: string) =>
    write('.changeset/a-change.md', `---\n'@reconcile-loop/work-queue': ${bump}\n---\n\nA change.\n`);
  /** The last release: package at `version` with both exports, and its CHANGELOG.md (what `changeset version` writes). */
  const release = (version: string) => {
    write('packages/work-queue/package.json', JSON.stringify({ name: '@reconcile-loop/work-queue', version }));
    write('packages/work-queue/api/index.api.md', report(queue, stopped));
    write('packages/work-queue/CHANGELOG.md', `# @reconcile-loop/work-queue\n\n## ${version}\n`);
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', `release ${version}`);
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rl-semver-check-'));
    git('init', '-q');
    write('.changeset/config.json', '{}');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('[release: semver check] an unchanged report passes without a changeset', () => {
    release('0.1.0');
    const r = run();
    expect(r.out).toContain('0 problem(s)');
    expect(r.code).toBe(0);
  });

  it('[release: semver check] a changed API report without a changeset for the package fails', () => {
    release('0.1.0');
    write('packages/work-queue/api/index.api.md', report(queue, stopped, ['drain', 'function drain(): void;']));
    const r = run();
    expect(r.code).toBe(1);
    expect(r.out).toContain('no pending changeset names it');
    expect(r.out).toContain('drain added');
    changeset('patch');
    expect(run().code).toBe(0);
  });

  it('[release: semver check] a removal or incompatible change with only a patch changeset fails at 0.x; minor passes', () => {
    release('0.1.0');
    write('packages/work-queue/api/index.api.md', report(queue));
    changeset('patch');
    let r = run();
    expect(r.code).toBe(1);
    expect(r.out).toContain('isQueueStopped removed');
    expect(r.out).toContain('needs at least a minor bump');
    write(
      'packages/work-queue/api/index.api.md',
      report(['WorkQueue', 'class WorkQueue<K> {\n    add(key: K, at: number): void;\n}'], stopped),
    );
    r = run();
    expect(r.code).toBe(1);
    expect(r.out).toContain('WorkQueue changed');
    changeset('minor');
    expect(run().code).toBe(0);
  });

  it('[release: semver check] from 1.0 a removal needs major and an addition needs minor', () => {
    release('1.2.0');
    write('packages/work-queue/api/index.api.md', report(queue));
    changeset('minor');
    expect(run().out).toContain('needs at least a major bump');
    write('packages/work-queue/api/index.api.md', report(queue, stopped, ['drain', 'function drain(): void;']));
    changeset('patch');
    const r = run();
    expect(r.code).toBe(1);
    expect(r.out).toContain('an addition');
    expect(r.out).toContain('needs at least a minor bump');
  });

  it('[release: semver check] before the first release every report needs a changeset', () => {
    write('packages/work-queue/package.json', JSON.stringify({ name: '@reconcile-loop/work-queue', version: '0.0.0' }));
    write('packages/work-queue/api/index.api.md', report(queue));
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'initial');
    const r = run();
    expect(r.code).toBe(1);
    expect(r.out).toContain('the empty tree');
    changeset('minor');
    expect(run().code).toBe(0);
  });
});
