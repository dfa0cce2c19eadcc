import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', 'one-home.mjs');

function run(root: string) {
  const r = spawnSync(process.execPath, [script, '--root', root], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('one-home', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rl-one-home-'));
    write(
      'packages/primitives/src/index.ts',
      "export { type Clock, systemClock } from './clock.js';\nexport { MAX_TIMER_MS, type Key } from './limits.js';\n",
    );
    write(
      'packages/primitives/src/clock.ts',
      'export interface Clock { now(): number }\nexport const systemClock: Clock = { now: () => 0 };\n',
    );
    write('packages/primitives/src/limits.ts', 'export const MAX_TIMER_MS = 2 ** 31 - 1;\nexport type Key = string | number;\n');
    write('packages/k8s-types/src/status.ts', 'export interface Status { code: number }\n');
    write(
      'packages/queue/src/index.ts',
      "export { type Clock, type Key } from '@reconcile-loop/primitives';\nexport { Queue } from './queue.js';\n",
    );
    write(
      'packages/queue/src/queue.ts',
      "import { MAX_TIMER_MS, type Key } from '@reconcile-loop/primitives';\nexport class Queue { add(_k: Key, ms = MAX_TIMER_MS) {} }\n",
    );
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('[one home: check] passes when every primitive has one declaration, in its home', () => {
    const r = run(root);
    expect(r.out).toContain('has one home');
    expect(r.code).toBe(0);
  });

  it('[one home: check] fails on a second declaration, an aliased name, a stray timer literal and an export *', () => {
    write('packages/queue/src/clock.ts', 'interface Clock { now(): number }\nexport const sleep = () => undefined;\n');
    write(
      'packages/queue/src/keys.ts',
      "import type { Key } from '@reconcile-loop/primitives';\nexport type QueueKey = Key;\nconst LIMIT = (2 ** 31) - 1;\n",
    );
    write('packages/queue/src/index.ts', "export * from './queue.js';\n");
    write('packages/kube/src/errors.ts', 'export interface KubeStatus { code: number }\n');
    const r = run(root);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /Clock \(Clock\): declared 2 times, 1 outside its home packages\/primitives\n {2}home {2}packages\/primitives\/src\/clock\.ts:1 {2}exported interface Clock\n {2}AWAY {2}packages\/queue\/src\/clock\.ts:1 {2}interface Clock/,
    );
    expect(r.out).toContain('sleep (sleep): 1 outside its home packages/primitives');
    expect(r.out).toContain('AWAY  packages/queue/src/keys.ts:2  exported type alias QueueKey');
    expect(r.out).toContain('AWAY  packages/queue/src/keys.ts:3  literal (2 ** 31) - 1');
    expect(r.out).toContain('AWAY  packages/kube/src/errors.ts:1  exported interface KubeStatus');
    expect(r.out).toContain("packages/queue/src/index.ts:1  export * from './queue.js';");
    expect(r.out).not.toContain('systemClock (');
    expect(r.out).not.toContain('limits.ts:1  literal');
  });
});
