/**
 * The root README's long-running script, run as printed (taken from the README by
 * scripts/readme-examples.mjs, its `<!-- rehearse: file long-running.ts -->` block) as a process
 * against the embedded apiserver: a SIGTERM before the first sync must end it promptly with exit 1,
 * whether the LIST hangs or merely answers late.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { within } from '@reconcile-loop/test-support';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';

const EXAMPLE = join(import.meta.dirname, '..');
const ROOT = join(EXAMPLE, '..', '..');
/** tsx's start-up on a busy two-core machine, then the SIGTERM's effect. */
const SPAWN_MS = 60_000;
const EXIT_MS = 10_000;

async function readmeScript(): Promise<string> {
  const { readmeExamples } = (await import(pathToFileURL(join(ROOT, 'scripts', 'readme-examples.mjs')).href)) as {
    readmeExamples: (markdown: string) => { mode: string; file?: string; code: string }[];
  };
  const block = readmeExamples(readFileSync(join(ROOT, 'README.md'), 'utf8')).find((e) => e.file === 'long-running.ts');
  if (block === undefined) throw new Error('README.md has no <!-- rehearse: file long-running.ts --> block');
  return block.code;
}

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Runs the script with KUBECONFIG pointing at `serverUrl`; resolves with its exit code and output. */
async function runScript(server: ApiServer, serverUrl: string) {
  // Inside the example, so its imports resolve from the example's node_modules (workspace sources).
  const dir = mkdtempSync(join(EXAMPLE, '.rehearse-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'long-running.ts'), await readmeScript());
  writeFileSync(join(dir, 'kubeconfig'), server.kubeconfig().replaceAll(server.url, serverUrl));
  const child = spawn(
    process.execPath,
    ['--conditions=@reconcile-loop/source', '--import', 'tsx', join(dir, 'long-running.ts')],
    {
      cwd: ROOT,
      env: { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), PROBE_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  cleanup.push(() => void (child.exitCode === null && child.kill('SIGKILL')));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

/**
 * A loopback proxy to the apiserver that holds every pod LIST until `release()`. `abandoned` resolves
 * once the client closed a held LIST's connection (the script's stop aborted it).
 */
async function slowListProxy(target: string): Promise<{
  url: string;
  held: Promise<void>;
  abandoned: Promise<void>;
  release: () => void;
  close: () => Promise<void>;
}> {
  let releaseAll!: () => void;
  const released = new Promise<void>((resolve) => (releaseAll = resolve));
  let heldOne!: () => void;
  const held = new Promise<void>((resolve) => (heldOne = resolve));
  let abandonedOne!: () => void;
  const abandoned = new Promise<void>((resolve) => (abandonedOne = resolve));
  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    if (req.method === 'GET' && url.pathname.endsWith('/pods') && url.searchParams.get('watch') !== 'true') {
      heldOne();
      res.once('close', () => void (res.writableEnded || abandonedOne()));
      void released.then(() => forward(req, res));
      return;
    }
    forward(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    abandoned,
    release: releaseAll,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('[readme: long-running script] SIGTERM before the first sync ends the README script promptly with exit 1', () => {
  it('with a hung LIST: the LIST is aborted, start() rejects with LoopStoppedError, exit 1 within seconds', async () => {
    const server = await startApiServer();
    cleanup.push(() => server.close());
    server.seedPods(2, { namespace: 'ml', labels: { pool: 'engines' } });
    server.failNext({ verb: 'list', status: 'hang' });
    const script = await runScript(server, server.url);
    await server.waitForRequests('list', 1, SPAWN_MS);
    script.child.kill('SIGTERM');
    const code = await within(script.exited, 'the script to exit after SIGTERM (hung LIST)', EXIT_MS);
    expect(code).toBe(1);
    expect(script.stderr()).toMatch(/^pool-tracker: .*stop/m);
  }, 90_000);

  it('with a slow LIST answered after the SIGTERM: no sync, no endless wait, exit 1 within seconds', async () => {
    const server = await startApiServer();
    cleanup.push(() => server.close());
    server.seedPods(2, { namespace: 'ml', labels: { pool: 'engines' } });
    const proxy = await slowListProxy(server.url);
    cleanup.push(() => proxy.close());
    const script = await runScript(server, proxy.url);
    await within(proxy.held, 'the script to send its LIST', SPAWN_MS);
    script.child.kill('SIGTERM');
    // The LIST answers only once the script has handled the SIGTERM: its stop closes the LIST (or, were
    // the LIST not aborted, after a while no handler takes). Released at once, the answer could beat the
    // signal's delivery on a loaded machine: a sync, then a clean stop, exit 0, a race and not the case.
    await Promise.race([proxy.abandoned, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    proxy.release(); // a script that had not stopped would sync now and then wait forever
    const code = await within(script.exited, 'the script to exit after SIGTERM (slow LIST)', EXIT_MS);
    expect(code).toBe(1);
    expect(script.stderr()).toMatch(/^pool-tracker: .*stop/m);
  }, 90_000);
});
