import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', 'release-metadata.mjs');
const repoRoot = join(import.meta.dirname, '..', '..');

function run(dir: string) {
  const r = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A package as `pnpm pack` publishes it: what the real work-queue package.json says, after publishConfig. */
function goodManifest(): Record<string, unknown> {
  return {
    name: '@reconcile-loop/work-queue',
    version: '0.1.0',
    description: 'Insertion-ordered dedup queue with per-key exclusion.',
    license: 'Apache-2.0',
    repository: {
      type: 'git',
      url: 'git+https://github.com/reconcile-loop/reconcile-loop.git',
      directory: 'packages/work-queue',
    },
    homepage: 'https://github.com/reconcile-loop/reconcile-loop/tree/main/packages/work-queue#readme',
    bugs: { url: 'https://github.com/reconcile-loop/reconcile-loop/issues' },
    keywords: ['kubernetes'],
    type: 'module',
    sideEffects: false,
    exports: {
      '.': { import: { types: './dist/index.d.ts', default: './dist/index.js' } },
      './package.json': './package.json',
    },
    files: ['dist', 'README.md', 'LICENSE'],
    publishConfig: { access: 'public' },
  };
}

describe('release-metadata', () => {
  let dir: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const manifest = (m: Record<string, unknown>) => write('package.json', JSON.stringify(m, null, 2));
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-release-metadata-'));
    manifest(goodManifest());
    write('README.md', '# work-queue\n');
    write('LICENSE', 'Apache License\n');
    write('dist/index.js', 'export {};\n');
    write('dist/index.d.ts', 'export {};\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('[release: metadata] a complete package passes', () => {
    const r = run(dir);
    expect(r.out).toContain('1 package(s) ok');
    expect(r.code).toBe(0);
  });

  it('[release: metadata] every missing field fails, by name', () => {
    for (const field of ['repository', 'homepage', 'bugs', 'description', 'keywords', 'license', 'files', 'sideEffects']) {
      const m = goodManifest();
      delete m[field];
      manifest(m);
      const r = run(dir);
      expect(r.code, field).toBe(1);
      expect(r.out, field).toMatch(new RegExp(`${field} is`));
    }
  });

  it('[release: metadata] a repository URL or directory other than the one every package names fails', () => {
    manifest({
      ...goodManifest(),
      repository: { type: 'git', url: 'git+https://example.com/x.git', directory: 'packages/work-queue' },
    });
    expect(run(dir).code).toBe(1);
    manifest({
      ...goodManifest(),
      repository: { type: 'git', url: 'git+https://github.com/reconcile-loop/reconcile-loop.git', directory: 'packages/loop' },
    });
    const r = run(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain('"directory":"packages/work-queue"');
  });

  it('[release: metadata] a tarball shipping tests, fixtures or sources fails; so does a missing LICENSE', () => {
    for (const path of ['dist/test/x.js', 'test/fixtures/pod.json', 'dist/queue.test.js', 'src/index.ts', 'tsconfig.json']) {
      write(path, 'x');
      const r = run(dir);
      expect(r.code, path).toBe(1);
      expect(r.out, path).toContain(path);
      rmSync(join(dir, path));
    }
    rmSync(join(dir, 'LICENSE'));
    const r = run(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain('no LICENSE');
  });

  it('[release: metadata] an exports entry naming a file the tarball lacks fails', () => {
    rmSync(join(dir, 'dist/index.d.ts'));
    const r = run(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain('./dist/index.d.ts');
  });

  it('[release: metadata] every published package in packages/* declares the fields in its package.json', () => {
    // The tarball check runs in turbo lint; this one holds the sources to the same URL and directory.
    for (const name of readdirSync(join(repoRoot, 'packages'))) {
      const m = JSON.parse(readFileSync(join(repoRoot, 'packages', name, 'package.json'), 'utf8'));
      expect(m.private, name).not.toBe(true);
      expect(m.repository, name).toEqual({
        type: 'git',
        url: 'git+https://github.com/reconcile-loop/reconcile-loop.git',
        directory: `packages/${name}`,
      });
      expect(m.homepage, name).toBe(`https://github.com/reconcile-loop/reconcile-loop/tree/main/packages/${name}#readme`);
      expect(m.bugs, name).toEqual({ url: 'https://github.com/reconcile-loop/reconcile-loop/issues' });
      expect(m.files, name).toContain('LICENSE');
    }
  });
});
