import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', 'layering-check.mjs');

function run(root: string) {
  const r = spawnSync(process.execPath, [script, '--root', root], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('layering check', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const manifest = (name: string, dependencies: Record<string, string> = {}, peerDependencies: Record<string, string> = {}) =>
    write(`packages/${name}/package.json`, JSON.stringify({ name: `@reconcile-loop/${name}`, dependencies, peerDependencies }));
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rl-layering-'));
    write('ARCHITECTURE.md', '# A\n\n```layers\nprimitives:\nloop: primitives\nkube: primitives | zod\n```\n');
    manifest('primitives');
    manifest('loop', { '@reconcile-loop/primitives': 'workspace:^' });
    manifest('kube', { '@reconcile-loop/primitives': 'workspace:^' }, { zod: '^4' });
    write('packages/primitives/src/index.ts', 'export const x = 1;\n');
    write('packages/loop/src/index.ts', "export { run } from './run.js';\n");
    write(
      'packages/loop/src/run.ts',
      "import { x } from '@reconcile-loop/primitives';\nimport { setTimeout } from 'node:timers';\nexport const run = () => x;\n",
    );
    write('packages/kube/src/index.ts', "import type { z } from 'zod';\nexport type Z = z.ZodType;\n");
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('[layering: check] passes a tree within its declared layers', () => {
    const r = run(root);
    expect(r.out).toContain('3 packages within');
    expect(r.code).toBe(0);
  });

  it('[layering: check] fails on a dependency, a peer or an import beyond the layer, and on a file importing its own index', () => {
    manifest(
      'loop',
      { '@reconcile-loop/primitives': 'workspace:^', '@reconcile-loop/kube': 'workspace:^' },
      { 'prom-client': '^15' },
    );
    write(
      'packages/loop/src/health.ts',
      "import { Z } from '@reconcile-loop/kube';\nimport { run } from './index.js';\nexport const h = run;\n",
    );
    const r = run(root);
    expect(r.code).toBe(1);
    expect(r.out).toContain('loop: package.json dependencies has @reconcile-loop/kube');
    expect(r.out).toContain('loop: package.json peerDependencies has prom-client');
    expect(r.out).toContain('packages/loop/src/health.ts: imports @reconcile-loop/kube, which the loop layer does not allow');
    expect(r.out).toContain("packages/loop/src/health.ts: imports its own package's index");
  });

  it('[layering: folders] fails on a run-time import a folder may not make, and lets type-only imports and declared paths through', () => {
    write(
      'ARCHITECTURE.md',
      '# A\n\n```layers\nprimitives:\nloop: primitives\nkube: primitives | zod\n```\n\n```folders\nkube/decode:\nkube/http: errors\n```\n',
    );
    write('packages/kube/src/view.ts', 'export interface View { name: string }\nexport const view = 1;\n');
    write('packages/kube/src/errors.ts', 'export class E extends Error {}\n');
    write('packages/kube/src/write/retry.ts', 'export const retry = 1;\n');
    write('packages/kube/src/decode/scan.ts', 'export const scan = 1;\n');
    write(
      'packages/kube/src/decode/cursor.ts',
      "import type { View } from '../view.js';\nimport { scan } from './scan.js';\nexport const c: View | number = scan;\n",
    );
    write('packages/kube/src/http/body.ts', "import { E } from '../errors.js';\nexport const b = E;\n");
    expect(run(root).code).toBe(0);
    write('packages/kube/src/decode/frames.ts', "import { view } from '../view.js';\nexport const f = view;\n");
    write('packages/kube/src/http/lines.ts', "import { retry } from '../write/retry.js';\nexport const l = retry;\n");
    const r = run(root);
    expect(r.code).toBe(1);
    expect(r.out).toContain('packages/kube/src/decode/frames.ts: imports view at run time');
    expect(r.out).toContain('packages/kube/src/http/lines.ts: imports write/retry at run time');
    expect(r.out).not.toContain('cursor.ts');
    expect(r.out).not.toContain('body.ts');
  });

  it('[layering: check] fails on a package missing from the layers block', () => {
    manifest('metrics');
    const r = run(root);
    expect(r.code).toBe(1);
    expect(r.out).toContain("metrics: not in ARCHITECTURE.md's layers block");
  });
});
