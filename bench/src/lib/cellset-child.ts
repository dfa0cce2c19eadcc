/**
 * The CellSet controller as a child process of a benchmark: where it lives, its output kept as
 * lines, and a stop that always ends. Shared by `cellset-reaction.ts` (replicas of the source entry)
 * and `controller-process.ts` (the built entry in a memory cgroup).
 */
import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `examples/cellset`: the controller's package, the working directory of every child. */
export const EXAMPLE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples', 'cellset');

/**
 * Appends `child`'s stdout and stderr to `into`, one entry per complete line, as `out <line>` /
 * `err <line>`, after `stamp()` and a space when given (read once per chunk). A line still without
 * its newline waits for the next chunk.
 */
export function collectLines(child: ChildProcess, into: string[], stamp?: () => string): void {
  for (const [stream, tag] of [
    [child.stdout, 'out'],
    [child.stderr, 'err'],
  ] as const) {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      const prefix = stamp === undefined ? tag : `${stamp()} ${tag}`;
      for (const line of parts) into.push(`${prefix} ${line}`);
    });
  }
}

/** SIGTERM, then SIGKILL once `graceMs` has passed without an exit; resolves once it has exited. */
export async function terminate(
  signal: (signal: NodeJS.Signals) => void,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  signal('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      signal('SIGKILL');
      resolve();
    }, graceMs);
  });
  await Promise.race([exited, killed]);
  clearTimeout(timer);
  await exited;
}
