import { InProcessSource, systemClock, type Clock, type Logger } from '@reconcile-loop/loop';
import { sleep } from '@reconcile-loop/primitives';
import { podKey, type PodView } from './pod-view.js';
import { createPoolTracker, stamp, type PoolTracker } from './tracker.js';

/** Namespace of every simulated cell. */
export const SIM_NAMESPACE = 'sim';
/** How long the simulated source stays down before the driver reopens it (the outer retry). */
export const SIM_SOURCE_RETRY_DELAY_MS = 1_000;
/** Length of the scripted churn; a shorter `--duration` cuts it. */
export const SCRIPT_LENGTH_MS = 9_000;

type CellState = 'pending' | 'ready' | 'crashed';

/** A pod view of a simulated engine or trainer cell. */
export function cellPod(name: string, pool: string, state: CellState, restartCount = 0): PodView {
  return {
    metadata: { name, namespace: SIM_NAMESPACE, labels: { pool, app: pool === 'engines' ? 'sglang-engine' : 'trainer' } },
    status: {
      phase: state === 'pending' ? 'Pending' : 'Running',
      conditions: [{ type: 'Ready', status: state === 'ready' ? 'True' : 'False' }],
      containerStatuses: [{ name: 'main', ready: state === 'ready', restartCount }],
    },
  };
}

interface Step {
  readonly atMs: number;
  readonly say: string;
  readonly act: (source: InProcessSource<PodView>) => void;
}

const put = (source: InProcessSource<PodView>, pod: PodView): void => source.upsert(podKey(pod), pod);
const remove = (source: InProcessSource<PodView>, name: string): void => {
  source.delete(`${SIM_NAMESPACE}/${name}`);
};

/** The world the first listing sees. */
export const initialCells: readonly PodView[] = [
  cellPod('engine-0', 'engines', 'pending'),
  cellPod('engine-1', 'engines', 'pending'),
  cellPod('trainer-0', 'trainers', 'pending'),
];

/** The churn: cells appearing, becoming ready, restarting, disappearing, and a relist with missed deletions. */
export const script: readonly Step[] = [
  { atMs: 800, say: 'engine-0 becomes ready', act: (s) => put(s, cellPod('engine-0', 'engines', 'ready')) },
  { atMs: 1_600, say: 'engine-1 becomes ready', act: (s) => put(s, cellPod('engine-1', 'engines', 'ready')) },
  { atMs: 2_400, say: 'trainer-0 becomes ready', act: (s) => put(s, cellPod('trainer-0', 'trainers', 'ready')) },
  { atMs: 3_200, say: 'engine-2 appears', act: (s) => put(s, cellPod('engine-2', 'engines', 'pending')) },
  { atMs: 4_000, say: 'engine-1 crashes and restarts', act: (s) => put(s, cellPod('engine-1', 'engines', 'crashed', 1)) },
  {
    atMs: 4_800,
    say: 'engine-1 is ready again; engine-2 becomes ready',
    act: (s) => {
      put(s, cellPod('engine-1', 'engines', 'ready', 1));
      put(s, cellPod('engine-2', 'engines', 'ready'));
    },
  },
  {
    atMs: 5_600,
    say: `the stream drops; the driver reopens it in ${SIM_SOURCE_RETRY_DELAY_MS} ms`,
    act: (s) => s.disconnect(new Error('watch connection reset')),
  },
  {
    atMs: 5_800,
    say: 'while nobody listens: engine-0 is deleted, trainer-1 appears (missed until the relist)',
    act: (s) => {
      remove(s, 'engine-0');
      put(s, cellPod('trainer-1', 'trainers', 'pending'));
    },
  },
  {
    atMs: 5_600 + SIM_SOURCE_RETRY_DELAY_MS,
    say: "the stream reopened with a relist: engine-0's missed deletion was synthesized, trainer-1 caught up",
    act: () => {},
  },
  { atMs: 7_400, say: 'trainer-0 is deleted', act: (s) => remove(s, 'trainer-0') },
  { atMs: 8_200, say: 'engine-2 restarts', act: (s) => put(s, cellPod('engine-2', 'engines', 'crashed', 1)) },
  {
    atMs: 9_000,
    say: 'engine-2 is ready again; trainer-1 is deleted (the trainers pool is gone)',
    act: (s) => {
      put(s, cellPod('engine-2', 'engines', 'ready', 1));
      remove(s, 'trainer-1');
    },
  },
];

export interface SimulationOptions {
  /** How long to run; the tracker stops cleanly at the end. */
  durationMs: number;
  print: (line: string) => void;
  clock?: Clock;
  logger?: Logger;
  /** Ends the run early (e.g. Ctrl-C). */
  signal?: AbortSignal;
}

/** A tracker over an in-process source that plays {@link script}. */
export interface Simulation {
  readonly source: InProcessSource<PodView>;
  readonly tracker: PoolTracker;
  /** Starts the tracker, plays the script until `durationMs`, stops the tracker. */
  run(): Promise<void>;
}

/** Builds the embedded simulation used without a cluster. */
export function createSimulation(options: SimulationOptions): Simulation {
  const clock = options.clock ?? systemClock;
  const source = new InProcessSource<PodView>(
    'simulated-pool',
    initialCells.map((pod) => [podKey(pod), pod] as const),
    { retry: { initialMs: SIM_SOURCE_RETRY_DELAY_MS, maxMs: 30_000 } },
  );
  const tracker = createPoolTracker({
    source,
    print: options.print,
    clock,
    syncTimeoutMs: 5_000,
    logger: options.logger,
  });
  const run = async (): Promise<void> => {
    const startedAt = clock.now();
    const elapsed = (): number => clock.now() - startedAt;
    await using loop = tracker.loop;
    await loop.start();
    try {
      for (const step of script) {
        if (step.atMs > options.durationMs) break;
        await sleep(clock, step.atMs - elapsed(), options.signal);
        options.print(`${stamp(elapsed())} ~ ${step.say}`);
        step.act(source);
      }
      await sleep(clock, options.durationMs - elapsed(), options.signal);
    } catch (error) {
      if (!options.signal?.aborted) throw error; // an abort just ends the run early
    }
  };
  return { source, tracker, run };
}
