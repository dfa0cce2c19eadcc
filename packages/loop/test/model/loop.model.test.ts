/**
 * Model-based check of the loop (issue 29): random command sequences drive a real `ReconcileLoop`
 * (harness.ts) and a small reference model of controller-runtime's observable behaviour
 * (reference.ts) side by side; after every command the model's safety rules must hold and the
 * loop's parked keys and pending deadlines must equal the model's, and after quiescence every key
 * owed a reconcile must have run against the latest cache.
 *
 * Bounded for CI: `RL_MODEL_RUNS` runs (default 1,000, about 3 s on one core) of at most 40 commands. A failure prints
 * fast-check's seed and path with the shrunk command list; replay it with `RL_MODEL_SEED`,
 * `RL_MODEL_PATH` and `RL_MODEL_REPLAY` (the `replayPath` in the counterexample).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Harness } from './harness.js';
import {
  ReferenceModel,
  type ConfigObject,
  type ModelConfig,
  type Outcome,
  type ParentObject,
  type PodObject,
  type SourceName,
} from './reference.js';

const NAMES = ['a', 'b', 'c'] as const;
/** Parent keys: `d` has no object of its own, only configs that target it. */
const KEYS = ['a', 'b', 'c', 'd'] as const;
const PODS = ['p0', 'p1', 'p2'] as const;
const CONFIGS = ['c0', 'c1'] as const;

const runs = Number(process.env.RL_MODEL_RUNS ?? 1_000);
// A fixed seed by default, so a CI run is reproducible: the same 1,000 schedules every time. Explore
// new ones with `RL_MODEL_SEED=random` (or any number); a failure prints its seed, path and replay
// comment, and a schedule worth keeping goes to regressions.test.ts once fixed.
const replay =
  process.env.RL_MODEL_SEED === 'random'
    ? {}
    : {
        seed: Number(process.env.RL_MODEL_SEED ?? 2_029),
        ...(process.env.RL_MODEL_PATH ? { path: process.env.RL_MODEL_PATH } : {}),
      };

/** One command: a change applied to the sources and the model at once, then a settle and the checks. */
class Command implements fc.AsyncCommand<ReferenceModel, Harness> {
  constructor(
    readonly label: string,
    readonly apply: (h: Harness) => void | Promise<void>,
    readonly when: (m: Readonly<ReferenceModel>) => boolean = () => true,
  ) {}
  check(m: Readonly<ReferenceModel>): boolean {
    return this.when(m);
  }
  async run(_m: ReferenceModel, h: Harness): Promise<void> {
    await this.apply(h);
    await h.settle();
    h.check();
  }
  toString(): string {
    return this.label;
  }
}

const parentOf = (h: Harness, name: string, generation = 1, v = 0, s = 0, uid = h.model.newUid()): ParentObject => ({
  metadata: { name, uid, generation },
  spec: { v },
  status: { s },
});
const podOf = (name: string, owner: string, v: number): PodObject => ({
  metadata: { name, resourceVersion: String(v), ownerReferences: [{ kind: 'Parent', name: owner, controller: true }] },
  v,
});

/** A parent's next version: created (new uid) if absent, else its spec (generation + 1) or its status changed. */
function nextParent(h: Harness, name: string, what: 'spec' | 'status'): ParentObject {
  const p = h.model.world.parents.get(name);
  if (p === undefined) return parentOf(h, name);
  return what === 'spec'
    ? parentOf(h, name, p.metadata.generation + 1, p.spec.v + 1, p.status.s, p.metadata.uid)
    : parentOf(h, name, p.metadata.generation, p.spec.v, p.status.s + 1, p.metadata.uid);
}

const outcomeArb: fc.Arbitrary<Outcome> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Outcome>({ kind: 'ok' }) },
  { weight: 3, arbitrary: fc.constant<Outcome>({ kind: 'throw' }) },
  { weight: 1, arbitrary: fc.constant<Outcome>({ kind: 'terminal' }) },
  { weight: 2, arbitrary: fc.constantFrom(0, -5, 30, 400).map<Outcome>((ms) => ({ kind: 'requeue', ms })) },
  { weight: 2, arbitrary: fc.constant<Outcome>({ kind: 'hold' }) },
  { weight: 1, arbitrary: fc.constantFrom(...PODS).map<Outcome>((pod) => ({ kind: 'expect', pod })) },
);
const show = (o: Outcome): string =>
  o.kind === 'requeue' ? `requeue(${o.ms})` : o.kind === 'expect' ? `expect(${o.pod})` : o.kind;

const outcomeCommand = fc
  .tuple(fc.constantFrom(...KEYS), outcomeArb)
  .map(([key, outcome]) => new Command(`outcome(${key} = ${show(outcome)})`, (h) => void h.outcomes.set(key, outcome)));
const advanceCommand = fc.constantFrom(1, 5, 10, 40, 100, 400, 1_000, 5_000).map(
  (ms) =>
    new Command(`advance(${ms} ms)`, async (h) => {
      await h.clock.advanceAsync(ms);
    }),
);

/**
 * Up to 40 commands a run; `size: 'max'` draws lengths up to that bound, not only short ones.
 * `RL_MODEL_REPLAY` is the counterexample's `replayPath` comment, needed with seed and path to replay commands.
 */
const COMMANDS = {
  maxCommands: 40,
  size: 'max',
  ...(process.env.RL_MODEL_REPLAY ? { replayPath: process.env.RL_MODEL_REPLAY } : {}),
} as const;

const commands = [
  fc
    .tuple(fc.constantFrom(...NAMES), fc.constantFrom('spec' as const, 'status' as const))
    .map(
      ([name, what]) =>
        new Command(`upsertParent(${name}, ${what})`, (h) => h.change('parents', name, nextParent(h, name, what))),
    ),
  fc.constantFrom(...NAMES).map((name) => new Command(`deleteParent(${name})`, (h) => h.change('parents', name, undefined))),
  // Delete + create under the same name: a new uid at generation 1 (two events).
  fc.constantFrom(...NAMES).map(
    (name) =>
      new Command(`recreateParent(${name})`, async (h) => {
        await h.change('parents', name, undefined);
        await h.change('parents', name, parentOf(h, name));
      }),
  ),
  fc
    .tuple(fc.constantFrom(...PODS), fc.constantFrom(...KEYS))
    .map(
      ([pod, owner]) =>
        new Command(`upsertPod(${pod} → ${owner})`, (h) =>
          h.change('pods', pod, podOf(pod, owner, (h.model.world.pods.get(pod)?.v ?? 0) + 1)),
        ),
    ),
  fc.constantFrom(...PODS).map((pod) => new Command(`deletePod(${pod})`, (h) => h.change('pods', pod, undefined))),
  // The same version again (a repeated frame): what `resourceVersionChanged` drops.
  fc.constantFrom(...PODS).map(
    (pod) =>
      new Command(`touchPod(${pod})`, async (h) => {
        const current = h.model.world.pods.get(pod);
        if (current !== undefined) await h.change('pods', pod, current);
      }),
  ),
  fc
    .tuple(fc.constantFrom(...CONFIGS), fc.subarray([...KEYS]))
    .map(
      ([config, targets]) =>
        new Command(`upsertConfig(${config} → [${targets}])`, (h) =>
          h.change('configs', config, { targets, v: (h.model.world.configs.get(config)?.v ?? 0) + 1 } satisfies ConfigObject),
        ),
    ),
  fc
    .constantFrom(...CONFIGS)
    .map((config) => new Command(`deleteConfig(${config})`, (h) => h.change('configs', config, undefined))),
  // A relist of the parents: what changed while no watch was open arrives as one listing (a
  // re-create seen only through it keeps the name and generation 1 with a new uid).
  fc.tuple(...NAMES.map(() => fc.constantFrom('keep', 'drop', 'recreate', 'spec', 'status'))).map(
    (edits) =>
      new Command(`relistParents(${NAMES.map((n, i) => `${n}:${edits[i]}`).join(' ')})`, (h) => {
        const world = new Map<string, ParentObject>();
        NAMES.forEach((name, i) => {
          const edit = edits[i];
          const current = h.model.world.parents.get(name);
          if (edit === 'drop') return;
          if (edit === 'recreate') world.set(name, parentOf(h, name));
          else if (edit === 'keep') {
            if (current !== undefined) world.set(name, current);
          } else world.set(name, nextParent(h, name, edit as 'spec' | 'status'));
        });
        return h.relist('parents', world);
      }),
  ),
  fc
    .tuple(...PODS.map(() => fc.constantFrom<'keep' | 'drop' | 'bump' | (typeof KEYS)[number]>('keep', 'drop', 'bump', ...KEYS)))
    .map(
      (edits) =>
        new Command(`relistPods(${PODS.map((p, i) => `${p}:${edits[i]}`).join(' ')})`, (h) => {
          const world = new Map<string, PodObject>();
          PODS.forEach((pod, i) => {
            const edit = edits[i]!;
            const current = h.model.world.pods.get(pod);
            if (edit === 'drop') return;
            if (edit === 'keep') {
              if (current !== undefined) world.set(pod, current);
              return;
            }
            const owner = edit === 'bump' ? current?.metadata.ownerReferences[0]?.name : edit;
            if (owner !== undefined) world.set(pod, podOf(pod, owner, (current?.v ?? 0) + 1));
          });
          return h.relist('pods', world);
        }),
    ),
  outcomeCommand,
  // The watch of one source goes down; what changes meanwhile arrives in the listing of its reconnect.
  fc
    .constantFrom<SourceName>('parents', 'pods', 'configs')
    .map((name) => new Command(`disconnect(${name})`, (h) => h.disconnect(name))),
  fc
    .constantFrom<SourceName>('parents', 'pods', 'configs')
    .map((name) => new Command(`reconnect(${name})`, (h) => h.reconnect(name))),
  outcomeCommand,
  advanceCommand,
  fc
    .tuple(
      fc.constantFrom(...KEYS),
      outcomeArb.filter((o) => o.kind !== 'hold'),
    )
    .map(
      ([key, outcome]) =>
        new Command(`complete(${key} with ${show(outcome)})`, (h) => {
          const resolve = h.held.get(key);
          h.held.delete(key);
          resolve?.(outcome);
        }),
    ),
  advanceCommand,
  fc.constant(
    new Command(
      'revoke leadership',
      (h) => {
        if (h.gate === undefined) return;
        h.gate.revoke(); // also ends a frozen term
        h.model.lose();
      },
      (m) => m.config.gated,
    ),
  ),
  fc.constant(
    new Command(
      'freeze leadership',
      (h) => {
        if (!h.gate?.leader) return;
        h.gate.freeze();
        h.model.lose();
      },
      (m) => m.config.gated,
    ),
  ),
  fc.constant(
    new Command(
      'grant leadership',
      (h) => {
        if (h.gate === undefined || h.gate.leader) return;
        h.gate.grant();
        h.model.gain();
      },
      (m) => m.config.gated,
    ),
  ),
  fc.constantFrom(...KEYS).map(
    (key) =>
      new Command(`release(${key})`, (h) => {
        const model = h.model.release(key);
        const loop = h.loop.release(key);
        if (model !== loop) h.model.violations.push(`release(${key}): loop answered ${loop}, model ${model}`);
      }),
  ),
  fc.constantFrom(...KEYS).map(
    (key) =>
      new Command(`enqueue(${key})`, (h) => {
        h.loop.enqueue(key);
        h.model.offer(key);
      }),
  ),
];

const configArb: fc.Arbitrary<ModelConfig> = fc.record({
  concurrency: fc.integer({ min: 1, max: 3 }),
  generationFilter: fc.boolean(),
  podFilter: fc.boolean(),
  budget: fc.option(fc.constantFrom([0], [0, 10, 100], [20, 20]), { nil: undefined }),
  backoff: fc.constant({ initialMs: 10, maxMs: 1_000 }),
  resyncPeriodMs: fc.constantFrom(0, 700, 5_000),
  gated: fc.boolean(),
  expectationsTtlMs: fc.constant(2_000),
  // FIFO, priority with turns from 0 / 300 ms of waiting, and the default (10 s, rarely reached here).
  queue: fc.option(fc.record({ priority: fc.boolean(), agingMs: fc.constantFrom(0, 300, 10_000) }), { nil: undefined }),
});

const [configArbSample] = fc.sample(configArb, { seed: 29, numRuns: 1 }) as [ModelConfig];

/** One run: start on a small world, apply the commands, then quiesce and check liveness. */
async function runOnce(
  config: ModelConfig,
  outcomes: readonly Outcome[],
  cmds: Iterable<fc.AsyncCommand<ReferenceModel, Harness>>,
  faults: ConstructorParameters<typeof Harness>[1],
): Promise<Harness> {
  const h = new Harness(config, faults);
  for (const [i, key] of KEYS.entries()) h.outcomes.set(key, outcomes[i]!);
  try {
    await h.start({
      parents: NAMES.slice(0, 2).map((name) => [name, parentOf(h, name)]),
      pods: [['p0', podOf('p0', 'a', 1)]],
      configs: [['c0', { targets: ['b', 'd'], v: 1 }]],
    });
    h.check();
    await fc.asyncModelRun(() => ({ model: h.model, real: h }), cmds);
    await h.quiesce();
  } finally {
    await h.stop();
  }
  return h;
}

const property = (onRun?: (h: Harness) => void, faults: ConstructorParameters<typeof Harness>[1] = {}) =>
  fc.asyncProperty(
    configArb,
    fc.tuple(...KEYS.map(() => outcomeArb)),
    fc.commands(commands, COMMANDS),
    async (config, outcomes, cmds) => {
      const h = await runOnce(config, outcomes, cmds, faults);
      onRun?.(h);
    },
  );

describe('model-based check of the loop against controller-runtime (issue 29)', () => {
  it('[loop: Model-based] random sources, outcomes, clock and leadership: per-key exclusion, no run while parked or standby or without a reason, and after quiescence every owed key ran against the latest cache', async () => {
    await fc.assert(property(), { numRuns: runs, ...replay });
  }, 120_000);

  it('[loop: Model-based] the runs are not vacuous: on a fixed sample they reach parks, releases, new terms, requeue 0, failures and deleted parents', async () => {
    const stats: Record<string, number> = {};
    await fc.assert(
      property((h) => {
        for (const [k, v] of Object.entries(h.model.stats)) stats[k] = (stats[k] ?? 0) + v;
      }),
      { numRuns: 40, seed: 29 },
    );
    // Every counter the model keeps: starts, parks, releases, deleted-parent runs, terms, requeue 0,
    // failures, expectations and offers while running (per-key exclusion under load).
    const names = Object.keys(new ReferenceModel(configArbSample).stats);
    expect(names.length).toBeGreaterThanOrEqual(9);
    for (const name of names) expect(stats[name] ?? 0, name).toBeGreaterThan(0);
  }, 120_000);

  it('[loop: Model-based] the check can fail: a pods source that loses its delete events is caught, shrunk, and reported with its seed', async () => {
    const details = await fc.check(property(undefined, { losePodDeletes: true }), { numRuns: 200, seed: 29 });
    expect(details.failed).toBe(true);
    expect(String(details.errorInstance)).toMatch(/owed a reconcile after quiescence/);
    expect(fc.defaultReportMessage(details)).toMatch(/seed: 29, path: "[\d:]+"/);
  }, 120_000);
});
