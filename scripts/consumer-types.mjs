#!/usr/bin/env node
// TypeScript consumers: compiles tools/consumer-types (a small user project) against the PACKED
// packages, installed with plain npm into a temp dir outside the workspace, the three ways users
// consume them, each with skipLibCheck false so our own declaration files are checked too:
//   node16   ESM project, module/moduleResolution node16 (type: module)
//   bundler  ESM project, moduleResolution bundler (what Vite/esbuild users set)
//   cjs-jest CommonJS project (type: commonjs, node16 -> require()), the loop README's ManualClock
//            example compiled by tsc and run by Jest in its default CommonJS mode, no transform
//
//   node scripts/consumer-types.mjs --tarballs DIR   (DIR from `node scripts/pack-smoke.mjs --pack DIR`)
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(import.meta.dirname, '..');
const { values: opts } = parseArgs({ options: { tarballs: { type: 'string' }, keep: { type: 'boolean' } } });
if (opts.tarballs === undefined) {
  console.error('usage: node scripts/consumer-types.mjs --tarballs DIR');
  process.exit(2);
}
const tarballOf = JSON.parse(readFileSync(join(opts.tarballs, 'index.json'), 'utf8'));
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
// The user's toolchain: the TypeScript and Node types the workspace is checked with, Jest from npm.
const typescript = rootManifest.devDependencies.typescript;
const typesNode = rootManifest.devDependencies['@types/node'];

const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
const json = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

const strict = {
  target: 'ES2022',
  lib: ['ES2023', 'ESNext.Disposable'],
  types: ['node'],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
  esModuleInterop: true,
};
const projects = {
  node16: {
    type: 'module',
    compilerOptions: { ...strict, module: 'node16', moduleResolution: 'node16', noEmit: true },
    files: ['src/user.ts'],
  },
  bundler: {
    type: 'module',
    compilerOptions: { ...strict, module: 'esnext', moduleResolution: 'bundler', noEmit: true },
    files: ['src/user.ts'],
  },
  'cjs-jest': {
    type: 'commonjs',
    compilerOptions: { ...strict, module: 'node16', moduleResolution: 'node16', outDir: 'out', rootDir: 'jest' },
    files: ['jest/manual-clock.test.ts'],
  },
};

const work = mkdtempSync(join(tmpdir(), 'rl-consumer-types-'));
let failed = 0;
let passed = 0;
try {
  const names = Object.keys(tarballOf);
  // Every package is a direct dependency; `$name` makes their inter-dependencies use those same tarballs.
  json(join(work, 'package.json'), {
    name: 'consumer-types',
    version: '1.0.0',
    private: true,
    overrides: Object.fromEntries(names.map((n) => [n, `$${n}`])),
  });
  // @types/ws: client-node 2.x's declarations import 'ws' (through isomorphic-ws) without shipping its
  // types, so any user compiling with skipLibCheck false needs it; the README says so.
  const deps = [
    ...names.map((n) => tarballOf[n]),
    'zod@^4.5.0',
    '@kubernetes/client-node@^2.0.1',
    '@types/ws@^8',
    `typescript@${typescript}`,
    `@types/node@${typesNode}`,
    'jest@^30',
    '@jest/globals@^30',
  ];
  sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...deps], work);
  const tsc = join(work, 'node_modules', 'typescript', 'bin', 'tsc');
  for (const [name, project] of Object.entries(projects)) {
    const dir = join(work, name);
    mkdirSync(dir);
    cpSync(join(root, 'tools', 'consumer-types', 'src'), join(dir, 'src'), { recursive: true });
    cpSync(join(root, 'tools', 'consumer-types', 'jest'), join(dir, 'jest'), { recursive: true });
    json(join(dir, 'package.json'), {
      name: `consumer-${name}`,
      version: '1.0.0',
      private: true,
      type: project.type,
      jest: { testMatch: ['<rootDir>/out/**/*.test.js'], transform: {} },
    });
    json(join(dir, 'tsconfig.json'), { compilerOptions: project.compilerOptions, files: project.files });
    try {
      sh('node', [tsc, '-p', 'tsconfig.json'], dir);
      let note = 'compiles';
      if (name === 'cjs-jest') {
        sh('node', [join(work, 'node_modules', 'jest', 'bin', 'jest.js'), '--ci', '--colors=false'], dir);
        note = 'compiles to CommonJS, Jest passes';
      }
      console.log(`ok   consumer-types ${name} (node ${process.versions.node}): ${note}`);
      passed++;
    } catch (error) {
      console.log(
        `FAIL consumer-types ${name}: ${[error.message, error.stdout, error.stderr].filter(Boolean).join('\n').trim()}`,
      );
      failed++;
    }
  }
} finally {
  if (opts.keep) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
console.log(`consumer-types: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
