import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CASES } from '../conformance/cases.js';
import { conforms, report, type CaseResult } from '../conformance/runner.js';

const README = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'README.md'), 'utf8');

describe('conformance suite bookkeeping', () => {
  it('[testing: conformance marks] every known difference of the suite is listed in the README with its case id, and case ids are unique', () => {
    const ids = CASES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    const section = README.slice(
      README.indexOf('## Conformance against a real kube-apiserver'),
      README.indexOf('## Known differences from a real kube-apiserver'),
    );
    for (const c of CASES) {
      const marks = [c.knownDifference, c.nondeterministic, ...Object.values(c.knownDifferenceOn ?? {})].filter(
        (m) => m !== undefined,
      );
      if (marks.length > 0) expect(section, c.id).toContain(`\`${c.id}\``);
    }
    const listed = [...section.matchAll(/^- `([a-z0-9-]+)`/gm)].map((m) => m[1]);
    for (const id of listed) {
      const c = CASES.find((x) => x.id === id);
      expect(c?.knownDifference ?? c?.knownDifferenceOn ?? c?.nondeterministic, id).toBeDefined();
    }
  });

  it('[testing: conformance marks] an unmarked DIFF fails, a marked SAME fails (stale mark), and the report names both', () => {
    const r = (verdict: 'SAME' | 'DIFF', known: string | undefined, nondeterministic?: string): CaseResult => ({
      id: 'x',
      title: 't',
      personality: 'cached',
      verdict,
      knownDifference: known,
      nondeterministic,
      embedded: 1,
      real: verdict === 'SAME' ? 1 : 2,
    });
    expect(conforms([r('SAME', undefined), r('DIFF', 'why')])).toBe(true);
    expect(conforms([r('DIFF', undefined)])).toBe(false);
    expect(conforms([r('SAME', 'why')])).toBe(false);
    expect(report([r('DIFF', undefined)])).toContain('embedded: 1');
    expect(report([r('SAME', 'why')])).toContain('remove the mark');
    expect(conforms([r('DIFF', undefined, 'timing')])).toBe(true);
    expect(report([r('DIFF', undefined, 'timing')])).toContain('not asserted: timing');
  });
});
