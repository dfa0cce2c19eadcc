import { podSchema } from '@reconcile-loop/k8s-types';
import { silentLogger, systemClock, type BackoffPolicy, type Logger, type ObjectKey, type Source } from '@reconcile-loop/loop';
import { sleep } from '@reconcile-loop/primitives';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { openClusterSource } from './cluster.js';
import type { PodView } from './pod-view.js';
import { createPoolTracker, poolView, stamp, type PoolTracker, type PoolView } from './tracker.js';

/** Namespace of the demo's pods on the embedded apiserver. */
export const DEMO_NAMESPACE = 'demo';
/** The label naming a pod's pool (and the reflector's label selector). */
export const POOL_LABEL = 'pool';

/** One scripted change, made through the embedded apiserver's typed API. */
export interface EmbeddedStep {
  /** When, in ms from the start at `timeScale` 1. */
  readonly atMs: number;
  readonly say: string;
  /** Wait for the reflector's relist before this step (it follows the lost watch). */
  readonly afterRelist?: boolean;
  readonly act: (server: ApiServer) => void;
}

function cellPod(name: string, pool: 'engines' | 'trainers') {
  return {
    metadata: {
      name,
      namespace: DEMO_NAMESPACE,
      labels: { [POOL_LABEL]: pool, app: pool === 'engines' ? 'sglang-engine' : 'trainer' },
    },
  };
}

/** The scheduler binds the pod, then the kubelet reports it Running and Ready: two MODIFIED frames. */
function schedule(server: ApiServer, name: string, node: string): void {
  server.kubelet.bind(DEMO_NAMESPACE, name, node);
  server.kubelet.setRunningReady(DEMO_NAMESPACE, name);
}

/** The pods created before the tracker starts: its first LIST sees them, Pending and unbound. */
export const initialPods = [
  cellPod('engine-0', 'engines'),
  cellPod('engine-1', 'engines'),
  cellPod('trainer-0', 'trainers'),
] as const;

/**
 * The churn, driven through the apiserver: pods created, scheduled, Running and Ready, a crash and
 * restarts, a graceful deletion, and a lost watch: a deletion the reflector never sees (its frame is
 * held back, then history is compacted and the watch dropped), recovered by the relist.
 */
export const embeddedScript: readonly EmbeddedStep[] = [
  { atMs: 700, say: 'engine-0 is scheduled to node-a and starts: Running, Ready', act: (s) => schedule(s, 'engine-0', 'node-a') },
  { atMs: 1_400, say: 'engine-1 is scheduled to node-b and starts', act: (s) => schedule(s, 'engine-1', 'node-b') },
  { atMs: 2_100, say: 'trainer-0 is scheduled to node-c and starts', act: (s) => schedule(s, 'trainer-0', 'node-c') },
  { atMs: 2_800, say: 'engine-2 is created (Pending)', act: (s) => s.createPod(cellPod('engine-2', 'engines')) },
  {
    atMs: 3_500,
    say: "engine-1's container crashes: not ready, restart count 1",
    act: (s) => {
      s.kubelet.setRunningReady(DEMO_NAMESPACE, 'engine-1', { ready: false });
      s.kubelet.bumpRestartCount(DEMO_NAMESPACE, 'engine-1');
    },
  },
  {
    atMs: 4_200,
    say: 'engine-1 is ready again; engine-2 is scheduled to node-a and starts',
    act: (s) => {
      s.kubelet.setRunningReady(DEMO_NAMESPACE, 'engine-1');
      schedule(s, 'engine-2', 'node-a');
    },
  },
  {
    atMs: 4_900,
    say: 'trainer-1 is created, scheduled to node-b and starts',
    act: (s) => {
      s.createPod(cellPod('trainer-1', 'trainers'));
      schedule(s, 'trainer-1', 'node-b');
    },
  },
  {
    atMs: 5_600,
    say: 'the watch stalls; engine-0 is deleted (grace 0) and its DELETED frame is held back',
    act: (s) => {
      s.stallWatches();
      s.deletePod(DEMO_NAMESPACE, 'engine-0', { gracePeriodSeconds: 0 });
    },
  },
  {
    atMs: 5_600,
    say: "the apiserver compacts its history and drops the watch: the frame is lost and the reflector's cursor is too old",
    act: (s) => {
      s.compact();
      s.dropWatches();
    },
  },
  {
    atMs: 7_000,
    afterRelist: true,
    say: "trainer-0's graceful deletion begins",
    act: (s) => s.deletePod(DEMO_NAMESPACE, 'trainer-0'),
  },
  {
    atMs: 7_700,
    say: 'the kubelet finishes deleting trainer-0',
    act: (s) => s.kubelet.finishGracefulDelete(DEMO_NAMESPACE, 'trainer-0'),
  },
  { atMs: 8_400, say: "engine-2's container restarts", act: (s) => s.kubelet.bumpRestartCount(DEMO_NAMESPACE, 'engine-2') },
];

/** A relist the tracker went through: what the LIST returned, and the cached keys it lacked. */
export interface RelistRecord {
  /** Ms since the tracker was built. */
  readonly atMs: number;
  readonly listed: readonly ObjectKey[];
  /** In the store but not in the listing: the store synthesises their deletes (the ghosts the relist removes). */
  readonly ghosts: readonly ObjectKey[];
}

/** Options for {@link startEmbeddedScenario}. */
export interface EmbeddedScenarioOptions {
  /** How long to run (at the given `timeScale`); the tracker then stops and the apiserver closes. */
  durationMs: number;
  print: (line: string) => void;
  logger?: Logger;
  /** Ends the run early (Ctrl-C). */
  signal?: AbortSignal;
  /**
   * Multiplies the script's times and the reflector's and loop's retry delays: 1 plays the demo,
   * tests compress it (e.g. 0.02). `durationMs` is not scaled. Default 1.
   */
  timeScale?: number;
  /** Upper bound on waiting for the relist gate and for the tracker to agree with the apiserver. Default 5000. */
  settleTimeoutMs?: number;
}

/** What a run ended with. */
export interface EmbeddedScenarioResult {
  /** The tracker's pool views matched the apiserver's pods when the run ended. */
  readonly converged: boolean;
}

/** The embedded apiserver, the tracker reading it through the reflector, and the script. */
export interface EmbeddedScenario {
  readonly server: ApiServer;
  readonly tracker: PoolTracker;
  readonly relists: readonly RelistRecord[];
  /** Starts the tracker, plays the script, waits for the tracker to agree, stops it and closes the apiserver. */
  run(): Promise<EmbeddedScenarioResult>;
}

/** Calls `onRelist` with every listing after the first (across reopens), before the store applies it. */
function observeRelists<T>(
  source: Source<T>,
  onRelist: (objects: ReadonlyMap<ObjectKey, T>) => void,
  retry: BackoffPolicy | undefined,
): Source<T> {
  let listings = 0;
  return {
    name: source.name,
    retry,
    async *open(signal: AbortSignal) {
      for await (const event of source.open(signal)) {
        if (event.type === 'replace' && listings++ > 0) onRelist(event.objects);
        yield event;
      }
    },
  };
}

/** The reflector's relist decisions as timeline lines; everything goes on to `base` too. */
function narratingLogger(base: Logger, say: (line: string) => void): Logger {
  const narrate =
    (write: Logger['info']) =>
    (fields: Record<string, unknown>, message: string): void => {
      if (message.endsWith('relisting')) {
        const code = fields['code'] === undefined ? '' : ` ${String(fields['code'])}`;
        const reason = typeof fields['reason'] === 'string' ? ` ${fields['reason']}` : '';
        say(`reflector: ${message} (${`${code}${reason}`.trim()})`);
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

/** The pool views the apiserver's pods call for, read through the same schema the reflector uses. */
export function expectedViews(server: ApiServer): Map<string, PoolView> {
  const pools = new Map<string, PodView[]>();
  for (const raw of server.listPods(DEMO_NAMESPACE)) {
    const pod = podSchema.parse(raw);
    const pool = pod.metadata.labels[POOL_LABEL];
    if (!pool) continue;
    const key = `${DEMO_NAMESPACE}/${pool}`;
    pools.set(key, [...(pools.get(key) ?? []), pod]);
  }
  return new Map([...pools].map(([key, pods]) => [key, poolView(key, pods)]));
}

function sameViews(a: ReadonlyMap<string, PoolView>, b: ReadonlyMap<string, PoolView>): boolean {
  const sorted = (m: ReadonlyMap<string, PoolView>) => JSON.stringify([...m].sort(([x], [y]) => x.localeCompare(y)));
  return sorted(a) === sorted(b);
}

/**
 * Starts the embedded apiserver with the pool's first pods, and a pool tracker whose source is the
 * pod reflector pointed at it through client-node's `KubeConfig` (the path a real cluster takes).
 */
export async function startEmbeddedScenario(options: EmbeddedScenarioOptions): Promise<EmbeddedScenario> {
  const scale = options.timeScale ?? 1;
  const settleTimeoutMs = options.settleTimeoutMs ?? 5_000;
  const clock = systemClock;
  const server = await startApiServer();
  try {
    for (const pod of initialPods) server.createPod(structuredClone(pod));
    let startedAt = clock.now();
    const elapsed = (): number => clock.now() - startedAt;
    const say = (line: string): void => options.print(`${stamp(elapsed())} ~ ${line}`);

    // Woken by every tracker report and every relist: the waits below are event-driven.
    const wakers = new Set<() => void>();
    const wake = (): void => {
      for (const w of [...wakers]) w();
    };
    const until = (check: () => boolean, signal: AbortSignal | undefined): Promise<boolean> => {
      if (check()) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = (ok: boolean): void => {
          wakers.delete(waker);
          clock.clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(ok);
        };
        const waker = (): void => {
          if (check()) done(true);
        };
        const onAbort = (): void => done(false);
        const timer = clock.setTimeout(() => done(check()), settleTimeoutMs);
        wakers.add(waker);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    };

    const logger = options.logger ?? silentLogger;
    const reflector = await openClusterSource({
      kubeconfigYaml: server.kubeconfig(),
      namespace: DEMO_NAMESPACE,
      selector: POOL_LABEL,
      logger: narratingLogger(logger, say),
      retry: { initialMs: 1_000 * scale, maxMs: 30_000 * scale },
    });
    const relists: RelistRecord[] = [];
    // The driver's reopen of a stream that ended uses the same scaled backoff as the reflector's own retries.
    const retry = { initialMs: 1_000 * scale, maxMs: 30_000 * scale };
    const source = observeRelists(
      reflector,
      (objects) => {
        const ghosts = tracker.loop.store.keys().filter((key) => !objects.has(key));
        relists.push({ atMs: elapsed(), listed: [...objects.keys()], ghosts });
        say(
          `relist: the reflector listed ${objects.size} pods; ${
            ghosts.length === 0
              ? 'nothing was missed'
              : `${ghosts.join(', ')} is cached but not listed, so the store synthesises its deletion`
          }`,
        );
        wake();
      },
      retry,
    );
    const tracker: PoolTracker = createPoolTracker({
      source,
      poolLabel: POOL_LABEL,
      print: (line) => {
        options.print(line);
        wake();
      },
      clock,
      logger,
      syncTimeoutMs: 10_000,
    });
    startedAt = clock.now(); // the tracker's reports count from here too

    const run = async (): Promise<EmbeddedScenarioResult> => {
      let converged = false;
      try {
        await using loop = tracker.loop;
        await loop.start();
        for (const step of embeddedScript) {
          const at = step.atMs * scale;
          if (at > options.durationMs) break;
          if (step.afterRelist && !(await until(() => relists.length > 0, options.signal))) {
            if (options.signal?.aborted) break;
            throw new Error(`the reflector did not relist within ${settleTimeoutMs} ms of the lost watch`);
          }
          await sleep(clock, at - elapsed(), options.signal);
          say(step.say);
          step.act(server);
        }
        converged = await until(() => sameViews(tracker.views, expectedViews(server)), options.signal);
        await sleep(clock, options.durationMs - elapsed(), options.signal);
      } catch (error) {
        if (!options.signal?.aborted) throw error; // an abort just ends the run early
      } finally {
        await server.close(); // after the loop stopped (end of the `await using` block)
      }
      return { converged };
    };
    return { server, tracker, relists, run };
  } catch (error) {
    await server.close();
    throw error;
  }
}
