/**
 * The flagship stays copyable: the controller a user copies — `src/`, everything outside the demo
 * folder — is at most 350 lines, and reaches nothing of the demo (the story, the scripted kubelet,
 * the wire taps): those drive it only from outside.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', 'src');
const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));

describe('[cellset: copyable] the controller outside the demo folder', () => {
  it('src/ holds the CRD type, the wiring and plan/apply in at most 350 lines', () => {
    const lines = Object.fromEntries(files.map((f) => [f, readFileSync(join(SRC, f), 'utf8').split('\n').length - 1]));
    const total = Object.values(lines).reduce((a, b) => a + b, 0);
    expect(Object.keys(lines).sort()).toEqual(['api.ts', 'controller.ts', 'plan.ts']);
    expect(total, JSON.stringify(lines)).toBeLessThanOrEqual(350);
  });

  it('src/ imports nothing from the demo folder and nothing test-only (@reconcile-loop/testing)', () => {
    for (const f of files) {
      const text = readFileSync(join(SRC, f), 'utf8');
      expect(text, f).not.toMatch(/from '\.\.\/demo\//);
      expect(text, f).not.toMatch(/@reconcile-loop\/testing/);
    }
  });
});
