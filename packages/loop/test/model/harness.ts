/**
 * Drives a real `ReconcileLoop` (three in-process sources, a `ManualClock`, an optional fake leader
 * gate) and reports every reconcile call to the {@link ReferenceModel}. No real time passes: the
 * clock moves only when a command says so, and `settle()` lets promise chains run.
 */
import { ManualClock } from '@reconcile-loop/primitives';
import { FakeLeaderGate, settle } from '@reconcile-loop/test-support';
import {
  generationChanged,
  InProcessSource,
  ReconcileLoop,
  resourceVersionChanged,
  TerminalError,
  type LeaderGate,
  type ReconcileContext,
  type ReconcileResult,
  type SourceEvent,
} from '../../src/index.js';
import {
  ReferenceModel,
  type ConfigObject,
  type ModelConfig,
  type Outcome,
  type ParentObject,
  type PodObject,
  type SourceName,
} from './reference.js';

type Secondaries = { pods: PodObject; configs: ConfigObject };
type Ctx = ReconcileContext<ParentObject, string, Secondaries>;

/** What the loop under test is built from; {@link buildLoop} is the one place that maps it to options. */
export interface LoopDeps {
  readonly config: ModelConfig;
  readonly clock: ManualClock;
  readonly parents: InProcessSource<ParentObject>;
  readonly pods: InProcessSource<PodObject>;
  readonly configs: InProcessSource<ConfigObject>;
  readonly gate: FakeLeaderGate | undefined;
  readonly reconcile: (key: string, ctx: Ctx) => Promise<ReconcileResult | undefined>;
}

/**
 * Builds the loop under test: the only place that names `ReconcileLoopOptions` fields, so a change of
 * the options' shape is adapted here alone.
 */
export function buildLoop(deps: LoopDeps): ReconcileLoop<ParentObject, string, Secondaries> {
  const { config } = deps;
  return new ReconcileLoop<ParentObject, string, Secondaries>({
    source: deps.parents,
    keyMap: (_parent, key) => key,
    reconcile: deps.reconcile,
    secondary: {
      pods: {
        source: deps.pods,
        owner: { kind: 'Parent' },
        updateFilter: config.podFilter ? resourceVersionChanged : undefined,
      },
      configs: { source: deps.configs, keyMap: (c) => [...c.targets] },
    },
    updateFilter: config.generationFilter ? generationChanged : undefined,
    controller: { concurrency: config.concurrency, expectationsTtlMs: config.expectationsTtlMs },
    sources: { resyncPeriodMs: config.resyncPeriodMs },
    ...(config.queue !== undefined && { queue: { ...config.queue } }),
    retry: config.budget !== undefined ? { budget: { delaysMs: [...config.budget] } } : { backoff: { ...config.backoff } },
    leadership: deps.gate === undefined ? undefined : { gate: deps.gate },
    clock: deps.clock,
  });
}

const OK: Outcome = { kind: 'ok' };

/** A planted fault, to show the check can fail: a source whose streams lose every delete event. */
export class DeleteLosingSource<T> extends InProcessSource<T> {
  override open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> {
    const inner = super.open(signal);
    return (async function* () {
      for await (const event of inner) if (event.type !== 'delete') yield event;
    })();
  }
}

/**
 * More starts of one key at one instant than this is a hot loop (an unthrottled requeue). Legitimately
 * a key starts at most a few times at one instant: an event, then a deadline due at the same time.
 */
const HOT_LOOP = 50;

/** A parent key's view as the reconcile saw it (compared with the model's). */
function viewOfContext(ctx: Ctx): { parent: string | undefined; pods: string; configs: string } {
  const list = (m: ReadonlyMap<string, { v: number }>): string =>
    [...m]
      .map(([k, o]) => `${k}=${o.v}`)
      .sort()
      .join(',');
  return {
    parent: ReferenceModel.describeParent(ctx.parent),
    pods: list(ctx.owned('pods')),
    configs: list(ctx.owned('configs')),
  };
}

export class Harness {
  readonly model: ReferenceModel;
  readonly clock = new ManualClock();
  readonly parents = new InProcessSource<ParentObject>('parents');
  readonly pods: InProcessSource<PodObject>;
  readonly configs = new InProcessSource<ConfigObject>('configs');
  readonly gate: FakeLeaderGate | undefined;
  readonly loop: ReconcileLoop<ParentObject, string, Secondaries>;
  /** The outcome each key's next reconcile returns (sticky until a command changes it). */
  readonly outcomes = new Map<string, Outcome>();
  /** Calls blocked on a `hold` outcome, by key. */
  readonly held = new Map<string, (outcome: Outcome) => void>();

  /** @param faults `losePodDeletes`: the pods source drops delete events (a planted bug the check must find). */
  constructor(config: ModelConfig, faults: { losePodDeletes?: boolean } = {}) {
    this.model = new ReferenceModel(config);
    this.pods = faults.losePodDeletes ? new DeleteLosingSource<PodObject>('pods') : new InProcessSource<PodObject>('pods');
    this.gate = config.gated ? new FakeLeaderGate() : undefined;
    this.loop = buildLoop({
      config,
      clock: this.clock,
      parents: this.parents,
      pods: this.pods,
      configs: this.configs,
      gate: this.gate,
      reconcile: (key, ctx) => this.#reconcile(key, ctx),
    });
  }

  /** Consecutive starts of one key at one instant; see {@link HOT_LOOP}. */
  #burst = { key: '', at: -1, starts: 0 };

  async #reconcile(key: string, ctx: Ctx): Promise<ReconcileResult | undefined> {
    const fingerprint = ReferenceModel.fingerprintOf(ctx.parent);
    this.model.started(key, this.clock.now(), viewOfContext(ctx), this.gate?.isLeader() ?? true);
    const now = this.clock.now();
    this.#burst =
      this.#burst.key === key && this.#burst.at === now
        ? { ...this.#burst, starts: this.#burst.starts + 1 }
        : { key, at: now, starts: 1 };
    if (this.#burst.starts > HOT_LOOP) {
      // A hot loop would keep the clock step running forever: report it and hold this worker until stop.
      this.model.violations.push(`more than ${HOT_LOOP} reconciles of ${key} at t=${now} (a hot loop)`);
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
    }
    let outcome = this.outcomes.get(key) ?? OK;
    if (outcome.kind === 'hold') {
      try {
        outcome = await new Promise<Outcome>((resolve, reject) => {
          this.held.set(key, resolve);
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        });
      } catch (error) {
        this.model.ended(key, this.clock.now(), { kind: 'stopped' }, fingerprint);
        throw error;
      } finally {
        this.held.delete(key);
      }
    }
    if (outcome.kind === 'expect') {
      const cached = ctx.stores.pods.has(outcome.pod);
      ctx.expect('pods').creations(outcome.pod);
      this.model.expectCreation(key, outcome.pod, this.clock.now(), cached);
    }
    this.model.ended(key, this.clock.now(), outcome, fingerprint);
    switch (outcome.kind) {
      case 'throw':
        throw new Error(`${key}: failing on purpose`);
      case 'terminal':
        throw new TerminalError(`${key}: terminal on purpose`);
      case 'requeue':
        return { requeueAfterMs: outcome.ms };
      default:
        return undefined;
    }
  }

  /** Lets every promise chain run and fires timers due now (a 0 ms retry); no time passes. */
  async settle(): Promise<void> {
    await this.clock.advanceAsync(0);
    this.model.advanceTo(this.clock.now());
  }

  async start(initial: {
    parents: Array<[string, ParentObject]>;
    pods: Array<[string, PodObject]>;
    configs: Array<[string, ConfigObject]>;
  }): Promise<void> {
    for (const [key, object] of initial.parents) {
      this.parents.upsert(key, object);
      this.model.change('parents', key, object);
    }
    for (const [key, object] of initial.pods) {
      this.pods.upsert(key, object);
      this.model.change('pods', key, object);
    }
    for (const [key, object] of initial.configs) {
      this.configs.upsert(key, object);
      this.model.change('configs', key, object);
    }
    await this.loop.start();
    await this.settle();
  }

  source(name: SourceName): InProcessSource<ParentObject> | InProcessSource<PodObject> | InProcessSource<ConfigObject> {
    return name === 'parents' ? this.parents : name === 'pods' ? this.pods : this.configs;
  }

  /**
   * Applies one object change to its source and to the model at the same instant, then lets the
   * loop take it in: one event at a time, so each start the model judges follows the offers it knows.
   */
  async change(name: SourceName, key: string, next: ParentObject | PodObject | ConfigObject | undefined): Promise<void> {
    const source = this.source(name) as InProcessSource<unknown>;
    if (this.model.isDown(name)) {
      // held back until the reconnect's listing
    } else if (next === undefined) source.delete(key);
    else source.upsert(key, next);
    this.model.change(name, key, next);
    await this.settle();
  }

  /** A relist: the source's next listing is `world` (changes made while no watch was open arrive together). */
  async relist(name: SourceName, world: Map<string, ParentObject | PodObject | ConfigObject>): Promise<void> {
    if (!this.model.isDown(name)) (this.source(name) as InProcessSource<unknown>).replace(world);
    this.model.relist(name, world);
    await this.settle();
  }

  /**
   * The watch of `name` goes down: changes are held back from the source until {@link reconnect},
   * which hands it the whole world as one listing (a relist after a gap). No timer is involved, so
   * the relist's instant is the command's, never tied with another timer's.
   */
  disconnect(name: SourceName): void {
    this.model.disconnect(name);
  }

  async reconnect(name: SourceName): Promise<void> {
    if (!this.model.isDown(name)) return;
    this.model.reconnect(name);
    (this.source(name) as InProcessSource<unknown>).replace(this.model.world[name]);
    await this.settle();
  }

  /** The loop's parked keys and pending deadlines against the model's; the model's own findings. */
  check(): void {
    const violations = [...this.model.violations];
    const parked = this.loop
      .parked()
      .map((p) => String(p.key))
      .sort();
    const expected = this.model.parked();
    if (parked.join() !== expected.join()) violations.push(`parked: loop [${parked}] but model [${expected}]`);
    const pending = this.loop.health().retriesPending;
    const modelPending = this.model.pendingDeadlines();
    if (pending !== modelPending) violations.push(`pending retry/requeue deadlines: loop ${pending} but model ${modelPending}`);
    if (violations.length > 0) {
      const shown = violations.slice(0, 10).join('\n  ') + (violations.length > 10 ? `\n  … ${violations.length - 10} more` : '');
      throw new Error(`model violated at t=${this.clock.now()}:\n  ${shown}`);
    }
  }

  /**
   * Quiescence: every reconcile succeeds from now on, the replica leads, held calls complete, and
   * the clock is moved past every pending deadline until nothing is owed (bounded).
   */
  async quiesce(): Promise<void> {
    for (const key of [...this.outcomes.keys()]) this.outcomes.set(key, OK);
    for (const name of ['parents', 'pods', 'configs'] as const) await this.reconnect(name);
    if (this.gate !== undefined && !this.gate.leader) {
      this.gate.grant();
      this.model.gain();
    }
    for (const resolve of [...this.held.values()]) resolve(OK);
    await this.settle();
    for (let round = 0; round < 64; round++) {
      this.check();
      const next = this.model.nextDeadline();
      if (next === undefined && this.model.owedUnexcused().length === 0 && this.held.size === 0) break;
      const step = next === undefined ? 1 : Math.max(1, next - this.clock.now());
      await this.clock.advanceAsync(step);
      this.model.advanceTo(this.clock.now());
    }
    this.check();
    const left = this.model.quiescentViolations();
    if (left.length > 0) throw new Error(`not quiescent at t=${this.clock.now()}:\n  ${left.join('\n  ')}`);
  }

  async stop(): Promise<void> {
    for (const resolve of [...this.held.values()]) resolve(OK);
    const stopping = this.loop.stop({ graceMs: 0 });
    await settle();
    await stopping;
  }
}
