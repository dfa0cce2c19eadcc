/**
 * The main job's story (`./dev demo`): the CellSet controller on the embedded apiserver, narrated.
 * The CRD is installed over HTTP, the controller wins a Lease and syncs, a CellSet of three pods is
 * created and a scripted kubelet runs them — except `web-2`, which is OOMKilled at every start. The
 * story then breaks things and shows what the controller does: a pod crashes terminally and is
 * rebuilt; the watch stalls while a pod is deleted, history is compacted and the watch dropped (410,
 * relist, the lost deletion synthesised, the pod recreated); a dashboard writes the status at the
 * same moment as the controller (409, re-read, both writes kept); `web-2` spends its rebuild budget
 * and is dead-lettered; a spec edit releases it; deleting the set runs the finalizer cleanup.
 *
 * Real time throughout; every wait has a deadline and names what did not happen.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { LeaderElector, LeaseLock } from '@reconcile-loop/leader-election';
import { silentLogger, type Logger } from '@reconcile-loop/loop';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../src/api.js';
import { createCellSetController, type CellSetController } from '../src/controller.js';
import { DEFAULT_REBUILD_DELAYS_MS } from '../src/plan.js';
import { ensureCellSetCrd } from './install.js';
import { startKubelet, type KubeletPod } from './kubelet.js';
import { describeDecision, stopController } from './run.js';
import { tappedClient } from './tap.js';

/** The namespace of the story. */
export const STORY_NAMESPACE = 'cells';
const ref = { group: GROUP, version: VERSION, plural: PLURAL };

/** Options of {@link runStory}. */
export interface StoryOptions {
  readonly print: (line: string) => void;
  /** Multiplies the rebuild budget's 0/1/5/30 s. Default 0.25 (the story runs in about 15 s). */
  readonly budgetScale?: number | undefined;
  /** Upper bound of every wait in the story. Default 20 s. */
  readonly stepTimeoutMs?: number | undefined;
  /** Also print the controller's and the reflectors' warnings. */
  readonly verbose?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** What the story ended with (its tests read it). */
export interface StoryReport {
  /** Events the controller wrote to the apiserver, by reason. */
  readonly events: Readonly<Record<string, number>>;
  /** Relists the reflectors went through after the compaction. */
  readonly relists: number;
  /** Status write attempts that hit the dashboard's write (409). */
  readonly statusConflicts: number;
  /** The `/metrics` lines of the controller's own counters at the end. */
  readonly metrics: readonly string[];
  /** Pods and CellSets left on the server after the delete. */
  readonly leftovers: number;
}

interface PodObject {
  metadata: { name: string; uid?: string; deletionTimestamp?: string };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}

function cellSetBody(memory: string) {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'web', namespace: STORY_NAMESPACE },
    spec: {
      replicas: 3,
      template: {
        metadata: { labels: { app: 'engine' } },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'engine', image: 'cells/engine:1', env: [{ name: 'CELL_MEMORY', value: memory }] }],
        },
      },
    },
  };
}

/** `web-2` holds the largest shard: with less than 4Gi it is OOMKilled at start. */
function fate(pod: KubeletPod) {
  const memory = pod.spec?.containers?.[0]?.env?.find((e) => e.name === 'CELL_MEMORY')?.value;
  return pod.metadata.name === 'web-2' && memory !== '4Gi' ? ('fail' as const) : ('ready' as const);
}

/** Runs the story; resolves with its report once the CellSet is gone and everything is stopped. */
export async function runStory(options: StoryOptions): Promise<StoryReport> {
  const started = performance.now();
  const stamp = (): string => `[${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s]`;
  const say = (line: string): void => options.print(`${stamp()} ~ ${line}`);
  const tell = (who: string, line: string): void => options.print(`${stamp()}   ${who}: ${line}`);
  const timeoutMs = options.stepTimeoutMs ?? 20_000;
  const until = async (what: string, ok: () => boolean): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    while (!ok()) {
      options.signal?.throwIfAborted();
      if (performance.now() > deadline) throw new Error(`the story stalled: ${what} did not happen within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const scale = options.budgetScale ?? 0.25;
  const delays = DEFAULT_REBUILD_DELAYS_MS.map((ms) => Math.round(ms * scale));

  const server: ApiServer = await startApiServer({ implicitNamespaces: true });
  const stopKubelet: Array<() => void> = [];
  let controller: CellSetController | undefined;
  const stopping = new AbortController();
  let electing: Promise<void> | undefined;
  try {
    server.createNamespace(STORY_NAMESPACE);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(server.kubeconfig());
    // The dashboard's race reaches the controller from outside: its client's status writes pass a tap.
    let race: 'armed' | 'raced' | undefined;
    let statusConflicts = 0;
    const dashboard = new KubeClient({ kubeConfig }).resource(ref).inNamespace(STORY_NAMESPACE);
    const client = tappedClient(kubeConfig, {
      beforeStatusWrite: async () => {
        if (race !== 'armed') return;
        race = 'raced';
        const lastTransitionTime = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
        const conditions = [{ type: 'DashboardReviewed', status: 'True', reason: 'Looked', lastTransitionTime }];
        await dashboard.patch('web', { type: 'merge', body: { status: { conditions } } }, { subresource: 'status' });
        tell('dashboard', "wrote a DashboardReviewed condition to web/status between the controller's read and its write");
      },
      afterStatusWrite: (_set, code) => {
        if (race !== 'raced' || code !== 409) return;
        statusConflicts += 1;
        race = undefined;
        tell(
          'controller',
          'status write got 409 Conflict (the object changed since it was read); attempt 2: re-read web, re-applied the status',
        );
      },
    });
    say(
      `embedded apiserver at ${server.url} (a loopback Kubernetes API in this process; KUBECONFIG=… runs the controller against a real cluster)`,
    );
    await ensureCellSetCrd(client, STORY_NAMESPACE);
    say(`installed the CustomResourceDefinition ${PLURAL}.${GROUP} over HTTP; it is Established and served`);

    const kubelet = startKubelet({
      server,
      namespace: STORY_NAMESPACE,
      fate,
      finishDeleteMs: 300,
      onPod: (name, f, node) =>
        tell(
          'kubelet',
          f === 'ready'
            ? `${name} scheduled to ${node}: Running, Ready`
            : `${name} scheduled to ${node}: OOMKilled at start (phase Failed)`,
        ),
    });
    stopKubelet.push(() => kubelet.stop());

    let relists = 0;
    const logger = narrating(options.verbose ? printingLogger(options.print) : silentLogger, (line) => {
      relists += 1;
      tell('reflector', line);
    });
    const elector = new LeaderElector({
      lock: new LeaseLock({ client, namespace: STORY_NAMESPACE, name: 'cellset-controller', identity: 'demo_controller-0' }),
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      logger,
    });
    const decisions: string[] = [];
    const ctl = createCellSetController({
      client,
      namespace: STORY_NAMESPACE,
      eventsClient: new KubeClient({ kubeConfig }),
      rebuildDelaysMs: delays,
      logger,
      leaderGate: elector,
      sourceRetry: { initialMs: 300, maxMs: 30_000 },
      onDecision: (d) => {
        decisions.push(d.reason);
        tell('controller', describeDecision(d).replace(`${STORY_NAMESPACE}/web `, ''));
      },
    });
    controller = ctl;
    electing = elector.run(stopping.signal);
    await ctl.loop.start();
    await until('the controller leading', () => elector.isLeader());
    say(
      `the controller leads (Lease ${STORY_NAMESPACE}/cellset-controller) and both caches are synced: CellSets and the pods they own`,
    );

    const pods = (): PodObject[] => server.listPods(STORY_NAMESPACE) as unknown as PodObject[];
    const pod = (name: string) => pods().find((p) => p.metadata.name === name);
    const ready = (name: string, notUid?: string) => {
      const p = pod(name);
      return (
        p !== undefined &&
        p.metadata.uid !== notUid &&
        p.status?.phase === 'Running' &&
        p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
      );
    };
    const status = () =>
      (server.getObject(ref, STORY_NAMESPACE, 'web')?.['status'] ?? {}) as {
        readyReplicas?: number;
        observedGeneration?: number;
        conditions?: Array<{ type: string; status: string; message?: string }>;
      };
    const decided = (reason: string) => decisions.filter((r) => r === reason).length;

    say(
      `kubectl apply: CellSet web, 3 replicas of cells/engine:1 with CELL_MEMORY=1Gi; rebuild budget ${delays.map((ms) => ms / 1000).join('/')} s (0/1/5/30 s played × ${scale})`,
    );
    server.createObject(ref, cellSetBody('1Gi'));
    await until('web-0 and web-1 ready', () => ready('web-0') && ready('web-1'));

    say('web-0 crashes for good (phase Failed): terminal pods never run again, so the slot gets a new pod');
    const crashed = pod('web-0')!.metadata.uid;
    kubelet.fail('web-0');
    await until('web-0 rebuilt and ready', () => ready('web-0', crashed));

    say(
      'the watch stalls (frames held back); meanwhile someone deletes web-1 (grace 0): its DELETED frame never reaches the controller',
    );
    const lost = pod('web-1')!.metadata.uid;
    server.stallWatches();
    server.deletePod(STORY_NAMESPACE, 'web-1', { gracePeriodSeconds: 0 });
    say("the apiserver compacts its history and drops the watches: the reflectors' cursors are too old now");
    server.compact();
    server.dropWatches();
    await until('web-1 recreated after the relist', () => ready('web-1', lost));
    say('the relist showed web-1 missing; the pod store synthesised its deletion and the controller recreated the slot');

    say("web-0's readiness probe fails for a moment, and a dashboard writes web/status at the same moment as the controller");
    race = 'armed';
    server.kubelet.setRunningReady(STORY_NAMESPACE, 'web-0', { ready: false });
    await until('the status conflict resolved', () => statusConflicts > 0);
    server.kubelet.setRunningReady(STORY_NAMESPACE, 'web-0');
    await until('web-0 ready again in status', () => (status().readyReplicas ?? 0) >= 2 && ready('web-0'));

    await until('web-2 dead-lettered', () => decided('RebuildBudgetExhausted') > 0);
    const parkedMetric = (await ctl.registry.getSingleMetricAsString('cellset_slots_dead_lettered_total'))
      .split('\n')
      .find((l) => l.startsWith('cellset_slots_dead_lettered_total{'));
    await until(
      'the dead-letter in status',
      () => status().conditions?.some((c) => c.type === 'SlotsDeadLettered' && c.status === 'True') === true,
    );
    say(
      `web-2 is dead-lettered: status says "${status().conditions!.find((c) => c.type === 'SlotsDeadLettered')!.message}"; /metrics: ${parkedMetric}`,
    );
    const rebuildsBefore = decided('PodFailed');
    await new Promise((resolve) => setTimeout(resolve, Math.max(500, delays.at(-1)! / 4)));
    say(
      `…and nothing rebuilds it: ${decided('PodFailed') - rebuildsBefore} rebuilds since, web-2 stays ${pod('web-2')?.status?.phase}`,
    );

    say('kubectl edit: CELL_MEMORY=4Gi (generation 2): every pod drifts from the template, every budget starts over');
    server.updateObject(ref, STORY_NAMESPACE, 'web', (o) => {
      const env = (o['spec'] as { template: { spec: { containers: Array<{ env: Array<{ value: string }> }> } } }).template.spec
        .containers[0]!.env[0]!;
      env.value = '4Gi';
    });
    await until('3/3 ready at generation 2', () => status().observedGeneration === 2 && status().readyReplicas === 3);
    say('web is Ready at generation 2: 3/3 pods, the dead-letter lifted');

    say('kubectl delete cellset web: the finalizer holds it while the controller deletes its pods');
    server.deleteObject(ref, STORY_NAMESPACE, 'web');
    // The set goes the moment the finalizer is lifted, before the controller hears back: wait for that too.
    await until(
      'the CellSet gone',
      () => server.getObject(ref, STORY_NAMESPACE, 'web') === undefined && pods().length === 0 && decided('FinalizerRemoved') > 0,
    );
    say('every pod is gone, the finalizer lifted, the CellSet deleted: nothing left behind');

    stopping.abort();
    await stopController(ctl);
    await electing;
    const events: Record<string, number> = {};
    const occurrences: Record<string, number> = {};
    for (const e of server.listObjects({ group: 'events.k8s.io', version: 'v1', plural: 'events' }, STORY_NAMESPACE)) {
      const reason = String(e['reason']);
      events[reason] = (events[reason] ?? 0) + 1;
      occurrences[reason] = (occurrences[reason] ?? 0) + ((e['series'] as { count?: number } | undefined)?.count ?? 1);
    }
    const metricsText = await ctl.registry.metrics();
    const metrics = metricsText.split('\n').filter((l) => /^cellset_\w+\{/.test(l));
    const counts = server.requestCounts();
    say(
      `events.k8s.io/v1 Events written (repeats folded into a series): ${Object.entries(events)
        .map(([r, n]) => `${r} ${n}${occurrences[r] === n ? '' : ` (${occurrences[r]} times)`}`)
        .join(', ')}`,
    );
    say(`the apiserver served ${counts.list} LISTs and ${counts.watch} WATCHes; controller counters: ${metrics.join(', ')}`);
    return {
      events,
      relists,
      statusConflicts,
      metrics,
      leftovers: pods().length + server.listObjects(ref, STORY_NAMESPACE).length,
    };
  } finally {
    stopping.abort();
    for (const stop of stopKubelet) stop();
    if (controller !== undefined) await stopController(controller);
    await electing?.catch(() => undefined);
    await server.close();
  }
}

/** Prints the reflector's relist decisions as story lines; everything goes on to `base`. */
function narrating(base: Logger, say: (line: string) => void): Logger {
  const narrate =
    (write: Logger['info']) =>
    (fields: Record<string, unknown>, message: string): void => {
      if (message.endsWith('relisting')) {
        const code = fields['code'] === undefined ? '' : ` ${String(fields['code'])}`;
        say(
          `${String(fields['reflector'] ?? fields['source'] ?? '')}: ${message}${code ? ` (${code.trim()}${typeof fields['reason'] === 'string' ? ` ${fields['reason']}` : ''})` : ''}`.replace(
            /^: /,
            '',
          ),
        );
      }
      write(fields, message);
    };
  return {
    debug: (f, m) => base.debug(f, m),
    info: narrate((f, m) => base.info(f, m)),
    warn: narrate((f, m) => base.warn(f, m)),
    error: (f, m) => base.error(f, m),
  };
}

function printingLogger(print: (line: string) => void): Logger {
  const line = (level: string) => (fields: Record<string, unknown>, message: string) => {
    const err = fields['err'];
    print(`          ${level} ${message}${err instanceof Error ? `: ${err.message}` : ''}`);
  };
  return { debug: () => {}, info: () => {}, warn: line('!'), error: line('!') };
}
