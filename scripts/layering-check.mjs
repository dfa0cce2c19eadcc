#!/usr/bin/env node
// The layering ARCHITECTURE.md declares, checked against the packages as they are: each package's
// runtime dependencies and peers (package.json) and the bare imports in its src/ must stay within its
// line of the ```layers block, and no source file may import its own package's index (a cycle through
// the front door). Inside a package, the optional ```folders block declares which files a folder's
// files may import at run time besides their own folder's (`import type` is erased, so it is free:
// a decoder may name the view type it builds). Usage: node scripts/layering-check.mjs [--root DIR].
// Exits 1 listing every breach.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { root: { type: 'string' } } });
const root = resolve(values.root ?? join(import.meta.dirname, '..'));
const SCOPE = '@reconcile-loop/';

/** package dir name → { deps: Set of workspace package dir names, peers: Set of external names } */
function declaredLayers() {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const block = /```layers\n([\s\S]*?)```/.exec(text);
  if (!block) throw new Error('ARCHITECTURE.md has no ```layers block');
  const layers = new Map();
  for (const line of block[1].split('\n')) {
    if (line.trim() === '') continue;
    const m = /^([\w-]+):\s*([^|]*?)\s*(?:\|\s*(.*))?$/.exec(line.trim());
    if (!m) throw new Error(`ARCHITECTURE.md layers: cannot read "${line}"`);
    const words = (s) => new Set((s ?? '').split(/\s+/).filter(Boolean));
    layers.set(m[1], { deps: words(m[2]), peers: words(m[3]) });
  }
  return layers;
}

/**
 * `package/folder` → Set of the paths under that package's src/ (a folder, or a file without its
 * extension) its files may import at run time besides their own folder.
 */
function declaredFolders() {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const block = /```folders\n([\s\S]*?)```/.exec(text);
  const folders = new Map();
  for (const line of block ? block[1].split('\n') : []) {
    if (line.trim() === '') continue;
    const m = /^([\w-]+\/[\w/-]+):\s*(.*)$/.exec(line.trim());
    if (!m) throw new Error(`ARCHITECTURE.md folders: cannot read "${line}"`);
    folders.set(
      m[1],
      new Set(
        m[2]
          .split(/\s+/)
          .filter(Boolean)
          .map((p) => p.replace(/\.(ts|js)$/, '')),
      ),
    );
  }
  return folders;
}

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const packageOf = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

const layers = declaredLayers();
const folders = declaredFolders();
const breaches = [];
const packagesDir = join(root, 'packages');
const names = readdirSync(packagesDir).filter((n) => existsSync(join(packagesDir, n, 'package.json')));
for (const name of names) {
  const layer = layers.get(name);
  if (!layer) {
    breaches.push(`${name}: not in ARCHITECTURE.md's layers block`);
    continue;
  }
  const allowed = (dep) =>
    dep.startsWith(SCOPE) ? layer.deps.has(dep.slice(SCOPE.length)) : layer.peers.has(dep) || builtins.has(dep);
  const manifest = JSON.parse(readFileSync(join(packagesDir, name, 'package.json'), 'utf8'));
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const dep of Object.keys(manifest[field] ?? {})) {
      if (!allowed(dep)) breaches.push(`${name}: package.json ${field} has ${dep}, which its layer does not allow`);
    }
  }
  const src = join(packagesDir, name, 'src');
  const ownFolders = [...folders]
    .filter(([key]) => key.startsWith(`${name}/`))
    .map(([key, may]) => [key.slice(name.length + 1), may]);
  for (const folder of ownFolders) {
    if (!existsSync(join(src, folder[0])))
      breaches.push(`ARCHITECTURE.md folders: ${name}/${folder[0]} is not a folder of ${name}/src`);
  }
  for (const file of existsSync(src) ? sourceFiles(src) : []) {
    const text = readFileSync(file, 'utf8');
    const where = relative(root, file);
    const home = ownFolders.find(([folder]) => relative(join(src, folder), file).split('/')[0] !== '..');
    for (const m of text.matchAll(/(?:import|export)\s([^'"]*?)from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = m[2] ?? m[3];
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec).replace(/\.(js|ts)$/, '');
        if (target === join(src, 'index')) breaches.push(`${where}: imports its own package's index (${spec})`);
        const typeOnly = m[1] !== undefined && /^type\s/.test(m[1]);
        if (home !== undefined && !typeOnly) {
          const [folder, may] = home;
          const path = relative(src, target);
          const inside = (dir) => path === dir || path.startsWith(`${dir}/`);
          if (!inside(folder) && ![...may].some(inside)) {
            breaches.push(
              `${where}: imports ${path} at run time, which ARCHITECTURE.md's folders do not allow ${name}/${folder}`,
            );
          }
        }
        continue;
      }
      const dep = packageOf(spec);
      if (dep === `${SCOPE}${name}`) breaches.push(`${where}: imports its own package by name (${spec})`);
      else if (!allowed(dep)) breaches.push(`${where}: imports ${spec}, which the ${name} layer does not allow`);
    }
  }
}
for (const declared of layers.keys()) {
  if (!names.includes(declared)) breaches.push(`ARCHITECTURE.md declares ${declared}, which is not a package`);
}
if (breaches.length > 0) {
  console.error(`layering: ${breaches.length} breach(es) of ARCHITECTURE.md's layers\n  ${breaches.join('\n  ')}`);
  process.exit(1);
}
console.log(`layering: ${names.length} packages within ARCHITECTURE.md's layers`);
