/**
 * The narrated demo, beside the example and never inside it: the controller of `controller.ts` on a
 * manager, against an embedded apiserver, with a step after each convergence. `pnpm start:demo`.
 */
import { isDeepStrictEqual } from 'node:util';
import { pathToFileURL } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { kinds } from '@reconcile-loop/k8s-types';
import { Manager } from '@reconcile-loop/manager';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { endpointsController } from './controller.js';

const NS = 'shop';

/** Runs the story, printing one line per step; resolves with the manager's exit code. */
export async function demo(print: (line: string) => void = console.log): Promise<number> {
  await using server = await startApiServer();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const manager = new Manager({ kubeConfig, signals: false });
  endpointsController(manager, { namespace: NS });
  const exit = manager.run();
  const step = async (what: string, act: () => void, service: string, want: Record<string, string> | undefined) => {
    act();
    await converged(server, service, want);
    print(`${what.padEnd(52)} ${service}-endpoints = ${JSON.stringify(want) ?? '(none)'}`);
  };
  const services = kinds.Service.resource;
  const service = (name: string, selector: Record<string, string>) => () =>
    void server.createObject(services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: NS },
      spec: { selector, ports: [{ port: 80 }] },
    });
  const ready =
    (name: string, ip: string, isReady = true) =>
    () =>
      server.kubelet.setRunningReady(NS, name, { podIP: ip, ready: isReady });
  try {
    for (const [name, app] of [
      ['web-0', 'web'],
      ['web-1', 'web'],
      ['web-2', 'extra'],
    ] as const) {
      server.createPod({ metadata: { name, namespace: NS, labels: { app } }, spec: { containers: [{ name: 'c', image: 'x' }] } });
      server.kubelet.bind(NS, name, 'node-a');
    }
    await step(
      'web-0 Ready, then Service web (app=web)',
      () => (ready('web-0', '10.1.0.10')(), service('web', { app: 'web' })()),
      'web',
      { 'web-0': '10.1.0.10' },
    );
    await step('web-1 becomes Ready', ready('web-1', '10.1.0.11'), 'web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' });
    await step('web-0 is no longer Ready', ready('web-0', '10.1.0.10', false), 'web', { 'web-1': '10.1.0.11' });
    ready('web-2', '10.1.0.122')();
    await step('Service extra (app=extra), after web-2 last changed', service('extra', { app: 'extra' }), 'extra', {
      'web-2': '10.1.0.122',
    });
    const relabel = () => void server.updatePod(NS, 'web-2', (p) => void (p.metadata.labels = { app: 'web' }));
    await step('web-2 relabelled app=web: extra learns it left', relabel, 'extra', {});
    await step('... and web gains it', () => {}, 'web', { 'web-1': '10.1.0.11', 'web-2': '10.1.0.122' });
    const gone = () => void server.deletePod(NS, 'web-1', { gracePeriodSeconds: 0 });
    await step('web-1 deleted', gone, 'web', { 'web-2': '10.1.0.122' });
  } finally {
    manager.stop(); // also when a step fails: the manager never outlives the demo
  }
  const { code } = await exit;
  print(`stopped: exit ${code}`);
  return code;
}

async function converged(server: ApiServer, service: string, want: Record<string, string> | undefined): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const cm = server.getObject(kinds.ConfigMap.resource, NS, `${service}-endpoints`);
    const data = cm === undefined ? undefined : ((cm['data'] as Record<string, string> | undefined) ?? {});
    if (isDeepStrictEqual(data, want)) return;
    if (Date.now() > deadline) throw new Error(`${service}-endpoints is ${JSON.stringify(data)}, wanted ${JSON.stringify(want)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await demo();
