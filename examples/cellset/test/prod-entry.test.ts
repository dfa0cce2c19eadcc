/**
 * The production start path: the built entry (`node dist/main.js`, what a container runs), started
 * as a child process against the embedded apiserver. Exit codes are the process's own: no pnpm or
 * tsx in between to turn a clean stop into "killed by a signal".
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { within } from '@reconcile-loop/test-support';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = join(EXAMPLE, '..', '..');
const WAIT_MS = 60_000;

/** Runs `node dist/main.js args…`; resolves with its exit and output. SIGTERM once every `until` pattern matched a stdout line. */
function runEntry(args: string[], until: readonly RegExp[] = []) {
  const child = spawn(process.execPath, ['dist/main.js', ...args], { cwd: EXAMPLE, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: string[] = [];
  const err: string[] = [];
  let signalled = false;
  // Whole lines only: a chunk may end inside one.
  const lines = (into: string[], onLine: () => void = () => {}) => {
    let rest = '';
    return (chunk: Buffer) => {
      const parts = (rest + chunk.toString('utf8')).split('\n');
      rest = parts.pop()!;
      into.push(...parts.filter(Boolean));
      onLine();
    };
  };
  child.stdout.on(
    'data',
    lines(out, () => {
      if (until.length > 0 && !signalled && until.every((pattern) => out.some((line) => pattern.test(line)))) {
        signalled = true;
        child.kill('SIGTERM');
      }
    }),
  );
  child.stderr.on('data', lines(err));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const done = within(exited, `node dist/main.js ${args.join(' ')}`, WAIT_MS - 10_000)
    .catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; output: ${JSON.stringify({ out: out.slice(-20), err: err.slice(-20) })}`);
    })
    .finally(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  return { done, out, err, signalled: () => signalled };
}

describe('[cellset: Production start path] node dist/main.js: the built entry a container runs, exit codes passed through', () => {
  let server: ApiServer;
  let dir: string;
  let kubeconfig: string;

  beforeAll(async () => {
    // The entry is built from source (the workspace packages bundled in), so no prior build is needed.
    const build = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsup'), [], { cwd: EXAMPLE, encoding: 'utf8', timeout: WAIT_MS });
    expect(build.status, build.stderr).toBe(0);
    server = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'cellset-entry-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, server.kubeconfig());
  }, WAIT_MS);

  afterAll(async () => {
    await server?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'SIGTERM to the controller after it synced and leads: the Lease released, "stopped cleanly", exit code 0 (not a signal)',
    async () => {
      const run = runEntry(
        ['--controller', '--kubeconfig', kubeconfig, '--namespace', 'default', '--shutdown-grace', '5'],
        // Synced, and the Lease acquired (not merely being acquired: a stop then has nothing to release).
        [/synced CellSets and pods/, /leading as /],
      );
      const { code, signal } = await run.done;
      expect(run.signalled(), JSON.stringify({ out: run.out, err: run.err })).toBe(true);
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(run.out.at(-1)).toBe('cellset-controller: stopped cleanly');
      const kc = new KubeConfig();
      kc.loadFromString(server.kubeconfig());
      const leases = new KubeClient({ kubeConfig: kc }).resource({
        group: 'coordination.k8s.io',
        version: 'v1',
        plural: 'leases',
      });
      const lease = (await leases.inNamespace('default').get('cellset-controller')) as { spec?: { holderIdentity?: string } };
      expect(lease.spec?.holderIdentity ?? '').toBe(''); // released on the way out (client-go's ReleaseOnCancel)
    },
    WAIT_MS,
  );

  it(
    'a kubeconfig it cannot load exits 1; a bad flag exits 2 with the usage',
    async () => {
      const missing = runEntry(['--controller', '--kubeconfig', join(dir, 'nope'), '--namespace', 'default']);
      expect((await missing.done).code).toBe(1);
      expect(missing.err.join('\n')).toMatch(/cannot load the kubeconfig/);
      const usage = runEntry(['--no-such-flag']);
      expect((await usage.done).code).toBe(2);
      expect(usage.err.join('\n')).toMatch(/usage: pnpm demo/);
    },
    WAIT_MS,
  );
});
