/**
 * The CellSet soak (issue 30): two replicas of the flagship's entry competing for a Lease on a
 * kube-apiserver, random actions from a seeded RNG (scale, template edits, set and pod deletes, pods
 * marked Ready or Failed, sets re-created under old names), the leader kill -9'd and SIGSTOPped,
 * then a settle phase and the invariants checked from a fresh LIST and the replicas' output.
 * Bounded in actions and time; loopback only (the kubeconfig it is given).
 */
import { request } from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { Replica, rng, stopReplicas, until } from '../../bench/src/lib/cellset-reaction.js';

const CELLSETS = { group: 'cells.reconcile-loop.dev', version: 'v1', plural: 'cellsets', kind: 'CellSet' } as const;
const SET_LABEL = 'cells.reconcile-loop.dev/cellset';
const HASH = 'cells.reconcile-loop.dev/template-hash';

/** Options of {@link runSoak}. */
export interface SoakOptions {
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly createNamespace: () => Promise<void>;
  /** The RNG's start value: the same value replays the same actions. */
  readonly start: number;
  /** Random actions at most, and the time they may take. */
  readonly actions: number;
  readonly durationMs: number;
  /** Chaos on the leader: kill -9 and SIGSTOP/SIGCONT, each this many times, spread over the run. */
  readonly kills: number;
  readonly stops: number;
  readonly stopMs: number;
  /** Upper bound of the settle phase. */
  readonly settleMs: number;
  readonly log?: ((line: string) => void) | undefined;
}

/** What the soak found: every list empty is a pass. */
export interface SoakReport {
  actions: Record<string, number>;
  kills: number;
  stops: number;
  sets: number;
  pods: number;
  creates: number;
  /** Invariant breaches, each one line. */
  violations: string[];
  /** Σ CreatedPod Event counts (series included) / CreatedPod decisions printed by the replicas. */
  createdEvents: number;
  createdDecisions: number;
  /** kube-apiserver's pod POSTs answered 409 (a create of a name that existed). */
  podCreateConflicts: number | undefined;
  durationMs: number;
}

interface Obj {
  metadata: {
    name: string;
    uid: string;
    generation?: number;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ uid: string; kind: string; controller?: boolean }>;
  };
  spec?: { replicas?: number };
  status?: { phase?: string; observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
}

/** kube-apiserver's `apiserver_request_total` for pod creates answered 409 (undefined: not readable). */
async function podCreateConflicts(kc: KubeConfig): Promise<number | undefined> {
  const server = new URL(kc.getCurrentCluster()!.server);
  const options: import('node:https').RequestOptions = {
    host: server.hostname,
    port: server.port,
    path: '/metrics',
    method: 'GET',
  };
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('metrics: timeout')));
    req.end();
  }).catch(() => undefined);
  if (text === undefined) return undefined;
  let sum = 0;
  for (const line of text.split('\n'))
    if (
      line.startsWith('apiserver_request_total{') &&
      /code="409"/.test(line) &&
      /resource="pods"/.test(line) &&
      /verb="POST"/.test(line) &&
      /subresource=""/.test(line)
    )
      sum += Number(line.split(' ').at(-1));
  return sum;
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const random = rng(options.start);
  const pick = <T>(list: readonly T[]): T | undefined =>
    list.length === 0 ? undefined : list[Math.floor(random() * list.length)];
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'cellset-soak-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, options.kubeconfig, { mode: 0o600 });
  const kc = new KubeConfig();
  kc.loadFromString(options.kubeconfig);
  const client = new KubeClient({ kubeConfig: kc, rateLimit: false });
  const { namespace } = options;
  const sets = client.resource(CELLSETS).inNamespace(namespace);
  const pods = client.resource({ ...podResource, kind: 'Pod' }, podSchema).inNamespace(namespace);
  const rawPods = client.resource({ group: '', version: 'v1', plural: 'pods', kind: 'Pod' }).inNamespace(namespace);
  const conflictsBefore = await podCreateConflicts(kc);
  // Short Lease timings (the e2e layer's) and a short rebuild budget, so a settle takes seconds: a slot
  // failed again and again is dead-lettered after 0 / 0.2 / 0.5 / 1 s instead of 0 / 1 / 5 / 30 s.
  const knobs = { leaseDurationS: 3, renewDeadlineS: 2, retryPeriodS: 0.5, rebuildDelays: '0,0.2,0.5,1' };
  const replicas: Replica[] = [];
  let serial = 0;
  const startReplica = (): Replica => {
    const r = new Replica(`soak-${serial++}`, kubeconfigPath, namespace, knobs);
    replicas.push(r);
    return r;
  };
  const detail = (): string => replicas.map((r) => `--- ${r.name}\n${r.lines.slice(-12).join('\n')}`).join('\n');
  const leader = (): Replica | undefined => replicas.find((r) => r.leading());
  const running = (): Replica[] => replicas.filter((r) => r.alive);
  const counts: Record<string, number> = {};
  const count = (what: string): void => void (counts[what] = (counts[what] ?? 0) + 1);
  /** SIGCONT times per replica: a resumed replica must step down before any decision. */
  const resumed = new Map<Replica, number[]>();
  const violations: string[] = [];
  let kills = 0;
  let stops = 0;
  const template = (image: string) => ({
    spec: { restartPolicy: 'Never', containers: [{ name: 'engine', image }] },
  });
  const names = ['a', 'b', 'c', 'd', 'e', 'f'];
  const tolerate = async (write: () => Promise<unknown>): Promise<void> => {
    try {
      await write();
    } catch (error) {
      const code = (error as { status?: { code?: number } }).status?.code ?? (error as { code?: unknown }).code;
      if (code === 404 || code === 409 || code === 422 || code === 'KUBE_NOT_FOUND' || code === 'KUBE_CONFLICT') return;
      if (/not ?found|conflict|already exists|being deleted|Invalid/i.test(String((error as Error).message))) return;
      throw error;
    }
  };
  try {
    await options.createNamespace();
    const first = startReplica();
    await until('the first replica leading', () => first.leading() && first.has(/ synced CellSets/), 60_000, detail);
    startReplica();
    for (const name of names.slice(0, 4))
      await sets.create({
        apiVersion: `${CELLSETS.group}/${CELLSETS.version}`,
        kind: CELLSETS.kind,
        metadata: { name },
        spec: { replicas: 2, template: template('cells/engine:1') },
      });

    const chaosEvery = Math.max(1, Math.floor(options.actions / (options.kills + options.stops + 1)));
    let chaos = [...Array(options.kills).fill('kill'), ...Array(options.stops).fill('stop')] as Array<'kill' | 'stop'>;
    chaos = chaos.sort(() => random() - 0.5);
    for (let i = 0; i < options.actions && performance.now() - started < options.durationMs; i++) {
      if (i > 0 && i % chaosEvery === 0 && chaos.length > 0) {
        const what = chaos.shift()!;
        // After a takeover a leader comes within a lease duration and a retry period.
        await until('a leader to stop or kill', () => leader() !== undefined, 30_000, detail);
        const victim = leader();
        if (victim !== undefined) {
          if (what === 'kill') {
            victim.signal('SIGKILL');
            kills++;
            log(`soak: kill -9 ${victim.name} (leader)`);
            await victim.exited;
            startReplica();
          } else {
            victim.signal('SIGSTOP');
            stops++;
            log(`soak: SIGSTOP ${victim.name} (leader) for ${options.stopMs} ms`);
            await new Promise((resolve) => setTimeout(resolve, options.stopMs));
            resumed.set(victim, [...(resumed.get(victim) ?? []), victim.lines.length]);
            victim.signal('SIGCONT');
          }
        }
      }
      const listedSets = ((await sets.list()).items as unknown as Obj[]).filter(
        (s) => s.metadata.deletionTimestamp === undefined,
      );
      const listedPods = ((await rawPods.list()).items as unknown as Obj[]).filter(
        (p) => p.metadata.deletionTimestamp === undefined,
      );
      const set = pick(listedSets);
      const pod = pick(listedPods);
      const roll = random();
      if (roll < 0.15 && set) {
        count('scale');
        const replicasWanted = 1 + Math.floor(random() * 4);
        await tolerate(() => sets.patch(set.metadata.name, { type: 'merge', body: { spec: { replicas: replicasWanted } } }));
      } else if (roll < 0.25 && set) {
        count('template edit');
        await tolerate(() =>
          sets.patch(set.metadata.name, {
            type: 'merge',
            body: { spec: { template: template(`cells/engine:${1 + Math.floor(random() * 5)}`) } },
          }),
        );
      } else if (roll < 0.32 && set) {
        count('set delete');
        await tolerate(() => sets.delete(set.metadata.name));
      } else if (roll < 0.42) {
        const name = pick(names)!;
        count('set create (or re-create under an old name)');
        await tolerate(() =>
          sets.create({
            apiVersion: `${CELLSETS.group}/${CELLSETS.version}`,
            kind: CELLSETS.kind,
            metadata: { name },
            spec: { replicas: 1 + Math.floor(random() * 3), template: template('cells/engine:1') },
          }),
        );
      } else if (roll < 0.55 && pod) {
        count('pod delete');
        await tolerate(() => pods.delete(pod.metadata.name));
      } else if (roll < 0.8 && pod) {
        count('pod Ready');
        const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
        await tolerate(() =>
          pods.patch(
            pod.metadata.name,
            {
              type: 'merge',
              body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] } },
            },
            { subresource: 'status' },
          ),
        );
      } else if (pod) {
        count('pod Failed');
        await tolerate(() =>
          pods.patch(pod.metadata.name, { type: 'merge', body: { status: { phase: 'Failed' } } }, { subresource: 'status' }),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 150)));
    }
    log(`soak: ${Object.values(counts).reduce((a, b) => a + b, 0)} actions, ${kills} kills, ${stops} stops; settling`);

    // Settle: both replicas up, the sets converged (or the wait's bound reached, then the checks say what is wrong).
    const converged = async (): Promise<string[]> => {
      const problems: string[] = [];
      const listedSets = (await sets.list()).items as unknown as Obj[];
      const listedPods = ((await rawPods.list()).items as unknown as Obj[]).filter(
        (p) => p.metadata.labels?.[SET_LABEL] !== undefined,
      );
      const byUid = new Map(listedSets.map((s) => [s.metadata.uid, s]));
      for (const s of listedSets) {
        if (s.metadata.deletionTimestamp !== undefined) {
          problems.push(`set ${s.metadata.name} stuck on its finalizer (${(s.metadata.finalizers ?? []).join(',')})`);
          continue;
        }
        const want = s.spec?.replicas ?? 0;
        const mine = listedPods.filter((p) => p.metadata.ownerReferences?.some((o) => o.controller && o.uid === s.metadata.uid));
        const dead = s.status?.conditions?.some((c) => c.type === 'SlotsDeadLettered' && c.status === 'True') === true;
        for (let slot = 0; slot < want; slot++) {
          const name = `${s.metadata.name}-${slot}`;
          const here = mine.filter((p) => p.metadata.name === name && p.metadata.deletionTimestamp === undefined);
          if (here.length === 0) problems.push(`missing pod ${name}`);
          else if ((here[0]!.status?.phase === 'Failed' || here[0]!.status?.phase === 'Succeeded') && !dead)
            problems.push(`pod ${name} is ${here[0]!.status?.phase} and its slot not dead-lettered`);
        }
        for (const p of mine) {
          const slot = Number(p.metadata.name.slice(s.metadata.name.length + 1));
          if (!(slot >= 0 && slot < want)) problems.push(`extra pod ${p.metadata.name} (set wants ${want})`);
        }
        if (s.status?.observedGeneration !== s.metadata.generation)
          problems.push(
            `set ${s.metadata.name} observedGeneration ${s.status?.observedGeneration} ≠ generation ${s.metadata.generation}`,
          );
        const hashes = new Set(mine.filter((p) => p.status?.phase !== 'Failed').map((p) => p.metadata.annotations?.[HASH]));
        if (hashes.size > 1) problems.push(`set ${s.metadata.name} has pods of ${hashes.size} templates`);
      }
      for (const p of listedPods) {
        const owner = p.metadata.ownerReferences?.find((o) => o.controller);
        if (owner === undefined || !byUid.has(owner.uid)) problems.push(`orphan pod ${p.metadata.name}`);
      }
      return problems;
    };
    await until('two replicas, one leading', () => running().length === 2 && leader() !== undefined, 60_000, detail);
    const settleDeadline = performance.now() + options.settleMs;
    let problems = await converged();
    while (problems.length > 0 && performance.now() < settleDeadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      problems = await converged();
    }
    violations.push(...problems);
    if (problems.length > 0) {
      // What each replica said about the sets that did not converge, and every line it wrote on stderr:
      // a failed settle is read from this, the RNG's start value replays the actions but not the timing.
      const named = new Set(problems.flatMap((p) => /^(?:set|missing pod|extra pod|pod) ([a-z])\b/.exec(p)?.[1] ?? []));
      const about = (line: string) =>
        / err /.test(line) || [...named].some((n) => new RegExp(`${namespace}/${n}\\b| ${n}-\\d`).test(line));
      for (const r of replicas) log(`--- ${r.name} on ${[...named].join(', ')}\n${r.lines.filter(about).join('\n')}`);
    }

    // No decision by a replica that did not lead: in each replica's own output, every decision line
    // lies in a term (after "leading as", before "stopped leading"); a resumed replica's first line
    // of either kind after SIGCONT is the step-down.
    const DECISION = / out (event|Warning) /;
    for (const r of replicas) {
      let leading = false;
      for (const line of r.lines) {
        if (/ out cellset-controller: leading as /.test(line)) leading = true;
        else if (/ out cellset-controller: stopped leading/.test(line)) leading = false;
        else if (DECISION.test(line)) {
          if (!leading) violations.push(`${r.name} decided while not leading: ${line}`);
        }
      }
      for (const at of resumed.get(r) ?? []) {
        const next = r.lines.slice(at).find((l) => DECISION.test(l) || / stopped leading/.test(l));
        if (next !== undefined && DECISION.test(next))
          violations.push(`${r.name} decided after SIGCONT before stepping down: ${next}`);
      }
    }
    const createdDecisions = replicas.reduce((n, r) => n + r.lines.filter((l) => / out event CreatedPod /.test(l)).length, 0);
    const events = (
      await client
        .resource({ group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' })
        .inNamespace(namespace)
        .list()
    ).items as unknown as Array<{ reason?: string; series?: { count?: number } }>;
    const createdEvents = events.filter((e) => e.reason === 'CreatedPod').reduce((n, e) => n + (e.series?.count ?? 1), 0);
    // The recorder's promise: never more occurrences than decisions (a kill -9 loses what was pending).
    if (createdEvents > createdDecisions)
      violations.push(`${createdEvents} CreatedPod Event occurrences for ${createdDecisions} creates`);
    const conflictsAfter = await podCreateConflicts(kc);
    const podCreateConflictsSeen =
      conflictsBefore === undefined || conflictsAfter === undefined ? undefined : conflictsAfter - conflictsBefore;
    if (podCreateConflictsSeen !== undefined && podCreateConflictsSeen > 0)
      violations.push(`kube-apiserver answered ${podCreateConflictsSeen} pod creates with 409 (a duplicate create)`);
    const finalSets = (await sets.list()).items.length;
    const finalPods = (await rawPods.list()).items.length;
    return {
      actions: counts,
      kills,
      stops,
      sets: finalSets,
      pods: finalPods,
      creates: createdDecisions,
      violations,
      createdEvents,
      createdDecisions,
      podCreateConflicts: podCreateConflictsSeen,
      durationMs: performance.now() - started,
    };
  } finally {
    for (const r of replicas) r.signal('SIGCONT');
    await stopReplicas(replicas);
    await rm(dir, { recursive: true, force: true });
  }
}
