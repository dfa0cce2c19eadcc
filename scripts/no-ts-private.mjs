#!/usr/bin/env node
// Class members are private with `#name`, not TypeScript's `private`/`protected` modifiers (which
// vanish at run time and make a second vocabulary). Fails listing every member or constructor
// parameter property that carries one. A `private constructor` is allowed: `#` cannot spell it.
//   node scripts/no-ts-private.mjs [--root <dir>]   (part of `pnpm lint:code`)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const DIRS = ['packages', 'examples', 'e2e', 'bench', 'tools', 'scripts'];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.turbo', 'coverage', 'fixtures', '.pack', '.e2e-cache']);
const SKIP = [/\.generated\.ts$/, /^packages\/k8s-types\/wasm\//];

const argv = process.argv.slice(2);
const rootArg = argv[argv.indexOf('--root') + 1];
const root = resolve(argv.includes('--root') && rootArg ? rootArg : join(dirname(fileURLToPath(import.meta.url)), '..'));

const files = [];
const walk = (d) => {
  for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = join(d, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) walk(p);
    } else if (/\.(?:[cm]?ts|tsx)$/.test(e.name) && !e.name.endsWith('.d.ts')) files.push(p);
  }
};
for (const d of DIRS) if (existsSync(join(root, d))) walk(join(root, d));

const found = [];
for (const file of files) {
  const rel = relative(root, file).split(sep).join('/');
  if (SKIP.some((re) => re.test(rel))) continue;
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if ((ts.isClassElement(node) || ts.isParameter(node)) && !ts.isConstructorDeclaration(node) && ts.canHaveModifiers(node)) {
      const mod = ts
        .getModifiers(node)
        ?.find((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
      if (mod) {
        const line = sf.getLineAndCharacterOfPosition(mod.getStart(sf)).line + 1;
        const name = node.name ? node.name.getText(sf) : '(index signature)';
        found.push(`${rel}:${line}  ${mod.getText(sf)} ${name}${ts.isParameter(node) ? ' (parameter property)' : ''}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

if (found.length) {
  for (const f of found) console.log(f);
  const nfiles = new Set(found.map((f) => f.split(':')[0])).size;
  console.log(`\nno-ts-private: ${found.length} TypeScript private/protected member(s) in ${nfiles} file(s); use #name instead.`);
  process.exit(1);
}
console.log(`no-ts-private: no TypeScript private/protected members in ${files.length} files.`);
