import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  loadAllYaml,
  loadYaml,
  type V1CustomResourceDefinition,
  type V1Role,
} from '@kubernetes/client-node';
import { inShardRanges, shardHash } from '@reconcile-loop/primitives';
import { ShardMember } from '@reconcile-loop/sharding';
import { within } from '@reconcile-loop/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FINALIZER, GROUP, PLURAL } from '../../examples/cellset/src/api.js';
import { createCellSetController, type CellSetController } from '../../examples/cellset/src/controller.js';
import {
  DEFAULT_WRITE_BURST,
  DEFAULT_WRITE_QPS,
  describeDecision,
  runController,
  stderrLogger,
  stopController,
} from '../../examples/cellset/demo/run.js';
import { REPLICA_PACE, RING, SHARD_TIMINGS } from '../../examples/cellset/demo/shard-config.js';
import { tappedClient } from '../../examples/cellset/demo/tap.js';
import { observedGate } from '../../examples/cellset/demo/observed-gate.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';
import { eventually, uniqueNamespace, withToken } from '../src/index.js';

// The flagship example (examples/cellset) against the real kube-apiserver, RBAC on (the admin token
// is in system:masters; every controller here runs as a ServiceAccount bound to the shipped Role
// only, deploy/rbac.yaml). The CRD is the shipped deploy/crd.yaml, installed as the admin.
//
// What is simulated: no kube-controller-manager and no kubelet run here. Pods are never bound, so a
// delete removes them at once; the test writes pod status itself where readiness matters. No
// garbage collector is needed: the controller's finalizer deletes the pods before the set goes.

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'cellset');
const deploy = (file: string) => readFileSync(join(EXAMPLE, 'deploy', file), 'utf8');
const availability = e2eAvailability();

interface CellSetObject {
  metadata: { name: string; generation?: number; finalizers?: string[]; uid?: string };
  status?: {
    replicas?: number;
    readyReplicas?: number;
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string }>;
  };
}

/** A CellSet child process, started the way a user starts the example (its start script's command). */
class ControllerProcess {
  readonly out: string[] = [];
  readonly err: string[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], env: Record<string, string> = {}) {
    // `pnpm start` of the example is `tsx --conditions=@reconcile-loop/source demo/main.ts`; run that
    // command from node_modules/.bin, under this process's Node (26), in its own process group so a
    // kill reaches tsx's node child too.
    this.child = spawn(
      join(EXAMPLE, 'node_modules', '.bin', 'tsx'),
      ['--conditions=@reconcile-loop/source', 'demo/main.ts', ...args],
      {
        cwd: EXAMPLE,
        env: { ...process.env, ...env, PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}` },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines = (into: string[]) => {
      let rest = '';
      return (chunk: Buffer) => {
        const text = rest + chunk.toString('utf8');
        const parts = text.split('\n');
        rest = parts.pop()!;
        into.push(...parts);
      };
    };
    this.child.stdout!.on('data', lines(this.out));
    this.child.stderr!.on('data', lines(this.err));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Signals the whole process group (tsx and its node child). */
  kill(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.child.pid!, signal);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ESRCH') throw error;
    }
  }

  /** Signals the controller's own node process (the pid it prints first), not tsx. */
  signalController(signal: NodeJS.Signals): void {
    const pid = Number(/\bpid (\d+)\b/.exec(this.out[0] ?? '')?.[1]);
    if (!Number.isInteger(pid)) throw new Error(`the controller printed no pid: ${JSON.stringify(this.out.slice(0, 3))}`);
    process.kill(pid, signal);
  }

  state(): unknown {
    return { stdout: this.out.slice(-30), stderr: this.err.slice(-30) };
  }
}

/** One request as the replica's client saw it answered. */
interface WireCall {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly status: number;
}

/** The RBAC verb of a request on a collection or a named object (no subresources here). */
function rbacVerb({ method, path, query }: WireCall, collection: string): string {
  const named = path !== collection;
  if (method === 'GET') return named ? 'get' : query.get('watch') === 'true' || query.get('watch') === '1' ? 'watch' : 'list';
  return { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: named ? 'delete' : 'deletecollection' }[method] ?? method;
}

/**
 * One replica of the CellSet controller scaled out, in this process, the way demo/shard-replica.ts
 * builds one (the example's tapped client, ring and timings; the stderr logger of the controller
 * mode): `createCellSetController({ shardGate })` with a `ShardMember` on its own Lease, through a
 * kubeconfig for the bound ServiceAccount only. The gate is the member, its admissions recorded.
 */
/**
 * The replicas' default Lease: 10 s / 8 s (client-go's order), longer than the demo's 4 s: the
 * converge test asserts a ring that never changed, which a loaded machine's pause past a 4 s Lease
 * would break.
 */
const LONG_LEASE = Object.freeze({ leaseDurationMs: 10_000, renewDeadlineMs: 8_000 });

class ShardReplica {
  readonly wire: WireCall[] = [];
  readonly errors: string[] = [];
  readonly decisions: string[] = [];
  /** Every hash the member admitted (`enter` returned a release). */
  readonly admitted = new Set<string>();
  readonly member: ShardMember;
  readonly controller: CellSetController;
  readonly #stop = new AbortController();
  readonly identity: string;
  #running: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  constructor(
    identity: string,
    namespace: string,
    kubeconfig: string,
    lease: { readonly leaseDurationMs: number; readonly renewDeadlineMs: number } = LONG_LEASE,
  ) {
    this.identity = identity;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfig);
    const client = tappedClient(
      kubeConfig,
      {
        afterResponse: (method, url, status) =>
          void this.wire.push({ method, path: url.pathname, query: url.searchParams, status }),
      },
      { rateLimit: { qps: DEFAULT_WRITE_QPS, burst: DEFAULT_WRITE_BURST } },
    );
    const logger = stderrLogger((l) => this.errors.push(l), identity);
    // expectedMembers: both replicas start together, so the ring settles on seeing both. The demo's
    // timings but, by default, a longer Lease (LONG_LEASE).
    this.member = new ShardMember({
      client,
      namespace,
      ring: RING,
      identity,
      ...SHARD_TIMINGS,
      ...lease,
      expectedMembers: 2,
      logger,
    });
    const member = this.member;
    const gate = observedGate(member, { admitted: (hash) => this.admitted.add(hash) });
    this.controller = createCellSetController({
      client,
      namespace,
      eventsClient: client.withLane('events'),
      shardGate: gate,
      ...REPLICA_PACE,
      logger,
      onDecision: (d) => this.decisions.push(describeDecision(d)),
    });
  }

  /** The member joins the ring and the loop syncs its caches (as shard-replica.ts starts them). */
  async start(): Promise<void> {
    this.#running = this.member.run(this.#stop.signal);
    await within(this.controller.loop.start(), `${this.identity}: the loop's caches synced`, 60_000);
  }

  /** The graceful stop: the loop stopped, the member drained and its Lease released. Idempotent. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#stop.abort();
      await within(stopController(this.controller, { graceMs: 5_000 }), `${this.identity}: stopped`, 30_000);
      await within(this.#running ?? Promise.resolve(), `${this.identity}: its member stopped`, 30_000);
    })();
    return this.#stopped;
  }

  /** Whether this replica's member owns `hash` now. */
  owns(hash: string): boolean {
    return inShardRanges(hash, this.member.ranges);
  }

  state(): unknown {
    return {
      identity: this.identity,
      member: this.member.status(),
      errors: this.errors.slice(-10),
      decisions: this.decisions.slice(-10),
    };
  }
}

describe.skipIf(!availability.run)(
  'the CellSet controller against the real kube-apiserver (RBAC on, least-privilege Role)',
  () => {
    const env = useE2eEnvironment(availability);
    let admin: KubeConfig;
    let core: CoreV1Api;
    let rbac: RbacAuthorizationV1Api;
    let objects: CustomObjectsApi;
    /** Creates the CellSet `name` with `replicas` in `ns`, as the admin. */
    const createCellSet = async (ns: string, name: string, replicas: number): Promise<CellSetObject> =>
      (await objects.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: PLURAL,
        body: cellSet(ns, name, replicas),
      })) as CellSetObject;
    const namespaces: string[] = [];
    const children: ControllerProcess[] = [];
    const replicas: ShardReplica[] = [];
    const tmp = mkdtempSync(join(tmpdir(), 'cellset-e2e-'));

    beforeAll(async () => {
      admin = new KubeConfig();
      admin.loadFromString(env().endpoint.kubeconfig);
      core = admin.makeApiClient(CoreV1Api);
      rbac = admin.makeApiClient(RbacAuthorizationV1Api);
      objects = admin.makeApiClient(CustomObjectsApi);
      const crds = admin.makeApiClient(ApiextensionsV1Api);
      await crds
        .createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(deploy('crd.yaml')) })
        .catch((error: { code?: number }) => {
          if (error.code !== 409) throw error; // an external cluster may have it already
        });
      await eventually(
        'the CRD established',
        async () =>
          (await crds.readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` })).status?.conditions?.some(
            (c) => c.type === 'Established' && c.status === 'True',
          ),
        () => 'not established',
      );
    }, 120_000);

    afterAll(async () => {
      for (const child of children) child.kill('SIGKILL');
      await Promise.allSettled(replicas.map((r) => r.stop()));
      for (const ns of namespaces) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
      rmSync(tmp, { recursive: true, force: true });
    });

    /**
     * A fresh namespace with the shipped ServiceAccount, Role and RoleBinding (namespace rewritten;
     * `edit` may change the Role, e.g. drop a verb), and a kubeconfig for that ServiceAccount.
     */
    async function boundNamespace(
      prefix: string,
      edit?: (role: V1Role) => void,
    ): Promise<{ ns: string; kubeconfig: string; user: string }> {
      const ns = uniqueNamespace(prefix);
      namespaces.push(ns);
      await core.createNamespace({ body: { metadata: { name: ns } } });
      const docs = loadAllYaml(deploy('rbac.yaml')) as Array<{
        kind: string;
        metadata: { namespace?: string };
        subjects?: Array<{ namespace?: string }>;
      }>;
      for (const doc of docs) {
        doc.metadata.namespace = ns;
        for (const subject of doc.subjects ?? []) subject.namespace = ns;
        if (doc.kind === 'ServiceAccount') await core.createNamespacedServiceAccount({ namespace: ns, body: doc });
        else if (doc.kind === 'Role') {
          edit?.(doc as V1Role);
          await rbac.createNamespacedRole({ namespace: ns, body: doc as V1Role });
        } else if (doc.kind === 'RoleBinding') await rbac.createNamespacedRoleBinding({ namespace: ns, body: doc as never });
        else throw new Error(`unexpected ${doc.kind} in deploy/rbac.yaml`);
      }
      const token = (
        await core.createNamespacedServiceAccountToken({
          name: 'cellset-controller',
          namespace: ns,
          body: { spec: { audiences: [], expirationSeconds: 3600 } },
        })
      ).status?.token;
      if (!token) throw new Error('TokenRequest returned no token');
      return { ns, kubeconfig: withToken(admin, token).exportConfig(), user: `system:serviceaccount:${ns}:cellset-controller` };
    }

    const cellSet = (ns: string, name: string, replicas: number) => ({
      apiVersion: `${GROUP}/v1`,
      kind: 'CellSet',
      metadata: { name, namespace: ns },
      spec: {
        replicas,
        template: {
          metadata: { labels: { app: 'engine' } },
          spec: { automountServiceAccountToken: false, containers: [{ name: 'engine', image: 'registry.invalid/e2e/pause:1' }] },
        },
      },
    });
    const getSet = async (ns: string, name: string): Promise<CellSetObject | undefined> =>
      (
        objects.getNamespacedCustomObject({
          group: GROUP,
          version: 'v1',
          namespace: ns,
          plural: PLURAL,
          name,
        }) as Promise<CellSetObject>
      ).catch((error: { code?: number }) => {
        if (error.code === 404) return undefined;
        throw error;
      });
    const podsOf = async (ns: string, owner: string) =>
      (await core.listNamespacedPod({ namespace: ns })).items.filter((p) =>
        p.metadata?.ownerReferences?.some((r) => r.kind === 'CellSet' && r.name === owner && r.controller === true),
      );
    /** What a kubelet would write: Running and Ready (the pods are never bound; status is all the controller reads). */
    const markReady = async (ns: string, name: string) => {
      const pod = await core.readNamespacedPod({ namespace: ns, name });
      const now = new Date();
      pod.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] };
      await core.replaceNamespacedPodStatus({ namespace: ns, name, body: pod });
    };

    it('[cellset: e2e converge] as a ServiceAccount bound to the shipped Role only: finalizer, pods with owner references, status, Events, scale down, and a delete that leaves nothing', async () => {
      const { ns, kubeconfig } = await boundNamespace('e2e-cellset');
      const out: string[] = [];
      const errors: string[] = [];
      const stop = new AbortController();
      const running = runController({
        kubeconfigYaml: kubeconfig,
        namespace: ns,
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
        signal: stop.signal,
        print: (l) => out.push(l),
        printError: (l) => errors.push(l),
      });
      const state = () => ({ out: out.slice(-20), errors: errors.slice(-20) });
      try {
        await eventually(
          'the controller synced and leading',
          () => out.some((l) => l.includes('synced CellSets and pods')) && out.some((l) => l.includes('leading as')),
          state,
          60_000,
        );
        await createCellSet(ns, 'web', 3);
        await eventually(
          'three pods and status',
          async () => (await podsOf(ns, 'web')).length === 3 && (await getSet(ns, 'web'))?.status?.replicas === 3,
          state,
          60_000,
        );
        const set = (await getSet(ns, 'web'))!;
        expect(set.metadata.finalizers).toEqual([FINALIZER]);
        expect(set.status).toMatchObject({ replicas: 3, observedGeneration: 1, readyReplicas: 0 });
        const pods = await podsOf(ns, 'web');
        expect(pods.map((p) => p.metadata!.name).sort()).toEqual(['web-0', 'web-1', 'web-2']);
        expect(pods.every((p) => p.metadata!.ownerReferences![0]!.uid === set.metadata.uid)).toBe(true);

        for (const name of ['web-0', 'web-1', 'web-2']) await markReady(ns, name);
        await eventually('readyReplicas 3', async () => (await getSet(ns, 'web'))?.status?.readyReplicas === 3, state, 60_000);

        const current = (await getSet(ns, 'web'))! as CellSetObject & { spec: { replicas: number } };
        current.spec.replicas = 2;
        await objects.replaceNamespacedCustomObject({
          group: GROUP,
          version: 'v1',
          namespace: ns,
          plural: PLURAL,
          name: 'web',
          body: current,
        });
        await eventually(
          'scaled to two at generation 2',
          async () => (await podsOf(ns, 'web')).length === 2 && (await getSet(ns, 'web'))?.status?.observedGeneration === 2,
          state,
          60_000,
        );

        await objects.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL, name: 'web' });
        await eventually(
          'the set gone with its pods',
          async () => (await getSet(ns, 'web')) === undefined && (await podsOf(ns, 'web')).length === 0,
          state,
          60_000,
        );

        const events = await admin.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns });
        const reasons = new Set(events.items.map((e) => e.reason));
        for (const reason of ['FinalizerAdded', 'CreatedPod', 'ScaledDown', 'DeletingPods'])
          expect(reasons, reason).toContain(reason);
        expect(errors.filter((l) => /forbidden/i.test(l))).toEqual([]); // the Role covered every request
      } finally {
        stop.abort();
      }
      expect(await running).toBe(0);
    }, 180_000);

    it("[cellset: e2e kill -9] the controller process (the example's start command, Node 26) is killed with SIGKILL mid-reconcile after its second create; restarted, it creates only the missing pod, writes the status, and a delete leaves no finalizer and no pods", async () => {
      const { ns, kubeconfig } = await boundNamespace('e2e-cellset-kill');
      const kubeconfigPath = join(tmp, `${ns}.kubeconfig`);
      writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
      const args = [
        '--controller',
        '--kubeconfig',
        kubeconfigPath,
        '--namespace',
        ns,
        '--lease-duration',
        '2',
        '--renew-deadline',
        '1.5',
        '--retry-period',
        '0.5',
      ];
      await createCellSet(ns, 'web', 3);

      const first = new ControllerProcess(args, { CELLSET_PAUSE_AFTER_CREATES: '2' });
      children.push(first);
      await eventually(
        'the first process paused after its second create',
        () => first.out.some((l) => l.includes('paused after creating 2 pods')),
        () => first.state(),
        90_000,
      );
      expect(first.out[0]).toContain(`cellset-controller: node ${process.version},`); // the Node this cell runs (26 in CI's e2e cell)
      first.kill('SIGKILL');
      expect(await first.exited).toMatchObject({ signal: 'SIGKILL' });

      // Killed mid-reconcile: two pods, the finalizer, no status yet.
      const before = await podsOf(ns, 'web');
      expect(before.map((p) => p.metadata!.name).sort()).toEqual(['web-0', 'web-1']);
      const killed = (await getSet(ns, 'web'))!;
      expect(killed.metadata.finalizers).toEqual([FINALIZER]);
      expect(killed.status?.observedGeneration).toBeUndefined();

      const second = new ControllerProcess(args);
      children.push(second);
      // Its first reconcile creates web-2 and reports the two pods it saw; the next one (once the cache
      // holds web-2) reports three.
      await eventually(
        'the restarted controller converged the status',
        async () => {
          const status = (await getSet(ns, 'web'))?.status;
          return status?.observedGeneration === 1 && status.replicas === 3;
        },
        () => second.state(),
        90_000,
      );
      const after = await podsOf(ns, 'web');
      expect(after.map((p) => p.metadata!.name).sort()).toEqual(['web-0', 'web-1', 'web-2']); // no duplicate, no gap
      // The two pods made before the kill are the same objects: not recreated.
      for (const pod of before)
        expect(after.find((p) => p.metadata!.name === pod.metadata!.name)!.metadata!.uid).toBe(pod.metadata!.uid);
      expect((await getSet(ns, 'web'))!.status).toMatchObject({ replicas: 3, observedGeneration: 1 });
      expect(second.out.filter((l) => l.includes('event CreatedPod'))).toEqual([expect.stringContaining('web-2')]);

      await objects.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL, name: 'web' });
      await eventually(
        'the set gone: finalizer lifted, pods deleted',
        async () => (await getSet(ns, 'web')) === undefined && (await podsOf(ns, 'web')).length === 0,
        () => second.state(),
        60_000,
      );

      // The graceful stop: SIGTERM to the controller's own node process (as a container runtime sends
      // it to PID 1). tsx, in between here, SIGKILLs its child when the child does not acknowledge a
      // signal the parent relays within 30 ms — a loaded machine's race, not the controller's.
      second.signalController('SIGTERM');
      expect(await second.exited).toMatchObject({ code: 0 });
      expect(second.out.at(-1)).toBe('cellset-controller: stopped cleanly');
      expect(second.err.filter((l) => /forbidden/i.test(l))).toEqual([]);
    }, 240_000);

    it('[cellset: e2e RBAC] a Role missing one verb (pods create) fails loudly: the 403 with the verb, the resource and the user on stderr, reconcile retried, no pod', async () => {
      const { ns, kubeconfig, user } = await boundNamespace('e2e-cellset-rbac', (role) => {
        const pods = role.rules!.find((r) => r.resources?.includes('pods'))!;
        pods.verbs = pods.verbs.filter((v) => v !== 'create');
      });
      const out: string[] = [];
      const errors: string[] = [];
      const stop = new AbortController();
      const running = runController({
        kubeconfigYaml: kubeconfig,
        namespace: ns,
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
        signal: stop.signal,
        print: (l) => out.push(l),
        printError: (l) => errors.push(l),
      });
      try {
        await createCellSet(ns, 'web', 1);
        const line = await eventually(
          'a forbidden create on stderr',
          () => errors.find((l) => l.includes('cannot create resource "pods"')),
          () => ({ out: out.slice(-10), errors }),
          60_000,
        );
        expect(line).toContain('reconcile failed; retrying after backoff');
        expect(line).toContain(
          `403 Forbidden: pods is forbidden: User "${user}" cannot create resource "pods" in API group "" in the namespace "${ns}"`,
        );
        // Retried, not given up on, and nothing else was refused: the finalizer went on (patch is granted).
        await eventually(
          'a second attempt',
          () => errors.filter((l) => l.includes('cannot create resource "pods"')).length >= 2,
          () => errors,
          60_000,
        );
        expect((await getSet(ns, 'web'))!.metadata.finalizers).toEqual([FINALIZER]);
        expect(await podsOf(ns, 'web')).toEqual([]);
      } finally {
        stop.abort();
      }
      expect(await running).toBe(0);
    }, 180_000);

    /** Two replicas scaled out in `ns`, started together (their Leases in the ring `RING`). */
    async function startReplicas(
      ns: string,
      kubeconfig: string,
      lease?: ConstructorParameters<typeof ShardReplica>[3],
    ): Promise<ShardReplica[]> {
      const started = ['replica-0', 'replica-1'].map((id) => new ShardReplica(id, ns, kubeconfig, lease));
      replicas.push(...started);
      await Promise.all(started.map((r) => r.start()));
      return started;
    }
    const leasesPath = (ns: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
    const onLeases = (ns: string, call: WireCall) => call.path === leasesPath(ns) || call.path.startsWith(`${leasesPath(ns)}/`);

    it("[cellset: e2e RBAC] scaled out (two replicas, each a ShardMember as shardGate) as the ServiceAccount bound to the shipped Role only: the ring settles, every CellSet converges, each admitted by exactly one replica, the lease verbs used are exactly the Role's, no 403", async () => {
      const { ns, kubeconfig } = await boundNamespace('e2e-cellset-shards');
      const [a, b] = await startReplicas(ns, kubeconfig);
      const pair = [a!, b!];
      const state = () => pair.map((r) => r.state());
      try {
        await eventually(
          'both members settled on a ring of two, its handover done',
          () =>
            pair.every((r) => {
              const s = r.member.status();
              return (
                s.holdsLease && s.settled && s.members.length === 2 && s.acknowledged.length === 2 && s.handover === undefined
              );
            }),
          state,
          60_000,
        );
        // Six CellSets, more until each replica owns at least one (the uid decides): both do real work.
        const sets: Array<{ name: string; hash: string }> = [];
        while (sets.length < 6 || !pair.every((r) => sets.some((s) => r.owns(s.hash)))) {
          if (sets.length === 16) throw new Error(`16 CellSets and one replica owns none: ${JSON.stringify(state())}`);
          const name = `cell-${String(sets.length).padStart(2, '0')}`;
          const created = await createCellSet(ns, name, 2);
          sets.push({ name, hash: shardHash(created.metadata.uid!) });
        }
        const listSets = async () =>
          (
            (await objects.listNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL })) as {
              items: CellSetObject[];
            }
          ).items;
        await eventually(
          'every CellSet converged: two pods each, status at generation 1',
          async () => {
            const listed = await listSets();
            const pods = (await core.listNamespacedPod({ namespace: ns })).items;
            return sets.every(({ name }) => {
              const status = listed.find((set) => set.metadata.name === name)?.status;
              const owned = pods.filter((p) => p.metadata?.ownerReferences?.some((o) => o.controller && o.name === name));
              return status?.replicas === 2 && status.observedGeneration === 1 && owned.length === 2;
            });
          },
          state,
          90_000,
        );
        // The ring never changed meanwhile (so "exactly one" is the claim to check, not a handover).
        for (const r of pair) expect(r.member.status().members, r.identity).toEqual(['replica-0', 'replica-1']);
        // Its ring reads succeed: the gate's readiness check passes, and the replica is ready.
        for (const r of pair) {
          const ready = r.controller.loop.health().ready;
          expect(
            ready.checks.find((c) => c.name === 'shard'),
            r.identity,
          ).toMatchObject({ name: 'shard', ok: true });
          expect(ready.ok, r.identity).toBe(true);
        }
        for (const { name, hash } of sets) {
          const owners = pair.filter((r) => r.owns(hash)).map((r) => r.identity);
          expect(owners, `${name}: owned by exactly one replica`).toHaveLength(1);
          expect(
            pair.filter((r) => r.admitted.has(hash)).map((r) => r.identity),
            `${name}: admitted by its owner only`,
          ).toEqual(owners);
          expect((await getSet(ns, name))!.metadata.finalizers).toEqual([FINALIZER]);
          expect((await podsOf(ns, name)).map((p) => p.metadata!.name).sort()).toEqual([`${name}-0`, `${name}-1`]);
        }
        for (const r of pair)
          expect(
            r.decisions.some((d) => d.startsWith('event CreatedPod')),
            r.identity,
          ).toBe(true);

        // The finalizer's cleanup, scaled out: each set's owner deletes its pods and lifts its finalizer.
        for (const { name } of sets)
          await objects.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL, name });
        await eventually(
          'every CellSet gone with its pods',
          async () => (await listSets()).length === 0 && (await core.listNamespacedPod({ namespace: ns })).items.length === 0,
          state,
          60_000,
        );
      } finally {
        await Promise.all(pair.map((r) => r.stop()));
      }
      // Released on the graceful stop (a PUT with no holder): the other members drop it at once.
      const leases = await admin.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: ns });
      expect(leases.items.map((l) => [l.metadata!.name, l.spec?.holderIdentity ?? ''])).toEqual([
        [`${RING}-replica-0`, ''],
        [`${RING}-replica-1`, ''],
      ]);

      // Nothing refused, and what the replicas did on leases is exactly what the Role grants there.
      const role = (loadAllYaml(deploy('rbac.yaml')) as V1Role[]).find((d) => d.kind === 'Role')!;
      const granted = role.rules!.find((r) => r.resources?.includes('leases'))!.verbs;
      for (const r of pair) {
        expect(
          r.wire.filter((c) => c.status === 403).map((c) => `${c.method} ${c.path}`),
          r.identity,
        ).toEqual([]);
        expect(
          r.errors.filter((l) => /forbidden/i.test(l)),
          r.identity,
        ).toEqual([]);
        const used = new Set(r.wire.filter((c) => onLeases(ns, c)).map((c) => rbacVerb(c, leasesPath(ns))));
        expect([...used].sort(), r.identity).toEqual([...granted].sort());
        // The ring's LIST is by the ring's label, never a watch.
        const lists = r.wire.filter((c) => c.path === leasesPath(ns) && c.method === 'GET');
        expect(lists.length, r.identity).toBeGreaterThan(0);
        expect(new Set(lists.map((c) => c.query.get('labelSelector'))), r.identity).toEqual(
          new Set([`sharding.reconcile-loop.dev/ring=${RING}`]),
        );
      }
    }, 240_000);

    it("[cellset: e2e RBAC] scaled out, a Role without `list` on leases fails loudly: each replica logs the 403 on the ring's LIST (verb, resource, user, namespace) once at error however many reads it refuses, holds its own Lease but admits nothing, its readiness fails on the `shard` check naming the 403 once past the lease duration, and stops cleanly", async () => {
      const { ns, kubeconfig, user } = await boundNamespace('e2e-cellset-shards-rbac', (role) => {
        const leases = role.rules!.find((r) => r.resources?.includes('leases'))!;
        leases.verbs = leases.verbs.filter((v) => v !== 'list');
      });
      // The demo's 4 s Lease (the ring never settles here, so no pause can change it): readiness fails
      // a lease duration after the first refused read, not 10 s.
      const [a, b] = await startReplicas(ns, kubeconfig, SHARD_TIMINGS);
      const pair = [a!, b!];
      const state = () => pair.map((r) => r.state());
      const refused = (r: ShardReplica) => r.errors.filter((l) => l.includes('cannot list resource "leases"'));
      try {
        await createCellSet(ns, 'web', 1);
        const created = Date.now();
        // Loud once: the first refused ring read at error with the apiserver's answer, the repeats (every
        // retry period, 0.5 s here) at debug; and in the 3 s after the CellSet was created, nothing admitted.
        await eventually(
          'five refused ring reads by each replica, 3 s after the CellSet was created',
          () => Date.now() - created >= 3_000 && pair.every((r) => r.member.status().ringRead.consecutiveFailures >= 5),
          state,
          30_000,
        );
        for (const r of pair) {
          // The apiserver's Status as the example's logger prints an error's (the same form as the pods 403 above).
          expect(refused(r)).toEqual([
            `${r.identity}: error failed to read the ring; keeping the last view: 403 Forbidden: leases.coordination.k8s.io is forbidden: User "${user}" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "${ns}"`,
          ]);
          // On the wire: every 403 is the ring's LIST (its own Lease's get/create/update are granted).
          const forbidden = r.wire.filter((c) => c.status === 403);
          expect(forbidden.length).toBeGreaterThanOrEqual(5);
          for (const c of forbidden) {
            expect(rbacVerb(c, leasesPath(ns))).toBe('list');
            expect(c.path).toBe(leasesPath(ns));
            expect(c.query.get('labelSelector')).toBe(`sharding.reconcile-loop.dev/ring=${RING}`);
          }
          // Safe while refused: it never saw the ring, so it claims no range and admits nothing.
          const status = r.member.status();
          expect(status).toMatchObject({ holdsLease: true, settled: false, ranges: [], inFlight: 0 });
          expect(r.controller.loop.health().shard?.gate).toMatchObject({ settled: false });
          expect(r.admitted.size).toBe(0);
          expect(r.decisions).toEqual([]);
        }
        // Nobody reconciled the set: no finalizer, no pod.
        expect((await getSet(ns, 'web'))!.metadata.finalizers ?? []).toEqual([]);
        expect(await podsOf(ns, 'web')).toEqual([]);

        // Readiness says so: once the ring reads failed for a lease duration (4 s), each replica's
        // controller is not ready, the `shard` check naming the duration, the count and the 403; its
        // caches synced, it is not ready for that reason only, and liveness stays green.
        await eventually(
          "each replica's readiness failing on its shard gate",
          () => pair.every((r) => !r.controller.loop.health().ready.ok),
          state,
          30_000,
        );
        for (const r of pair) {
          const health = r.controller.loop.health();
          const failing = health.ready.checks.filter((c) => !c.ok);
          expect(
            failing.map((c) => c.name),
            r.identity,
          ).toEqual(['shard']);
          const reason = failing[0]!.reason!;
          expect(reason, r.identity).toMatch(new RegExp(`^reads of ring ${RING} failing for \\d+ s \\(\\d+ failures\\): `));
          expect(reason, r.identity).toContain(
            `HTTP 403 Forbidden: leases.coordination.k8s.io is forbidden: User "${user}" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "${ns}"`,
          );
          expect(health.alive.ok, r.identity).toBe(true);
          const ringRead = r.member.status().ringRead;
          expect(ringRead.consecutiveFailures, r.identity).toBeGreaterThanOrEqual(5);
          expect(ringRead.failingForMs, r.identity).toBeGreaterThanOrEqual(SHARD_TIMINGS.leaseDurationMs);
          expect(ringRead.lastError, r.identity).toContain('HTTP 403 Forbidden');
          expect(r.admitted.size).toBe(0);
        }
      } finally {
        await Promise.all(pair.map((r) => r.stop()));
      }
      await objects.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL, name: 'web' });
    }, 180_000);
  },
);
