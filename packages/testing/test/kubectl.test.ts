import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { KUBECTL_MISSING, kubectlBinary } from '@reconcile-loop/test-support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';

const run = promisify(execFile);

const kubectl = kubectlBinary();

if (kubectl === undefined && process.env['CI'] !== undefined && process.env['CI'] !== '') {
  // In CI a missing kubectl is a broken environment, not a reason to skip.
  describe('kubectl against the embedded apiserver', () => {
    it('[testing: kubectl] kubectl is installed in CI', () => {
      throw new Error(KUBECTL_MISSING);
    });
  });
} else {
  if (kubectl === undefined) console.warn(`[testing] skipping kubectl tests: ${KUBECTL_MISSING}`);
  describe.skipIf(kubectl === undefined)(
    `kubectl against the embedded apiserver${kubectl === undefined ? ` (skipped: ${KUBECTL_MISSING})` : ''}`,
    () => {
      let server: ApiServer;
      let dir: string;
      let env: NodeJS.ProcessEnv;

      beforeEach(async () => {
        server = await startApiServer();
        dir = await mkdtemp(join(tmpdir(), 'rl-kubectl-'));
        await server.writeKubeconfig(join(dir, 'kubeconfig'));
        env = { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir };
      });
      afterEach(async () => {
        await server.close();
        await rm(dir, { recursive: true, force: true });
      });

      const k = async (...args: string[]): Promise<{ stdout: string; stderr: string }> =>
        run(kubectl!, ['--cache-dir', join(dir, 'cache'), ...args], { env, timeout: 15_000 });

      it('[testing: kubectl apply] kubectl apply with default validation (client- and server-side) of a CRD, then of its objects, ConfigMaps and a Pod', async () => {
        const { writeFile } = await import('node:fs/promises');
        const crd = join(dir, 'crd.json');
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
        // No --validate=false anywhere: kubectl reads /openapi/v3 (or, before 1.25, /openapi/v2) first.
        expect((await k('apply', '--server-side', '-f', crd)).stdout).toContain(
          'customresourcedefinition.apiextensions.k8s.io/gadgets.example.com serverside-applied',
        );
        await k('wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=10s');
        const g = join(dir, 'g.json');
        await writeFile(
          g,
          JSON.stringify({
            apiVersion: 'example.com/v1',
            kind: 'Gadget',
            metadata: { name: 'g', namespace: 'default' },
            spec: { a: 1 },
          }),
        );
        expect((await k('apply', '--server-side', '-f', g)).stdout).toContain('gadget.example.com/g serverside-applied');
        const h = join(dir, 'h.json');
        await writeFile(
          h,
          JSON.stringify({
            apiVersion: 'example.com/v1',
            kind: 'Gadget',
            metadata: { name: 'h', namespace: 'default' },
            spec: { b: 2 },
          }),
        );
        expect((await k('apply', '-f', h)).stdout).toContain('gadget.example.com/h created');
        const cm = join(dir, 'cm.json');
        await writeFile(
          cm,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'c', namespace: 'default' },
            data: { a: 'b' },
          }),
        );
        expect((await k('apply', '-f', cm)).stdout).toContain('configmap/c created');
        await writeFile(
          cm,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'c', namespace: 'default' },
            data: { a: 'z' },
          }),
        );
        expect((await k('apply', '-f', cm)).stdout).toContain('configmap/c configured');
        expect((await k('get', 'configmap', 'c', '-o', 'jsonpath={.data.a}')).stdout).toBe('z');
        const pod = join(dir, 'pod.json');
        const podBody = (image: string): string =>
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'p', namespace: 'default' },
            spec: {
              containers: [
                { name: 'c', image: 'busybox' },
                { name: 'd', image },
              ],
            },
          });
        await writeFile(pod, podBody('nginx:1'));
        expect((await k('apply', '-f', pod)).stdout).toContain('pod/p created');
        // A client-side strategic merge patch keyed by container name: both containers survive.
        await writeFile(pod, podBody('nginx:2'));
        expect((await k('apply', '-f', pod)).stdout).toContain('pod/p configured');
        expect((await k('get', 'pod', 'p', '-o', 'jsonpath={.spec.containers[*].image}')).stdout).toBe('busybox nginx:2');
        expect((await k('get', 'gadgets')).stdout).toMatch(/^NAME\s+AGE\ng\s+\d+s\nh\s+\d+s\n$/);
      }, 60_000);

      it('[testing: kubectl] get pods prints the server-side Table', async () => {
        server.seedPods(2, { labels: { app: 'demo' } });
        server.kubelet.bind('default', 'pod-0', 'node-a');
        server.kubelet.setRunningReady('default', 'pod-0');
        const { stdout } = await k('get', 'pods');
        const lines = stdout.trim().split('\n');
        expect(lines[0]).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
        expect(lines[1]).toMatch(/^pod-0\s+1\/1\s+Running\s+0\s+\d+s$/);
        expect(lines[2]).toMatch(/^pod-1\s+0\/1\s+Pending\s+0\s+\d+s$/);
        const wide = await k('get', 'pods', '-o', 'wide', '-l', 'app=demo');
        expect(wide.stdout).toMatch(/pod-0\s+1\/1\s+Running\s+0\s+\d+s\s+10\.244\.\S+\s+node-a/);
        const json = JSON.parse((await k('get', 'pods', '-o', 'json')).stdout) as {
          items: Array<{ metadata: { name: string } }>;
        };
        expect(json.items.map((p) => p.metadata.name)).toEqual(['pod-0', 'pod-1']);
      }, 30_000);

      it('[testing: kubectl] get pods -w streams a row per event', async () => {
        server.seedPods(1);
        const child = spawn(kubectl!, ['--cache-dir', join(dir, 'cache'), 'get', 'pods', '-w'], {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        try {
          const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
          const next = async (): Promise<string> => {
            const r = await lines.next();
            if (r.done === true) throw new Error('kubectl get -w ended early');
            return r.value;
          };
          expect(await next()).toMatch(/^NAME\s+READY\s+STATUS/);
          expect(await next()).toMatch(/^pod-0\s+0\/1\s+Pending/);
          await server.waitForWatches(1, 10_000);
          server.createPod({ metadata: { name: 'newcomer' } });
          expect(await next()).toMatch(/^newcomer\s+0\/1\s+Pending/);
          server.kubelet.bind('default', 'newcomer', 'node-a');
          server.kubelet.setRunningReady('default', 'newcomer');
          // bind and setRunningReady are two writes: two rows, the second Running.
          await next();
          expect(await next()).toMatch(/^newcomer\s+1\/1\s+Running/);
        } finally {
          child.kill('SIGTERM');
        }
      }, 30_000);

      it('[testing: kubectl] delete pod: unbound goes at once; bound shows Terminating until forced', async () => {
        server.seedPods(1);
        const del = await k('delete', 'pod', 'pod-0');
        expect(del.stdout.trim()).toBe('pod "pod-0" deleted');
        expect(server.getPod('default', 'pod-0')).toBeUndefined();
        server.createPod({ metadata: { name: 'bound' } });
        server.kubelet.bind('default', 'bound', 'node-a');
        server.kubelet.setRunningReady('default', 'bound');
        await k('delete', 'pod', 'bound', '--wait=false');
        expect(server.getPod('default', 'bound')?.metadata.deletionTimestamp).toBeDefined();
        expect((await k('get', 'pods')).stdout).toMatch(/bound\s+1\/1\s+Terminating/);
        const forced = await k('delete', 'pod', 'bound', '--grace-period=0', '--force');
        expect(forced.stdout).toContain('pod "bound" force deleted');
        expect(server.getPod('default', 'bound')).toBeUndefined();
        const missing = await k('delete', 'pod', 'ghost').catch((e: { stderr: string }) => e);
        expect((missing as { stderr: string }).stderr).toContain('pods "ghost" not found');
      }, 30_000);

      it('[testing: kubectl] custom resources are discovered and listed through /apis', async () => {
        const ref = server.registerResource({
          group: 'example.com',
          version: 'v1',
          kind: 'Widget',
          plural: 'widgets',
          shortNames: ['wd'],
        });
        server.createObject(ref, { metadata: { name: 'w1', namespace: 'default' }, spec: {} });
        const { stdout } = await k('get', 'wd');
        expect(stdout).toMatch(/^NAME\s+AGE\nw1\s+\d+s\n$/);
      }, 30_000);
    },
  );
}
