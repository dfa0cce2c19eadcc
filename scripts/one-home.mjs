#!/usr/bin/env node
// One vocabulary: each shared primitive is declared once, in its home package, and every other
// package imports it from there. Fails (exit 1) when a name of the table below is declared (as an
// interface, type alias, class, function, const/let/var or enum, at any depth) under
// packages/*/src outside its home, or more than once in all; when a `2 ** 31 - 1` literal (the
// timer limit, also spelled 2147483647 or 0x7fffffff) appears anywhere but as the home's
// MAX_TIMER_MS; and when a packages/*/src/**/index.ts has an `export *`, which hides what the
// entry exports (name every export; the API report lists them).
//
//   node scripts/one-home.mjs [--root <dir>]    (`pnpm check:one-home`; env ONE_HOME_ROOT too)
//
// Aliases count: `type ParentKey = Key` re-declares the key type under another name. A plain
// re-export (`export { type Key } from '@reconcile-loop/primitives'`) is no declaration.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// --- the table: concept | names it is declared under | home package (directory under packages/) ---
const PRIMITIVES = 'primitives';
export const HOMES = [
  { concept: 'Clock', names: ['Clock'], home: PRIMITIVES },
  { concept: 'systemClock', names: ['systemClock'], home: PRIMITIVES },
  { concept: 'ManualClock', names: ['ManualClock'], home: PRIMITIVES },
  { concept: 'sleep', names: ['sleep'], home: PRIMITIVES },
  { concept: 'raceAbort', names: ['raceAbort'], home: PRIMITIVES },
  { concept: 'abortReason', names: ['abortReason'], home: PRIMITIVES },
  { concept: 'linkSignals', names: ['linkSignals'], home: PRIMITIVES },
  { concept: 'Logger', names: ['Logger'], home: PRIMITIVES },
  { concept: 'silentLogger', names: ['silentLogger'], home: PRIMITIVES },
  { concept: 'key type', names: ['Key', 'ParentKey', 'QueueKey', 'RetryKey'], home: PRIMITIVES },
  { concept: 'object key', names: ['objectKey'], home: PRIMITIVES },
  { concept: 'object key reader', names: ['parseKey', 'splitKey'], home: PRIMITIVES },
  { concept: 'namespace and name', names: ['NamespacedName'], home: PRIMITIVES },
  { concept: 'timer limit', names: ['MAX_TIMER_MS', 'MAX_TIMER_DELAY_MS'], home: PRIMITIVES, literal: '2 ** 31 - 1' },
  { concept: 'backoff policy', names: ['BackoffPolicy'], home: PRIMITIVES },
  { concept: 'backoff', names: ['Backoff', 'SourceBackoff'], home: PRIMITIVES },
  { concept: 'failure streak', names: ['FailureStreak', 'ReadFailureLog'], home: PRIMITIVES },
  { concept: 'error base', names: ['ReconcileLoopError'], home: PRIMITIVES },
  {
    concept: 'Kubernetes Status',
    names: ['Status', 'KubeStatus', 'ApiStatus'],
    home: 'k8s-types',
    // The embedded apiserver builds Status bodies on the server side and may depend on nothing but
    // primitives (k8s-types brings zod): its wire type stays internal (testing does not export it by name).
    internalCopies: ['packages/testing/src/status.ts'],
  },
];
// ---------------------------------------------------------------------------------------------------

const TIMER_LIMIT = 2 ** 31 - 1;

function parseArgs(argv) {
  let root = process.env.ONE_HOME_ROOT || join(dirname(fileURLToPath(import.meta.url)), '..');
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root') root = argv[++i];
    else if (argv[i].startsWith('--root=')) root = argv[i].slice(7);
    else {
      console.error(`one-home: unknown argument ${argv[i]}\nusage: node scripts/one-home.mjs [--root <dir>]`);
      process.exit(2);
    }
  }
  return resolve(root);
}

function sourceFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (/\.(?:[cm]?ts|tsx)$/.test(e.name)) out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

function declKind(node) {
  if (ts.isInterfaceDeclaration(node)) return 'interface';
  if (ts.isTypeAliasDeclaration(node)) return 'type alias';
  if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) return 'class';
  if (ts.isFunctionDeclaration(node)) return 'function';
  if (ts.isEnumDeclaration(node)) return 'enum';
  if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)) {
    const f = node.parent.flags;
    return f & ts.NodeFlags.Const ? 'const' : f & ts.NodeFlags.Let ? 'let' : 'var';
  }
  return undefined;
}

function isExported(node) {
  const n = ts.isVariableDeclaration(node) ? node.parent.parent : node;
  return !!(ts.canHaveModifiers(n) && ts.getModifiers(n)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword));
}

/** `2 ** 31 - 1`, 2147483647, 0x7fffffff, 2_147_483_647 (parenthesised or not). */
function isTimerLimit(node) {
  if (ts.isNumericLiteral(node)) return Number(node.text) === TIMER_LIMIT;
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.MinusToken) {
    let left = node.left;
    while (ts.isParenthesizedExpression(left)) left = left.expression;
    return (
      ts.isBinaryExpression(left) &&
      left.operatorToken.kind === ts.SyntaxKind.AsteriskAsteriskToken &&
      ts.isNumericLiteral(left.left) &&
      Number(left.left.text) === 2 &&
      ts.isNumericLiteral(left.right) &&
      Number(left.right.text) === 31 &&
      ts.isNumericLiteral(node.right) &&
      Number(node.right.text) === 1
    );
  }
  return false;
}

export function scan(root) {
  const packagesDir = join(root, 'packages');
  const byName = new Map(HOMES.flatMap((h) => h.names.map((n) => [n, h])));
  const found = new Map(HOMES.map((h) => [h, []])); // concept → [{ pkg, file, line, what }]
  const timerRow = HOMES.find((h) => h.literal);
  const exportStars = [];
  const pkgs = existsSync(packagesDir)
    ? readdirSync(packagesDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
    : [];
  for (const pkg of pkgs) {
    for (const file of sourceFiles(join(packagesDir, pkg, 'src'))) {
      const rel = relative(root, file).split(sep).join('/');
      const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const at = (node) => `${rel}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
      const literalsCounted = new Set();
      const visit = (node) => {
        const kind = declKind(node);
        const name = kind && node.name && ts.isIdentifier(node.name) ? node.name.text : undefined;
        const row = name && byName.get(name);
        if (row) {
          found.get(row).push({ pkg, where: at(node), what: `${isExported(node) ? 'exported ' : ''}${kind} ${name}` });
          // The home's own `const MAX_TIMER_MS = 2 ** 31 - 1` is one declaration, not two.
          if (row === timerRow && ts.isVariableDeclaration(node) && node.initializer && isTimerLimit(node.initializer))
            literalsCounted.add(node.initializer);
        }
        if (timerRow && isTimerLimit(node) && !literalsCounted.has(node)) {
          found.get(timerRow).push({ pkg, where: at(node), what: `literal ${node.getText(sf)}` });
          return; // its children (2 ** 31) are part of it
        }
        if (
          /(^|\/)index\.[cm]?tsx?$/.test(rel) &&
          ts.isExportDeclaration(node) &&
          (!node.exportClause || ts.isNamespaceExport(node.exportClause))
        ) {
          exportStars.push({ pkg, where: at(node), text: node.getText(sf).replace(/\s+/g, ' ') });
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
  }

  const problems = [];
  for (const row of HOMES) {
    const decls = found.get(row).filter((d) => !(row.internalCopies ?? []).some((file) => d.where.startsWith(`${file}:`)));
    const away = decls.filter((d) => d.pkg !== row.home);
    if (decls.length <= 1 && away.length === 0) continue;
    const names = row.names.join('/') + (row.literal ? ` or a ${row.literal} literal` : '');
    const why = [];
    if (decls.length > 1) why.push(`declared ${decls.length} times`);
    if (away.length) why.push(`${away.length} outside its home packages/${row.home}`);
    problems.push({ row, decls, header: `${row.concept} (${names}): ${why.join(', ')}` });
  }
  return { problems, exportStars };
}

function main() {
  const root = parseArgs(process.argv.slice(2));
  const { problems, exportStars } = scan(root);
  for (const p of problems) {
    console.log(p.header);
    for (const d of p.decls) console.log(`  ${d.pkg === p.row.home ? 'home ' : 'AWAY '} ${d.where}  ${d.what}`);
  }
  if (exportStars.length) {
    const pkgs = [...new Set(exportStars.map((e) => e.pkg))];
    console.log(
      `export * in an index.ts (${exportStars.length} in ${pkgs.length} package(s): ${pkgs.join(', ')}); name each export instead:`,
    );
    for (const e of exportStars) console.log(`  ${e.where}  ${e.text}`);
  }
  if (problems.length || exportStars.length) {
    console.log(
      `\none-home: ${problems.length} concept(s) declared more than once or away from home, ${exportStars.length} export *; ` +
        'declare each once in its home (table at the top of scripts/one-home.mjs) and import it from there.',
    );
    process.exit(1);
  }
  console.log(`one-home: every one of ${HOMES.length} shared concepts has one home; no export * in an index.ts.`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
