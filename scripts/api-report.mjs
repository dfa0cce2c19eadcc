#!/usr/bin/env node
// Public API reports: for every package in packages/* and every entry of its package.json `exports`
// (`.` and any subpath such as `./internal`), the exported names of the built declaration file
// (dist/*.d.ts, so run after `turbo run build`), each with its kind and its full declared signature,
// doc comments stripped and names sorted, written to packages/<name>/api/<entry>.api.md.
//
//   node scripts/api-report.mjs [--check]   regenerate in memory; exit 1 naming each package whose
//                                           checked-in report differs (default; CI's build cell)
//   node scripts/api-report.mjs --write     regenerate the reports (`pnpm api:report`)
//   node scripts/api-report.mjs --summary   markdown table: package | runtime values | types | total |
//                                           re-exported | own names (a re-export is counted once, at its home)
//   --root <dir> (or API_REPORT_ROOT)       the repository to read (default: this script's repo)
//
// A "runtime value" is an export that exists at run time (class, function, const, enum, namespace)
// and is not exported type-only (`export { type X }`); everything else is a type.
// Types a signature names that the entry does not export, but the package itself declares, are
// listed too ("referenced, not exported"), so a change to them shows in the report as well.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const USAGE = 'usage: node scripts/api-report.mjs [--check | --write | --summary] [--root <dir>]';
const HINT = 'run `pnpm api:report` and commit the report with a changeset';

function parseArgs(argv) {
  const opts = { mode: 'check', root: process.env.API_REPORT_ROOT || join(dirname(fileURLToPath(import.meta.url)), '..') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check' || a === '--write' || a === '--summary') opts.mode = a.slice(2);
    else if (a === '--root') opts.root = argv[++i];
    else if (a.startsWith('--root=')) opts.root = a.slice('--root='.length);
    else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else {
      console.error(`api-report: unknown argument ${a}\n${USAGE}`);
      process.exit(2);
    }
  }
  if (!opts.root) throw new Error('--root needs a directory');
  opts.root = resolve(opts.root);
  return opts;
}

const byCodeUnit = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// --- entries -------------------------------------------------------------------------------------

/** The declaration file of an `exports` target for `import` consumers (the source condition skipped). */
function typesOf(target) {
  if (typeof target === 'string') {
    if (/\.d\.[cm]?ts$/.test(target)) return target;
    if (/\.[cm]?js$/.test(target)) return target.replace(/\.([cm]?)js$/, '.d.$1ts');
    return undefined;
  }
  if (!target || typeof target !== 'object' || Array.isArray(target)) return undefined;
  if (typeof target.types === 'string') return target.types;
  for (const cond of ['import', 'default', 'require', 'node']) {
    if (cond in target) {
      const t = typesOf(target[cond]);
      if (t) return t;
    }
  }
  return undefined;
}

/** `.` → index, `./internal` → internal, `./a/b` → a-b. */
const entryFileName = (key) => (key === '.' ? 'index' : key.replace(/^\.\//, '').replace(/[/*]/g, '-'));

function listPackages(root) {
  const dir = join(root, 'packages');
  if (!existsSync(dir)) throw new Error(`${dir}: no packages directory`);
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true }).sort((a, b) => byCodeUnit(a.name, b.name))) {
    const pkgDir = join(dir, d.name);
    const manifest = join(pkgDir, 'package.json');
    if (!d.isDirectory() || !existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
    const entries = [];
    const exp = pkg.exports;
    const map =
      exp === undefined
        ? { '.': pkg.types ?? pkg.typings }
        : typeof exp === 'string' || Array.isArray(exp) || !Object.keys(exp).some((k) => k.startsWith('.'))
          ? { '.': exp }
          : exp;
    for (const [key, target] of Object.entries(map)) {
      if (key === './package.json' || key.endsWith('.json')) continue;
      const types = typesOf(target);
      if (!types) continue;
      entries.push({ key, file: entryFileName(key), dts: join(pkgDir, types) });
    }
    entries.sort((a, b) => byCodeUnit(a.key, b.key));
    out.push({ dir: d.name, pkgDir, name: pkg.name ?? d.name, entries });
  }
  return out;
}

// --- the report of one entry ---------------------------------------------------------------------

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

/** Nearest package.json name above a file (for "from" notes). */
const packageNameCache = new Map();
function packageOf(file) {
  let d = dirname(file);
  while (true) {
    if (packageNameCache.has(d)) return packageNameCache.get(d);
    const m = join(d, 'package.json');
    if (existsSync(m)) {
      const name = JSON.parse(readFileSync(m, 'utf8')).name ?? relative(process.cwd(), d);
      packageNameCache.set(d, name);
      return name;
    }
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

const VALUE_KINDS = new Set(['class', 'function', 'const', 'let', 'var', 'enum', 'namespace']);

function kindOf(decl) {
  if (ts.isClassDeclaration(decl)) return 'class';
  if (ts.isFunctionDeclaration(decl)) return 'function';
  if (ts.isInterfaceDeclaration(decl)) return 'interface';
  if (ts.isTypeAliasDeclaration(decl)) return 'type alias';
  if (ts.isEnumDeclaration(decl)) return 'enum';
  if (ts.isModuleDeclaration(decl)) return ts.getModuleInstanceState?.(decl) === 0 ? 'namespace (types only)' : 'namespace';
  if (ts.isVariableDeclaration(decl)) {
    const flags = decl.parent.flags;
    return flags & ts.NodeFlags.Const ? 'const' : flags & ts.NodeFlags.Let ? 'let' : 'var';
  }
  if (ts.isExportAssignment(decl)) return 'const';
  return ts.SyntaxKind[decl.kind];
}

function stripModifiers(text) {
  return text.replace(/^(?:export\s+)?(?:default\s+)?(?:declare\s+)?/, '');
}

function printDecl(decl, checker) {
  const sf = decl.getSourceFile();
  if (ts.isVariableDeclaration(decl)) {
    const kind = kindOf(decl);
    const type = decl.type
      ? printer.printNode(ts.EmitHint.Unspecified, decl.type, sf)
      : checker.typeToString(checker.getTypeAtLocation(decl), decl, ts.TypeFormatFlags.NoTruncation);
    return `${kind} ${decl.name.getText(sf)}: ${type};`;
  }
  if (ts.isModuleDeclaration(decl)) {
    // `declare namespace A.B` nests: print the outermost statement once.
    let top = decl;
    while (ts.isModuleDeclaration(top.parent)) top = top.parent;
    return stripModifiers(printer.printNode(ts.EmitHint.Unspecified, top, sf));
  }
  return stripModifiers(printer.printNode(ts.EmitHint.Unspecified, decl, sf));
}

/** Follows an alias chain; reports whether any link of it is type-only (`export { type X }`, `import type`). */
function resolveExport(sym, checker) {
  let typeOnly = false;
  let cur = sym;
  for (let i = 0; i < 100 && cur.flags & ts.SymbolFlags.Alias; i++) {
    for (const d of cur.declarations ?? []) {
      if (
        (ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly)) ||
        (ts.isImportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly)) ||
        (ts.isImportClause(d) && d.isTypeOnly) ||
        (ts.isNamespaceImport(d) && d.parent.isTypeOnly) ||
        (ts.isExportDeclaration(d) && d.isTypeOnly)
      ) {
        typeOnly = true;
      }
    }
    const next = checker.getImmediateAliasedSymbol(cur);
    if (!next || next === cur) break;
    cur = next;
  }
  if (cur.flags & ts.SymbolFlags.Alias) cur = checker.getAliasedSymbol(cur);
  return { target: cur, typeOnly };
}

function declarationsOf(target) {
  return (target.declarations ?? []).filter(
    (d) => !ts.isModuleDeclaration(d) || !d.parent || !ts.isModuleDeclaration(d.parent), // nested namespace parts print with their outer one
  );
}

/** Symbols named by type references / heritage clauses / typeof inside a node. */
function referencedSymbols(node, checker) {
  const out = [];
  const visit = (n) => {
    let name;
    if (ts.isTypeReferenceNode(n)) name = n.typeName;
    else if (ts.isExpressionWithTypeArguments(n)) name = n.expression;
    else if (ts.isTypeQueryNode(n)) name = n.exprName;
    if (name) {
      const right = ts.isQualifiedName(name) ? name.left : ts.isPropertyAccessExpression(name) ? name.expression : name;
      let s = checker.getSymbolAtLocation(right);
      if (s && s.flags & ts.SymbolFlags.Alias) s = checker.getAliasedSymbol(s);
      if (s) out.push(s);
    }
    ts.forEachChild(n, visit);
  };
  visit(node);
  return out;
}

function reportEntry(pkg, entry, program, checker) {
  const sf = program.getSourceFile(entry.dts);
  if (!sf) throw new Error(`${entry.dts}: not loaded`);
  const moduleSymbol = checker.getSymbolAtLocation(sf);
  const exports = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
  const pkgRoot = pkg.pkgDir + sep;
  const items = [];
  const exported = new Set();
  for (const sym of exports) {
    const name = sym.escapedName === 'default' ? 'default' : ts.unescapeLeadingUnderscores(sym.escapedName);
    const { target, typeOnly } = resolveExport(sym, checker);
    exported.add(target);
    const decls = declarationsOf(target);
    const kinds = [...new Set(decls.map(kindOf))].sort(byCodeUnit);
    const value = !typeOnly && decls.some((d) => VALUE_KINDS.has(kindOf(d)));
    const files = [...new Set(decls.map((d) => d.getSourceFile().fileName))];
    const from = files
      .filter((f) => !resolve(f).startsWith(pkgRoot))
      .map((f) => packageOf(f) ?? relative(pkg.pkgDir, f))
      .sort(byCodeUnit);
    const localName = ts.unescapeLeadingUnderscores(target.escapedName);
    items.push({
      name,
      kinds: kinds.length ? kinds : ['unknown'],
      value,
      typeOnly,
      from: [...new Set(from)],
      declaredAs: localName !== name && localName !== 'default' ? localName : undefined,
      text: decls.map((d) => printDecl(d, checker)).join('\n'),
      decls,
    });
  }
  items.sort((a, b) => byCodeUnit(a.name, b.name));

  // Types the package declares and the signatures name without the entry exporting them.
  const hidden = new Map();
  const queue = items.flatMap((i) => i.decls);
  while (queue.length) {
    const decl = queue.shift();
    for (const s of referencedSymbols(decl, checker)) {
      if (exported.has(s) || hidden.has(s)) continue;
      const decls = declarationsOf(s).filter(
        (d) => resolve(d.getSourceFile().fileName).startsWith(pkgRoot) && !ts.isTypeParameterDeclaration(d),
      );
      if (!decls.length || decls.some((d) => ts.isSourceFile(d) || d.kind === ts.SyntaxKind.Parameter)) continue;
      const name = ts.unescapeLeadingUnderscores(s.escapedName);
      hidden.set(s, {
        name,
        kinds: [...new Set(decls.map(kindOf))].sort(byCodeUnit),
        text: decls.map((d) => printDecl(d, checker)).join('\n'),
      });
      queue.push(...decls);
    }
  }
  const unexported = [...hidden.values()].sort((a, b) => byCodeUnit(a.name, b.name) || byCodeUnit(a.text, b.text));

  const values = items.filter((i) => i.value).length;
  const lines = [];
  lines.push(`# API report: ${pkg.name} \`${entry.key}\``);
  lines.push('');
  lines.push(
    `<!-- Generated by scripts/api-report.mjs from ${relative(pkg.pkgDir, entry.dts).split(sep).join('/')}; do not edit. -->`,
  );
  lines.push(`<!-- After an API change: ${HINT}. -->`);
  lines.push('');
  lines.push(`Runtime values: ${values}. Types: ${items.length - values}. Exported names: ${items.length}.`);
  lines.push('');
  lines.push('## Exports');
  for (const i of items) {
    const notes = [i.kinds.join(' + '), i.value ? 'runtime value' : 'type only'];
    if (i.typeOnly && i.kinds.some((k) => VALUE_KINDS.has(k))) notes.push('exported type-only');
    if (i.from.length) notes.push(`from ${i.from.join(', ')}`);
    if (i.declaredAs) notes.push(`declared as ${i.declaredAs}`);
    lines.push('');
    lines.push(`### \`${i.name}\` (${notes.join('; ')})`);
    lines.push('');
    lines.push('```ts');
    lines.push(i.text);
    lines.push('```');
  }
  if (unexported.length) {
    lines.push('');
    lines.push('## Referenced, not exported');
    for (const u of unexported) {
      lines.push('');
      lines.push(`### \`${u.name}\` (${u.kinds.join(' + ')})`);
      lines.push('');
      lines.push('```ts');
      lines.push(u.text);
      lines.push('```');
    }
  }
  lines.push('');
  // Names declared in another workspace package (a facade's documented re-exports): counted once,
  // at their home, in the summary's last column.
  const reexported = items.filter((i) => i.from.length > 0).length;
  return { text: lines.join('\n'), values, total: items.length, reexported };
}

// --- diff ------------------------------------------------------------------------------------------

/** A short unified-style diff (LCS over lines, 2 lines of context, at most `limit` lines printed). */
function shortDiff(oldText, newText, limit = 60) {
  const a = oldText.split('\n');
  const b = newText.split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf);
  const B = b.slice(pre, b.length - suf);
  const ops = [];
  if (A.length * B.length > 4_000_000) {
    for (const l of A) ops.push(['-', l]);
    for (const l of B) ops.push(['+', l]);
  } else {
    const n = A.length;
    const m = B.length;
    const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) dp[i][j] = A[i] === B[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && A[i] === B[j]) ops.push([' ', A[i++], j++]);
      else if (j < m && (i === n || dp[i][j + 1] >= dp[i + 1][j])) ops.push(['+', B[j++]]);
      else ops.push(['-', A[i++]]);
    }
  }
  const ctx = 2;
  const full = [
    ...a.slice(Math.max(0, pre - ctx), pre).map((l) => [' ', l]),
    ...ops,
    ...a.slice(a.length - suf, a.length - suf + ctx).map((l) => [' ', l]),
  ];
  const keep = full.map(() => false);
  full.forEach(([op], k) => {
    if (op !== ' ') for (let d = -ctx; d <= ctx; d++) if (full[k + d]) keep[k + d] = true;
  });
  const out = [`@@ around line ${Math.max(1, pre - ctx + 1)} @@`];
  let gap = false;
  full.forEach(([op, l], k) => {
    if (!keep[k]) {
      if (!gap) out.push('   ...');
      gap = true;
      return;
    }
    gap = false;
    out.push(`${op === ' ' ? ' ' : op} ${l}`);
  });
  if (out.length > limit) return [...out.slice(0, limit), `   ... (${out.length - limit} more diff lines)`].join('\n');
  return out.join('\n');
}

// --- main ------------------------------------------------------------------------------------------

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const packages = listPackages(opts.root);
  const missing = [];
  for (const p of packages) {
    if (!p.entries.length) missing.push(`${p.dir}: package.json names no declaration file in exports/types`);
    for (const e of p.entries) if (!existsSync(e.dts)) missing.push(`${p.dir}: ${relative(opts.root, e.dts)} is missing`);
  }
  if (missing.length) {
    console.error(`api-report: ${missing.join('\n  ')}\nbuild the packages first: pnpm exec turbo run build`);
    process.exit(1);
  }
  const roots = packages.flatMap((p) => p.entries.map((e) => e.dts));
  const program = ts.createProgram(roots, {
    noEmit: true,
    skipLibCheck: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
    types: [],
  });
  const checker = program.getTypeChecker();

  const results = [];
  for (const p of packages) {
    const reports = p.entries.map((e) => ({
      entry: e,
      path: join(p.pkgDir, 'api', `${e.file}.api.md`),
      ...reportEntry(p, e, program, checker),
    }));
    results.push({ pkg: p, reports });
  }

  if (opts.mode === 'summary') {
    const rows = results.map(({ pkg, reports }) => {
      const values = reports.reduce((s, r) => s + r.values, 0);
      const total = reports.reduce((s, r) => s + r.total, 0);
      const reexported = reports.reduce((s, r) => s + r.reexported, 0);
      const entries = reports.length > 1 ? ` (${reports.map((r) => r.entry.key).join(', ')})` : '';
      return [`${pkg.name}${entries}`, values, total - values, total, reexported, total - reexported];
    });
    const sum = (k) => rows.reduce((s, r) => s + r[k], 0);
    console.log('| package | runtime values | types | total | re-exported | own names (re-exports counted once) |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    console.log(`| **total** | **${sum(1)}** | **${sum(2)}** | **${sum(3)}** | **${sum(4)}** | **${sum(5)}** |`);
    return;
  }

  const failures = [];
  for (const { pkg, reports } of results) {
    const apiDir = join(pkg.pkgDir, 'api');
    const expected = new Set(reports.map((r) => r.path));
    const stale = existsSync(apiDir)
      ? readdirSync(apiDir)
          .filter((f) => f.endsWith('.api.md'))
          .map((f) => join(apiDir, f))
          .filter((f) => !expected.has(f))
      : [];
    const diffs = [];
    for (const r of reports) {
      const rel = relative(opts.root, r.path).split(sep).join('/');
      const current = existsSync(r.path) ? readFileSync(r.path, 'utf8') : undefined;
      console.log(`${pkg.name} ${r.entry.key}: ${r.values} runtime values, ${r.total} exported names`);
      if (current === r.text) continue;
      if (opts.mode === 'write') {
        mkdirSync(apiDir, { recursive: true });
        writeFileSync(r.path, r.text);
        console.log(`  wrote ${rel}`);
      } else {
        diffs.push(current === undefined ? `${rel}: no checked-in report` : `${rel}:\n${shortDiff(current, r.text)}`);
      }
    }
    for (const f of stale) {
      const rel = relative(opts.root, f).split(sep).join('/');
      if (opts.mode === 'write') {
        rmSync(f);
        console.log(`  removed ${rel} (no such entry in exports)`);
      } else diffs.push(`${rel}: report of an entry the package no longer exports`);
    }
    if (diffs.length) failures.push({ pkg, diffs });
  }
  if (failures.length) {
    console.error(`\napi-report: the public API of ${failures.length} package(s) differs from the checked-in report:`);
    for (const f of failures) {
      console.error(`\n${f.pkg.name} (packages/${f.pkg.dir})`);
      for (const d of f.diffs) console.error(d.replace(/^/gm, '  '));
    }
    console.error(`\n${HINT}.`);
    console.error(`packages: ${failures.map((f) => f.pkg.name).join(', ')}`);
    process.exit(1);
  }
}

main();
