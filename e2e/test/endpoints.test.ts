import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { Manager, type ManagerExit } from '@reconcile-loop/manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointsController } from '../../examples/endpoints/src/controller.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';
import { eventually, podManifest, uniqueNamespace } from '../src/index.js';

// The second example (examples/endpoints: for each Service with a selector, a ConfigMap of its Ready
// pods' IPs) against the real kube-apiserver, wired as its main.ts wires it — a Manager with a Lease —
// two replicas in this process, each its own Manager and client.
//
// What is simulated: no kubelet and no kube-controller-manager run here. Pods are never bound (a
// delete removes them at once); the test writes their status (Ready, podIP) as a kubelet would. No
// garbage collector: after a Service delete the test checks the owner reference the GC would follow
// and deletes the ConfigMap itself. The lost watch is a TCP proxy in front of the apiserver (replica
// one reaches the cluster through it) that stalls, then resets every connection.

const availability = e2eAvailability();
const LEASE = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 } as const;

describe.skipIf(!availability.run)('[endpoints: e2e] the endpoints example against the real kube-apiserver', () => {
  const env = useE2eEnvironment(availability);
  const ns = uniqueNamespace('e2e-endpoints');
  let core: CoreV1Api;
  const replicas: { manager: Manager; exit: Promise<ManagerExit> }[] = [];

  beforeAll(async () => {
    const kc = new KubeConfig();
    kc.loadFromString(env().endpoint.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    for (const { manager, exit } of replicas) {
      manager.stop();
      await exit;
    }
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  function replica(kubeconfig: string, identity: string): Manager {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfig);
    const manager = new Manager({
      kubeConfig,
      signals: false,
      leaderElection: { namespace: ns, name: 'endpoints-example', identity, ...LEASE },
      shutdown: { timeoutMs: 10_000 },
    });
    endpointsController(manager, { namespace: ns });
    replicas.push({ manager, exit: manager.run() });
    return manager;
  }

  async function pod(name: string, labels: Record<string, string>, ip: string): Promise<void> {
    await core.createNamespacedPod({ namespace: ns, body: podManifest(name, { labels }) });
    await setReady(name, true, ip);
  }

  /** What a kubelet writes: Running, the pod's IP, Ready as given. */
  async function setReady(name: string, ready: boolean, ip: string): Promise<void> {
    const current: V1Pod = await core.readNamespacedPod({ namespace: ns, name });
    const status = ready ? 'True' : 'False';
    const now = new Date();
    current.status = {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [
        { type: 'ContainersReady', status, lastTransitionTime: now },
        { type: 'Ready', status, lastTransitionTime: now },
      ],
    };
    await core.replaceNamespacedPodStatus({ namespace: ns, name, body: current });
  }

  async function relabel(name: string, labels: Record<string, string>): Promise<void> {
    const current: V1Pod = await core.readNamespacedPod({ namespace: ns, name });
    current.metadata!.labels = labels;
    await core.replaceNamespacedPod({ namespace: ns, name, body: current });
  }

  const service = (name: string, selector: Record<string, string>) =>
    core.createNamespacedService({ namespace: ns, body: { metadata: { name }, spec: { selector, ports: [{ port: 80 }] } } });

  async function dataOf(name: string): Promise<Record<string, string> | undefined> {
    try {
      return (await core.readNamespacedConfigMap({ namespace: ns, name: `${name}-endpoints` })).data ?? {};
    } catch (error) {
      if ((error as { code?: number }).code === 404) return undefined;
      throw error;
    }
  }

  async function converges(name: string, want: Record<string, string> | undefined, what: string): Promise<void> {
    let last: unknown;
    await eventually(
      `${name}-endpoints ${what}`,
      async () => isDeepStrictEqual((last = await dataOf(name)), want),
      () => ({ has: last, want }),
    );
  }

  it('converges, survives a lost watch, and a standby takes over after the leader stops', async () => {
    const controlPlane = env().controlPlane;
    const proxied = controlPlane === undefined ? undefined : await controlPlane.proxy();
    const one = replica(proxied?.kubeconfig ?? env().endpoint.kubeconfig, 'replica-1');
    await eventually(
      'replica-1 leads',
      () => one.elector!.isLeader(),
      () => one.health(),
    );
    const two = replica(env().endpoint.kubeconfig, 'replica-2');

    await pod('web-0', { app: 'web' }, '10.1.0.10');
    await pod('web-1', { app: 'web', track: 'canary' }, '10.1.0.11');
    await pod('web-2', { app: 'extra' }, '10.1.0.122');
    await pod('db-0', { app: 'db' }, '10.1.0.20');
    const web = await service('web', { app: 'web' });
    await converges('web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' }, 'lists the Ready pods');
    const cm = await core.readNamespacedConfigMap({ namespace: ns, name: 'web-endpoints' });
    expect(cm.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Service', name: 'web', uid: web.metadata!.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(cm.metadata?.managedFields?.map((f) => [f.manager, f.operation])).toEqual([['endpoints-example', 'Apply']]);

    // Ready toggles.
    await setReady('web-0', false, '10.1.0.10');
    await converges('web', { 'web-1': '10.1.0.11' }, 'drops a pod no longer Ready');
    await setReady('web-0', true, '10.1.0.10');
    await converges('web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11' }, 'takes it back when Ready');

    // The issue's case: a Service created after web-2's last event, then web-2 relabelled away.
    await service('extra', { app: 'extra' });
    await converges('extra', { 'web-2': '10.1.0.122' }, 'selects web-2');
    await relabel('web-2', { app: 'web' });
    await converges('extra', {}, 'is {} after web-2 was relabelled away');
    await converges('web', { 'web-0': '10.1.0.10', 'web-1': '10.1.0.11', 'web-2': '10.1.0.122' }, 'gains web-2');

    // A selector change on the Service.
    await core.patchNamespacedService({
      namespace: ns,
      name: 'web',
      body: [{ op: 'replace', path: '/spec/selector', value: { track: 'canary' } }],
    });
    await converges('web', { 'web-1': '10.1.0.11' }, 'follows the narrowed selector');

    if (proxied !== undefined) {
      // A lost watch: replica one's connections stall, changes happen, every connection is reset;
      // the reflectors re-watch from their resourceVersion (or relist) and the ConfigMap converges.
      proxied.proxy.stall();
      await relabel('web-1', { app: 'web' });
      await core.deleteNamespacedPod({ namespace: ns, name: 'web-0' });
      proxied.proxy.dropConnections();
      proxied.proxy.resume();
      await converges('web', {}, 'is {} after the lost watch (web-1 relabelled away from track=canary)');
    }

    // A pod delete.
    await core.patchNamespacedService({
      namespace: ns,
      name: 'web',
      body: [{ op: 'replace', path: '/spec/selector', value: { app: 'db' } }],
    });
    await converges('web', { 'db-0': '10.1.0.20' }, 'selects db-0');
    await core.deleteNamespacedPod({ namespace: ns, name: 'db-0' });
    await converges('web', {}, 'is {} after db-0 was deleted');
    expect(two.elector!.isLeader()).toBe(false);

    // Leader handover: replica one stops (its Lease is released), replica two takes over and converges.
    one.stop();
    expect((await replicas[0]!.exit).code).toBe(0);
    await eventually(
      'replica-2 leads',
      () => two.elector!.isLeader(),
      () => two.health(),
    );
    await pod('db-1', { app: 'db' }, '10.1.0.21');
    await converges('web', { 'db-1': '10.1.0.21' }, 'converges under replica-2');

    // A Service delete: no garbage collector runs here; the reference is the GC's to follow.
    await core.deleteNamespacedService({ namespace: ns, name: 'extra' });
    const orphan = await core.readNamespacedConfigMap({ namespace: ns, name: 'extra-endpoints' });
    expect(orphan.metadata?.ownerReferences?.[0]?.name).toBe('extra');
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'extra-endpoints' }); // the test plays the GC
    // A fence: a Service created after both deletes converges only once they were handled.
    await service('after', { app: 'db' });
    await converges('after', { 'db-1': '10.1.0.21' }, 'converges (the fence)');
    expect(await dataOf('extra')).toBeUndefined();
  });
});
