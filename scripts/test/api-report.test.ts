import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', 'api-report.mjs');

function run(root: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [script, '--root', root, ...args], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A built package as the script sees it: a package.json with exports and a dist/index.d.ts. */
function writePackage(root: string, dir: string, dts: string, exportsMap?: Record<string, unknown>) {
  const pkg = join(root, 'packages', dir);
  mkdirSync(join(pkg, 'dist'), { recursive: true });
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: `@fixture/${dir}`,
      type: 'module',
      exports: exportsMap ?? {
        '.': { import: { types: './dist/index.d.ts', default: './dist/index.js' } },
        './package.json': './package.json',
      },
    }),
  );
  writeFileSync(join(pkg, 'dist', 'index.d.ts'), dts);
}

const base = `/** Doc comments never reach the report. */
interface Options {
    /** the delay */
    delayMs: number;
}
declare function start(options: Options): Promise<void>;
declare const VERSION: "1";
declare class Runner {
    #private;
    run(key: string): void;
}
type Hidden = { readonly n: number };
interface UsesHidden { h: Hidden }
export { type Options, Runner, type UsesHidden, VERSION, start };
`;

describe('api-report', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rl-api-report-'));
    writePackage(root, 'alpha', base);
    writePackage(root, 'beta', 'declare function beta(x: number): number;\nexport { beta };\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('[api report: write] writes a sorted report of names, kinds and signatures without doc comments', () => {
    const w = run(root, '--write');
    expect(w.code, w.out).toBe(0);
    expect(w.out).toContain('@fixture/alpha .: 3 runtime values, 5 exported names');
    const report = readFileSync(join(root, 'packages/alpha/api/index.api.md'), 'utf8');
    expect(report).not.toContain('Doc comments');
    expect(report).not.toContain('the delay');
    const names = [...report.matchAll(/^### `(\w+)`/gm)].map((m) => m[1]);
    expect(names).toEqual(['Options', 'Runner', 'UsesHidden', 'VERSION', 'start', 'Hidden']);
    expect(report).toContain('### `start` (function; runtime value)');
    expect(report).toContain('function start(options: Options): Promise<void>;');
    expect(report).toContain('### `Options` (interface; type only)');
    expect(report).toMatch(/## Referenced, not exported\n\n### `Hidden` \(type alias\)/);
  });

  it('[api report: check] passes on an unchanged tree and fails, naming the package, once an export changes', () => {
    expect(run(root, '--write').code).toBe(0);
    const ok = run(root, '--check');
    expect(ok.code, ok.out).toBe(0);

    // A changed parameter type in alpha and a new export in beta.
    writePackage(root, 'alpha', base.replace('run(key: string)', 'run(key: string | number)'));
    writePackage(root, 'beta', 'declare function beta(x: number): number;\ndeclare const gamma = 1;\nexport { beta, gamma };\n');
    const bad = run(root, '--check');
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('@fixture/alpha (packages/alpha)');
    expect(bad.out).toContain('@fixture/beta (packages/beta)');
    expect(bad.out).toContain('-     run(key: string): void;');
    expect(bad.out).toContain('+     run(key: string | number): void;');
    expect(bad.out).toContain('+ const gamma: 1;');
    expect(bad.out).toContain('run `pnpm api:report` and commit the report with a changeset');

    // A doc-comment edit alone changes nothing.
    writePackage(root, 'alpha', base.replace('the delay', 'the delay, in ms'));
    writePackage(root, 'beta', 'declare function beta(x: number): number;\nexport { beta };\n');
    expect(run(root, '--check').code).toBe(0);
  });

  it('[api report: check] reports every subpath entry, and a missing report fails the check', () => {
    writePackage(root, 'beta', 'declare function beta(x: number): number;\nexport { beta };\n', {
      '.': { import: { types: './dist/index.d.ts' } },
      './internal': { import: { types: './dist/internal.d.ts' } },
    });
    writeFileSync(join(root, 'packages/beta/dist/internal.d.ts'), 'type Secret = string;\nexport type { Secret };\n');
    const bad = run(root, '--check');
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('packages/beta/api/internal.api.md: no checked-in report');
    expect(run(root, '--write').code).toBe(0);
    expect(readFileSync(join(root, 'packages/beta/api/internal.api.md'), 'utf8')).toContain('type Secret = string;');
    const summary = run(root, '--summary');
    expect(summary.out).toContain('| @fixture/beta (., ./internal) | 1 | 1 | 2 |');
    expect(summary.out).toContain('| **total** | **4** | **3** | **7** |');
  });

  it('[api report: summary] counts a name re-exported from another workspace package once, at its home', () => {
    mkdirSync(join(root, 'node_modules/@fixture'), { recursive: true });
    symlinkSync(join(root, 'packages/alpha'), join(root, 'node_modules/@fixture/alpha'), 'dir');
    writePackage(
      root,
      'gamma',
      "export { start, type Options } from '@fixture/alpha';\ndeclare const own: 1;\nexport { own };\n",
    );
    const summary = run(root, '--summary');
    expect(summary.code, summary.out).toBe(0);
    // gamma: 3 names at its door, 2 of them alpha's: 1 own name.
    expect(summary.out).toContain('| @fixture/gamma | 2 | 1 | 3 | 2 | 1 |');
    expect(summary.out).toContain('| **total** | **6** | **3** | **9** | **2** | **7** |');
  });

  it('[api report: check] fails when a declaration file is missing (packages not built)', () => {
    rmSync(join(root, 'packages/beta/dist'), { recursive: true });
    const r = run(root, '--check');
    expect(r.code).toBe(1);
    expect(r.out).toContain('pnpm exec turbo run build');
  });
});

/**
 * The names one checked-in report exports (`### \`Name\` (kind…)` headings above "Referenced, not
 * exported"): how many, how many of them exist at run time, and how many are declared in another
 * workspace package (`; from @scope/pkg`), which the summary counts at their home only.
 */
function reportCounts(report: string) {
  const exported = report.split('\n## Referenced, not exported')[0] ?? '';
  const headings = [...exported.matchAll(/^### `[^`]+` \(([^)]*)\)$/gm)].map((m) => m[1] ?? '');
  return {
    names: headings.length,
    values: headings.filter((h) => h.includes('runtime value')).length,
    reexported: headings.filter((h) => /; from @/.test(h)).length,
  };
}

describe("this repository's public surface", () => {
  it('[api report: budget] the checked-in reports hold at most 316 own names (a third below the 474 issue 22 started from) plus at most 15 for each package added since, and at most 30 runtime values per front door', () => {
    const packages = join(import.meta.dirname, '..', '..', 'packages');
    // Packages issue 22 did not count: each brings its own surface, held to 15 own names, and the
    // total's bar rises by that much, so a feature package cannot spend the others' reduction.
    const since = ['manager', 'sharding'];
    let own = 0;
    const doors: string[] = [];
    const overNew: string[] = [];
    for (const pkg of readdirSync(packages)) {
      let reports: string[];
      try {
        reports = readdirSync(join(packages, pkg, 'api')).filter((f) => f.endsWith('.api.md'));
      } catch {
        continue; // a folder without reports (none today: --check fails on a missing one)
      }
      let ownHere = 0;
      for (const file of reports) {
        const counts = reportCounts(readFileSync(join(packages, pkg, 'api', file), 'utf8'));
        ownHere += counts.names - counts.reexported;
        own += counts.names - counts.reexported;
        if (file === 'index.api.md' && counts.values > 30) doors.push(`${pkg}: ${counts.values} runtime values`);
      }
      if (since.includes(pkg) && ownHere > 15) overNew.push(`${pkg}: ${ownHere} own names`);
    }
    expect(doors).toEqual([]);
    expect(overNew).toEqual([]);
    expect(own).toBeGreaterThan(100); // the reports were found and read
    expect(own).toBeLessThanOrEqual(316 + 15 * since.length);
    // The counter itself: a re-export is not an own name; only runtime values count as values.
    const fixture = [
      '### `a` (function; runtime value)',
      '### `B` (interface; type only; from @reconcile-loop/primitives)',
      '### `C` (interface; type only)',
      '## Referenced, not exported',
      '### `D` (interface)',
    ].join('\n');
    expect(reportCounts(fixture)).toEqual({ names: 3, values: 1, reexported: 1 });
  });
});
