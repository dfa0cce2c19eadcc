import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer } from '../src/index.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.ts');

let child: ChildProcessWithoutNullStreams | undefined;
let dir: string | undefined;
afterEach(async () => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

function launch(args: string[]): {
  proc: ChildProcessWithoutNullStreams;
  firstLine: Promise<string>;
  exit: Promise<number | null>;
  stderr: () => string;
} {
  const proc = spawn(process.execPath, ['--conditions=@reconcile-loop/source', '--import', 'tsx', CLI, ...args], {
    cwd: dirname(CLI),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child = proc;
  let err = '';
  proc.stderr.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  const firstLine = new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`exited ${String(code)} before printing: ${err}`)));
  });
  // Tests that expect an early exit never await the line.
  firstLine.catch(() => undefined);
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, firstLine, exit, stderr: () => err };
}

describe('reconcile-loop-apiserver bin', () => {
  it('[testing: bin] prints the URL, writes the kubeconfig, seeds labelled pods, exits 0 on SIGTERM', async () => {
    dir = await mkdtemp(join(tmpdir(), 'rl-cli-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const p = launch([
      '--port',
      '0',
      '--kubeconfig',
      kubeconfig,
      '--seed-pods',
      '3',
      '--namespace',
      'pool',
      '--labels',
      'app=demo,cell=engine',
    ]);
    const url = await p.firstLine;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await readFile(kubeconfig, 'utf8')).toContain(`server: "${url}"`);
    const res = await fetch(`${url}/api/v1/namespaces/pool/pods?labelSelector=app%3Ddemo,cell%3Dengine`);
    const list = (await res.json()) as { items: Array<{ metadata: { name: string } }> };
    expect(list.items.map((i) => i.metadata.name)).toEqual(['pod-0', 'pod-1', 'pod-2']);
    p.proc.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    expect(p.stderr()).toContain('received SIGTERM');
  }, 30_000);

  it('[testing: bin] SIGINT also stops it cleanly', async () => {
    const p = launch([]);
    await p.firstLine;
    p.proc.kill('SIGINT');
    expect(await p.exit).toBe(0);
  }, 30_000);

  it('[testing: bin] --help names every kind the server serves (discovery is the list), not "pods, plus discovery"', async () => {
    const p = launch(['--help']);
    let out = '';
    p.proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    expect(await p.exit).toBe(0);
    const server = await startApiServer();
    try {
      const core = (await (await fetch(`${server.url}/api/v1`)).json()) as { resources: { name: string }[] };
      const served = core.resources.map((r) => r.name).filter((name) => !name.includes('/'));
      expect(served.length).toBeGreaterThan(3);
      const help = out.toLowerCase().replace(/\s+/g, ' ');
      for (const name of [...served, 'leases', 'customresourcedefinitions']) expect(help).toContain(name);
      expect(help).not.toContain('pods, plus discovery');
    } finally {
      await server.close();
    }
  });

  it('[testing: bin] a bad argument exits 2 with the usage', async () => {
    const p = launch(['--labels', 'no-equals-sign']);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toContain('--labels: expected k=v');
    expect(p.stderr()).toContain('Usage: reconcile-loop-apiserver');
  }, 30_000);

  it('[testing: bin resources] --resource (repeatable) serves custom kinds, listed in discovery, writable over HTTP', async () => {
    const p = launch(['--resource', 'example.com/v1/Widget/widgets', '--resource', 'example.com/v1alpha1/Gadget/gadgets']);
    const url = await p.firstLine;
    const group = (await (await fetch(`${url}/apis/example.com`)).json()) as { versions: Array<{ version: string }> };
    expect(group.versions.map((v) => v.version)).toEqual(['v1', 'v1alpha1']);
    const created = await fetch(`${url}/apis/example.com/v1/namespaces/default/widgets`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } }),
    });
    expect(created.status).toBe(201);
    const list = (await (await fetch(`${url}/apis/example.com/v1/namespaces/default/widgets`)).json()) as {
      kind: string;
      items: Array<{ metadata: { name: string } }>;
    };
    expect(list.kind).toBe('WidgetList');
    expect(list.items.map((i) => i.metadata.name)).toEqual(['w1']);
    expect((await fetch(`${url}/apis/example.com/v1alpha1/namespaces/default/gadgets`)).status).toBe(200);
    expect(p.stderr()).toContain('serving widgets.example.com/v1 (Widget)');
    p.proc.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  }, 30_000);

  it.each([
    ['example.com/v1/Widget', 'expected group/version/Kind/plural'],
    ['Example_com/v1/Widget/widgets', 'invalid group'],
    ['example.com/1/Widget/widgets', 'invalid version'],
    ['example.com/v1/widget/widgets', 'invalid kind'],
    ['example.com/v1/Widget/Widgets', 'invalid plural'],
  ])(
    '[testing: bin resources] --resource %s exits 2: %s',
    async (arg, message) => {
      const p = launch(['--resource', arg]);
      expect(await p.exit).toBe(2);
      expect(p.stderr()).toContain(message);
    },
    30_000,
  );

  it('[testing: bin resources] the same --resource twice exits 2', async () => {
    const p = launch(['--resource', 'example.com/v1/Widget/widgets', '--resource', 'example.com/v1/Widget/widgets']);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toContain('already registered');
  }, 30_000);

  it("[testing: bin files] --crd serves the CRD's kind, --seed creates objects (namespaces made as needed), --personality uncached pages rv=0", async () => {
    dir = await mkdtemp(join(tmpdir(), 'rl-cli-'));
    const crd = join(dir, 'crd.json');
    const seed = join(dir, 'seed.json');
    await writeFile(
      crd,
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'gadgets.example.com' },
        spec: {
          group: 'example.com',
          scope: 'Namespaced',
          names: { plural: 'gadgets', kind: 'Gadget' },
          versions: [{ name: 'v1', served: true, storage: true }],
        },
      }),
    );
    await writeFile(
      seed,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1', namespace: 'team' }, spec: { size: 1 } },
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c1', namespace: 'team' }, data: { a: 'b' } },
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c2', namespace: 'team' }, data: { a: 'c' } },
        ],
      }),
    );
    const p = launch(['--crd', crd, '--seed', seed, '--personality', 'uncached']);
    const url = await p.firstLine;
    const g = (await (await fetch(`${url}/apis/example.com/v1/namespaces/team/gadgets`)).json()) as {
      items: Array<{ metadata: { name: string } }>;
    };
    expect(g.items.map((i) => i.metadata.name)).toEqual(['g1']);
    const paged = (await (await fetch(`${url}/api/v1/namespaces/team/configmaps?resourceVersion=0&limit=1`)).json()) as {
      items: unknown[];
      metadata: { continue?: string };
    };
    expect(paged.items).toHaveLength(1);
    expect(paged.metadata.continue).toBeDefined();
    expect(p.stderr()).toContain('established 1 CRD(s): gadgets.example.com');
    p.proc.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  }, 30_000);

  it('[testing: bin files] a YAML file, an unknown kind or a bad personality exits 2 with the reason', async () => {
    dir = await mkdtemp(join(tmpdir(), 'rl-cli-'));
    const yaml = join(dir, 'x.yaml');
    await writeFile(yaml, 'apiVersion: v1\nkind: ConfigMap\n');
    const a = launch(['--seed', yaml]);
    expect(await a.exit).toBe(2);
    expect(a.stderr()).toContain('reads JSON manifests only');
    const unknown = join(dir, 'u.json');
    await writeFile(unknown, JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } }));
    const b = launch(['--seed', unknown]);
    expect(await b.exit).toBe(2);
    expect(b.stderr()).toContain('no resource serves kind Deployment in apps/v1');
    const c = launch(['--personality', 'fast']);
    expect(await c.exit).toBe(2);
  }, 30_000);

  it('[testing: ShardedListAndWatch off] --feature-gates ShardedListAndWatch=false ignores shardSelector; the default serves it; an unknown gate exits 2', async () => {
    const selector = encodeURIComponent("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
    for (const [args, sharded] of [
      [['--seed-pods', '8'], true],
      [['--seed-pods', '8', '--feature-gates', 'ShardedListAndWatch=false'], false],
    ] as const) {
      const p = launch([...args]);
      const url = await p.firstLine;
      const list = (await (await fetch(`${url}/api/v1/namespaces/default/pods?shardSelector=${selector}`)).json()) as {
        metadata: { shardInfo?: unknown };
        items: unknown[];
      };
      expect(list.metadata.shardInfo !== undefined).toBe(sharded);
      if (!sharded) expect(list.items).toHaveLength(8);
      p.proc.kill('SIGTERM');
      expect(await p.exit).toBe(0);
    }
    const bad = launch(['--feature-gates', 'Bogus=true']);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toContain('unrecognized feature gate: Bogus');
  }, 30_000);
});
