/**
 * `./dev demo --shards 3` as a user runs it: the command `./dev demo` execs (`pnpm --silent demo …`
 * from the repository root; `./dev`'s own `pnpm install` is left out: it would rewrite node_modules
 * under the other test processes), as a child process in a process group of its own, on the embedded
 * apiserver with real replica processes, real kill -9 and SIGSTOP. Every wait has a deadline; on
 * one, the whole group (the demo and its replicas) is killed.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { within } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
/** The demo takes about 50 s alone on two cores (loading four replica processes is 10 s of it); twice that beside other tests. */
const DEMO_MS = 200_000;

/** Runs `pnpm --silent demo args…` from the root; resolves with its exit code and output once it exited. */
async function demo(args: readonly string[], deadlineMs: number) {
  const child = spawn('pnpm', ['--silent', 'demo', ...args], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const code = await within(exited, `pnpm demo ${args.join(' ')}`, deadlineMs).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n--- stdout\n${out}\n--- stderr\n${err}`);
    });
    return { code, out, err };
  } finally {
    // The demo's process group: pnpm, tsx's node, and the replicas it started.
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

describe('[cellset: demo --shards] the controller scaled out, narrated', () => {
  it(
    '[cellset: demo --shards] 3 replica processes: joins with the CellSets each took, a kill -9 (keys move after its Lease expired), a SIGSTOP past the Lease and a SIGCONT (nothing admitted before the re-read), every CellSet converged, no CellSet reconciled by two replicas at once',
    async () => {
      const { code, out, err } = await demo(['--shards', '3'], DEMO_MS);
      const context = `\n--- stdout\n${out}\n--- stderr\n${err}`;
      expect(code, context).toBe(0);
      // The joins: three to start with, then one in the killed replica's place, each taking CellSets.
      expect(out.match(/~ replica-\d joins/g)?.length, context).toBe(4);
      expect(out, context).toMatch(/replica-1: sees ring \[replica-0, replica-1\]: takes (cell-\d\d ?)+ \(from replica-0\)/);
      expect(out, context).toMatch(/~ the ring settled \(replica-2 joined\): 3 replicas/);
      // The kill -9, and its CellSets taken over only once its Lease expired.
      const killed = /~ kill -9 (replica-\d)/.exec(out)?.[1];
      expect(killed, context).toBeDefined();
      expect(out, context).toMatch(
        new RegExp(
          `admits (cell-\\d\\d ?)+ from now on: handover took [\\d.]+ s \\(waited for [^)]*; [^)]*${killed}[^)]* left by Lease expiry\\)`,
        ),
      );
      // The pause: frozen past its Lease, its CellSets converged without it, resumed, nothing admitted before the re-read.
      const paused = /~ kill -STOP (replica-\d)/.exec(out)?.[1];
      expect(paused, context).toBeDefined();
      expect(out, context).toMatch(new RegExp(`~ kill -CONT ${paused} after [\\d.]+ s frozen`));
      expect(out, context).toMatch(
        new RegExp(
          `~ ${paused} after waking: .*re-read the ring \\+[\\d.]+ s, first admission \\+[\\d.]+ s: nothing before the re-read`,
        ),
      );
      // The check ran over the replicas' own records, and found nothing.
      const checked = /~ no CellSet was reconciled by two replicas at once \((\d+) reconciles checked/.exec(out);
      expect(checked, context).not.toBeNull();
      expect(Number(checked![1])).toBeGreaterThan(0);
      expect(out, context).toMatch(/^done: 4 replicas joined, .* 12\/12 CellSets converged; 0 overlaps in \d+ reconciles$/m);
      expect(err, context).not.toMatch(/overlap:/);
    },
    DEMO_MS + 20_000,
  );

  it('[cellset: demo --shards] a replica count it cannot play is a usage error, exit 2', async () => {
    const [one, word] = await Promise.all([demo(['--shards', '1'], 60_000), demo(['--shards', 'x'], 60_000)]);
    for (const [run, text] of [
      [one, '"1"'],
      [word, '"x"'],
    ] as const) {
      expect(run.code, run.err).toBe(2);
      expect(run.err).toContain(`--shards: not a usable value: ${text} (replicas: a whole number from 2 to 8)`);
      expect(run.err).toContain('usage: pnpm demo');
      expect(run.out).toBe('');
    }
  }, 80_000);
});
