#!/usr/bin/env node
// Keeps ALIGNMENT.md true: every test tag a row names (`[module: decision]` in backticks) must be the
// start of, or stand in, the title of a test that PASSED in this run's vitest reports — a row whose
// test was renamed, deleted or skipped fails CI instead of pointing at nothing.
//
//   node scripts/alignment-check.mjs <dir of vitest JSON reports> [ALIGNMENT.md]
//
// A tag is `[module: decision]`; other bracketed code (`[10, 100]`) is not one. Tags written as prose placeholders (`[metrics: …]`) are not names of tests and are passed over;
// a trailing `*` (`[testing: kubelet.*]`) matches every tag with that beginning.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [reportsDir, alignmentPath = 'ALIGNMENT.md'] = process.argv.slice(2);
if (!reportsDir) {
  console.error('usage: alignment-check.mjs <dir of vitest JSON reports> [ALIGNMENT.md]');
  process.exit(2);
}

/** Every backticked `[...]` of the record, in order of first appearance, placeholders left out. */
export function namedTags(markdown) {
  const tags = new Set();
  for (const match of markdown.matchAll(/`(\[[A-Za-z0-9_ .-]+: [^\]`\n]+\])/g)) {
    if (!match[1].includes('…')) tags.add(match[1]);
  }
  return [...tags];
}

const reports = readdirSync(reportsDir).filter((f) => f.endsWith('.json'));
if (reports.length === 0) {
  console.error(`alignment-check: no vitest JSON reports in ${reportsDir}`);
  process.exit(2);
}
const passed = [];
for (const file of reports) {
  const report = JSON.parse(readFileSync(join(reportsDir, file), 'utf8'));
  for (const suite of report.testResults ?? []) {
    for (const test of suite.assertionResults ?? []) {
      if (test.status === 'passed') passed.push(test.fullName ?? test.title);
    }
  }
}

const tags = namedTags(readFileSync(alignmentPath, 'utf8'));
const missing = tags.filter((tag) => {
  if (tag.endsWith('*]')) {
    const stem = tag.slice(0, -2);
    return !passed.some((title) => title.includes(stem));
  }
  return !passed.some((title) => title.includes(tag));
});
console.log(
  `alignment: ${tags.length - missing.length} of ${tags.length} test tags named in ${alignmentPath} have a passing test (${passed.length} passing tests in ${reports.length} reports)`,
);
for (const tag of missing) console.log(`alignment: no passing test titled ${tag}`);
process.exit(missing.length === 0 ? 0 : 1);
