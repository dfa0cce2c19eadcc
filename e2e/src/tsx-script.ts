import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readJsonLines } from './json-lines.js';

const e2eRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Starts `e2e/scripts/<script>.ts` as a process of its own (the Node of the test process, the
 * workspace packages from source through tsx, as the e2e project runs them), so a test can SIGKILL,
 * SIGSTOP and SIGCONT it. stdin is closed and stderr inherited; stdout is read as JSON lines, each
 * parsed line to `onObject`, any other line to `onOther` ({@link readJsonLines}).
 */
export function spawnTsxScript(
  script: string,
  args: readonly string[],
  onObject: (value: unknown) => void,
  onOther: (line: string) => void,
): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=@reconcile-loop/source', '--import', 'tsx', join(e2eRoot, 'scripts', `${script}.ts`), ...args],
    { cwd: e2eRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  readJsonLines(child.stdout!, onObject, onOther);
  return child;
}
