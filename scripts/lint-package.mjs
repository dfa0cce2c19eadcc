#!/usr/bin/env node
// Package lint, run in a package directory after `build`: lints the tarball exactly as it would be
// published (pnpm pack applies publishConfig, rewriting workspace: ranges and dropping the
// workspace-only source condition), with publint --strict and @arethetypeswrong/cli, and checks its
// release metadata and contents (scripts/release-metadata.mjs: repository, homepage, bugs, LICENSE,
// no tests or fixtures, every exports target present).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = (name) => join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.bin', name);

const work = mkdtempSync(join(tmpdir(), 'rl-lint-'));
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { stdio: 'inherit', ...opts });
try {
  run('pnpm', ['pack', '--pack-destination', work], { stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('pnpm pack produced no tarball');
  run('tar', ['-xzf', join(work, tarball), '-C', work]);
  run(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'release-metadata.mjs'), join(work, 'package')]);
  run(bin('publint'), ['--strict', '--pack', 'false', join(work, 'package')]);
  // node16 profile: every package needs Node >= 22.19 (engines), whose resolution reads `exports`; node10
  // resolution cannot see a subpath export such as `./internal`, and no supported runtime uses it.
  run(bin('attw'), [join(work, tarball), '--format', 'table-flipped', '--profile', 'node16']);
} finally {
  rmSync(work, { recursive: true, force: true });
}
