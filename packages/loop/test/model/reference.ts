/**
 * A small reference model of what controller-runtime's controller (over client-go's informers and
 * workqueue) lets a user observe, plus the loop's documented extensions (retry budget with
 * dead-letter, per-term parks, read-your-writes expectations). It holds each source's world and the
 * caches built from it (equal unless a watch is down) and, per parent key, what is owed and what is
 * pending, and it judges every reconcile call the harness reports: when it starts and how it ends.
 *
 * It never predicts an exact schedule (queue order, coalescing and worker count are free); it states bounds:
 * - safety, at every start: one call per key at a time, only while leading, never while parked or
 *   waiting for an expected create, never without a reason (an event, resync, new term, release,
 *   expectations satisfied or expired, or a due retry/requeue deadline);
 * - liveness, at quiescence: every key owed a reconcile ran after its last change, and its last
 *   call saw the latest cached objects (a deleted parent: `parent` undefined).
 *
 * Timers due at one instant fire in scheduling order with reconciles in between, an order the model
 * does not track: there it is lenient (see `credits`), never stricter than the loop may be.
 */

/** The primary kind (`For`): its own parent, keyed by name. */
export interface ParentObject {
  readonly metadata: { readonly name: string; readonly uid: string; readonly generation: number };
  readonly spec: { readonly v: number };
  readonly status: { readonly s: number };
}

/** An owned kind (`Owns`): mapped to its parent by controller owner reference. */
export interface PodObject {
  readonly metadata: {
    readonly name: string;
    readonly resourceVersion: string;
    readonly ownerReferences: ReadonlyArray<{ readonly kind: string; readonly name: string; readonly controller: boolean }>;
  };
  readonly v: number;
}

/** A watched kind (`Watches` + a map function): mapped to every parent in `targets`. */
export interface ConfigObject {
  readonly targets: readonly string[];
  readonly v: number;
}

export type SourceName = 'parents' | 'pods' | 'configs';

/** What a reconcile returns or throws, chosen per key by the commands. `hold` blocks until a `Complete` command. */
export type Outcome =
  | { readonly kind: 'ok' }
  | { readonly kind: 'throw' }
  | { readonly kind: 'terminal' }
  | { readonly kind: 'requeue'; readonly ms: number }
  | { readonly kind: 'hold' }
  /** Succeeds after recording the creation of `pod` with `ctx.expect('pods')` (read your writes). */
  | { readonly kind: 'expect'; readonly pod: string };

/** The run's fixed settings (the loop is built from the same ones). */
export interface ModelConfig {
  readonly concurrency: number;
  /** `generationChanged` on the primary source. */
  readonly generationFilter: boolean;
  /** `resourceVersionChanged` on the pods. */
  readonly podFilter: boolean;
  /** A retry budget (exact delays, then dead-letter), or exponential backoff. */
  readonly budget: readonly number[] | undefined;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  /** 0 disables. */
  readonly resyncPeriodMs: number;
  /** Behind a leader gate (starts as a standby) or always leading. */
  readonly gated: boolean;
  /** How long recorded expectations wait for the cache before the parent runs anyway. */
  readonly expectationsTtlMs: number;
  /**
   * The loop's `queue` option (default: priority on, 10 s aging). The model needs no priorities: it
   * never predicts the queue's order, and its bounds hold for either queue — the aging bound itself
   * is the work queue's property test.
   */
  readonly queue?: { readonly priority: boolean; readonly agingMs: number } | undefined;
}

/** What one reconcile call saw: the parent's identity and content, and its owned / watched objects. */
export interface View {
  readonly parent: string | undefined;
  readonly pods: string;
  readonly configs: string;
}

/** The per-key `{ requeueAfterMs: 0 }` limiter (client-go's per-item exponential limiter: 5 ms doubling, 1000 s cap). */
const REQUEUE_ZERO = { initialMs: 5, maxMs: 1_000_000 };

const delayOf = (policy: { initialMs: number; maxMs: number }, n: number): number =>
  Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, n - 1));

interface KeyState {
  /** A change (or retry, requeue, resync, new term, release) the loop still owes: a reconcile that sees the current view. */
  owed: boolean;
  /** Offered since its last start: a start is justified. */
  triggered: boolean;
  /** A retry or requeue deadline passed since its last start: a start is justified. */
  due: boolean;
  /**
   * Timer events (resync, expiry, deadline) that offered this key at instant `at`: timers due at
   * one instant fire one by one, so each may run the key once more at that instant.
   */
  credits: { at: number; n: number };
  deadline: number | undefined;
  deadlineKind: 'retry' | 'requeue' | undefined;
  /** Consecutive failures (with a budget: counted at `fingerprint`). */
  failures: number;
  fingerprint: string | undefined;
  /** Parked (dead-letter) at this fingerprint; `null` = not parked. */
  parkedAt: string | undefined | null;
  /** When it last started (-1: never). */
  lastStartAt: number;
  /** Consecutive `{ requeueAfterMs: 0 }` results. */
  requeues: number;
  running: boolean;
  /** Pods a reconcile of this key created that the cache has not shown yet, and since when. */
  expecting: Set<string> | undefined;
  expectingSince: number;
  /**
   * Its expectations may already be dropped: it waited in the queue while its parent was gone from
   * the cache, and a worker that dequeues it then drops them (`syncReplicaSet`: NotFound →
   * `DeleteExpectations`) even when the leadership check then turns it away (a frozen term). The
   * model does not track which worker is free when, so a later start may find them kept or dropped.
   */
  mayHaveDropped: boolean;
  lastView: View | undefined;
  starts: number;
}

export class ReferenceModel {
  readonly config: ModelConfig;
  /** What each source holds: changes land here at once, in the caches below only while its watch is open. */
  readonly world = {
    parents: new Map<string, ParentObject>(),
    pods: new Map<string, PodObject>(),
    configs: new Map<string, ConfigObject>(),
  };
  /** The loop's caches (its stores, once the events are applied): what a reconcile sees. */
  readonly parents = new Map<string, ParentObject>();
  readonly pods = new Map<string, PodObject>();
  readonly configs = new Map<string, ConfigObject>();
  /** Sources whose watch is down: changes reach their cache only with the listing of the reconnect. */
  readonly #down = new Set<SourceName>();
  readonly #keys = new Map<string, KeyState>();
  readonly violations: string[] = [];
  /** Counters a fixed-seed sample reads to show the runs are not vacuous. */
  readonly stats = {
    starts: 0,
    parks: 0,
    releases: 0,
    deletedParentRuns: 0,
    terms: 0,
    /** Queued keys a new term dropped because their parent was gone from every store. */
    goneParentsDropped: 0,
    requeueZero: 0,
    failures: 0,
    expectations: 0,
    offersWhileRunning: 0,
  };
  leading: boolean;
  #now = 0;
  #nextResync: number;
  #uids = 0;

  constructor(config: ModelConfig) {
    this.config = config;
    this.leading = !config.gated;
    this.#nextResync = config.resyncPeriodMs === 0 ? Infinity : config.resyncPeriodMs;
  }

  newUid(): string {
    this.#uids += 1;
    return `uid-${this.#uids}`;
  }

  #state(key: string): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = {
        owed: false,
        triggered: false,
        due: false,
        credits: { at: -1, n: 0 },
        lastStartAt: -1,
        deadline: undefined,
        deadlineKind: undefined,
        failures: 0,
        fingerprint: undefined,
        parkedAt: null,
        requeues: 0,
        running: false,
        expecting: undefined,
        expectingSince: 0,
        mayHaveDropped: false,
        lastView: undefined,
        starts: 0,
      };
      this.#keys.set(key, state);
    }
    return state;
  }

  // ---- the world: which parent keys an object maps to, and what a reconcile of a key sees ----

  /** `EnqueueRequestForOwner` (`OnlyControllerOwner`): the controller reference's name (owner and pod share no namespace here). */
  static ownersOf(pod: PodObject | undefined): string[] {
    return (pod?.metadata.ownerReferences ?? []).filter((r) => r.kind === 'Parent' && r.controller).map((r) => r.name);
  }

  /** `EnqueueRequestsFromMapFunc`: the map function's keys. */
  static targetsOf(config: ConfigObject | undefined): string[] {
    return [...new Set(config?.targets ?? [])];
  }

  /** The default fingerprint: the parent's identity with its spec (`uid:generation`), none once deleted. */
  static fingerprintOf(parent: ParentObject | undefined): string | undefined {
    return parent === undefined ? undefined : `${parent.metadata.uid}:${parent.metadata.generation}`;
  }

  static describeParent(parent: ParentObject | undefined): string | undefined {
    return parent === undefined
      ? undefined
      : `${parent.metadata.uid}:${parent.metadata.generation}:v${parent.spec.v}:s${parent.status.s}`;
  }

  /** What a reconcile of `key` sees in the caches now. */
  viewOf(key: string): View {
    const pods = [...this.pods]
      .filter(([, pod]) => ReferenceModel.ownersOf(pod).includes(key))
      .map(([k, pod]) => `${k}=${pod.v}`)
      .sort()
      .join(',');
    const configs = [...this.configs]
      .filter(([, config]) => ReferenceModel.targetsOf(config).includes(key))
      .map(([k, config]) => `${k}=${config.v}`)
      .sort()
      .join(',');
    return { parent: ReferenceModel.describeParent(this.parents.get(key)), pods, configs };
  }

  /** Parent keys with an object in some store: what resync and a new term re-drive (Go's limit: not one that lost its last object). */
  parentsWithObjects(): Set<string> {
    const out = new Set<string>(this.parents.keys());
    for (const pod of this.pods.values()) for (const owner of ReferenceModel.ownersOf(pod)) out.add(owner);
    for (const config of this.configs.values()) for (const target of ReferenceModel.targetsOf(config)) out.add(target);
    return out;
  }

  // ---- changes (each applied to the model the moment the command applies it to the source) ----

  /** An upsert or delete at the source: reaches the cache as an event unless the watch is down. */
  change(source: SourceName, key: string, next: ParentObject | PodObject | ConfigObject | undefined): void {
    const world = this.world[source] as Map<string, unknown>;
    if (next === undefined) world.delete(key);
    else world.set(key, next);
    if (!this.#down.has(source)) for (const parent of this.#apply(source, key, next)) this.offer(parent);
  }

  /** The source's world is replaced; an open watch delivers it as one listing (a relist). */
  relist(source: SourceName, world: ReadonlyMap<string, ParentObject | PodObject | ConfigObject>): void {
    const mine = this.world[source] as Map<string, unknown>;
    mine.clear();
    for (const [key, object] of world) mine.set(key, object);
    if (!this.#down.has(source)) this.#relistCache(source, world);
  }

  /** The watch of `source` is down: what changes meanwhile — a delete, a re-create under the same name — waits for the relist. */
  disconnect(source: SourceName): void {
    this.#down.add(source);
  }

  /** The watch is back: the reflector's relist brings the source's world in one listing. */
  reconnect(source: SourceName): void {
    if (!this.#down.delete(source)) return;
    this.#relistCache(source, this.world[source]);
  }

  isDown(source: SourceName): boolean {
    return this.#down.has(source);
  }

  /**
   * One event applied to the cache: the informer's event handler enqueues the parents it affects —
   * old and new ones for a moved object. `generationChanged` (a predicate) drops a primary update
   * that keeps the generation and the parent; creates and deletes always pass, and so does a
   * replacement under the same name (a new uid) that a relist shows as one update — a live watch
   * shows it as a delete and a create, which no predicate filters.
   */
  #apply(source: SourceName, key: string, next: ParentObject | PodObject | ConfigObject | undefined): Set<string> {
    const affected = new Set<string>();
    if (source === 'parents') {
      const previous = this.parents.get(key);
      if (next === undefined) this.parents.delete(key);
      else this.parents.set(key, next as ParentObject);
      const filtered =
        this.config.generationFilter &&
        previous !== undefined &&
        next !== undefined &&
        previous.metadata.uid === (next as ParentObject).metadata.uid &&
        previous.metadata.generation === (next as ParentObject).metadata.generation;
      if (!filtered && (previous !== undefined || next !== undefined)) affected.add(key);
    } else if (source === 'pods') {
      const previous = this.pods.get(key);
      if (next === undefined) this.pods.delete(key);
      else this.pods.set(key, next as PodObject);
      // `ResourceVersionChangedPredicate`: an update at the same resourceVersion that keeps its owners is dropped.
      const filtered =
        this.config.podFilter &&
        previous !== undefined &&
        next !== undefined &&
        previous.metadata.resourceVersion === (next as PodObject).metadata.resourceVersion &&
        ReferenceModel.ownersOf(previous).join() === ReferenceModel.ownersOf(next as PodObject).join();
      if (!filtered && (previous !== undefined || next !== undefined)) {
        for (const owner of ReferenceModel.ownersOf(previous)) affected.add(owner);
        for (const owner of ReferenceModel.ownersOf(next as PodObject | undefined)) affected.add(owner);
      }
      // ControllerExpectations: the event that makes a parent's last expected create observed re-queues it.
      for (const [parent, state] of this.#keys) {
        if (state.expecting === undefined) continue;
        for (const pod of [...state.expecting]) if (this.pods.has(pod)) state.expecting.delete(pod);
        if (state.expecting.size === 0) {
          state.expecting = undefined;
          affected.add(parent);
        }
      }
    } else {
      const previous = this.configs.get(key);
      if (next === undefined) this.configs.delete(key);
      else this.configs.set(key, next as ConfigObject);
      if (previous !== undefined || next !== undefined) {
        for (const target of ReferenceModel.targetsOf(previous)) affected.add(target);
        for (const target of ReferenceModel.targetsOf(next as ConfigObject | undefined)) affected.add(target);
      }
    }
    return affected;
  }

  /**
   * A listing reaches the cache: the informer's `Replace()` — an update for every listed object
   * (unchanged ones too, subject to predicates) and a delete for every cached object missing from it.
   */
  #relistCache(source: SourceName, world: ReadonlyMap<string, ParentObject | PodObject | ConfigObject>): void {
    const current: ReadonlyMap<string, unknown> =
      source === 'parents' ? this.parents : source === 'pods' ? this.pods : this.configs;
    const keys = new Set<string>([...current.keys(), ...world.keys()]);
    // One event: each affected parent is offered once.
    const affected = new Set<string>();
    for (const key of [...keys].sort()) for (const parent of this.#apply(source, key, world.get(key))) affected.add(parent);
    for (const parent of affected) this.offer(parent);
  }

  /**
   * An enqueue through the dead-letter gate (events, resync, a new term): owed and triggered. With a
   * budget, a key parked at the parent's current fingerprint is turned away; another fingerprint
   * releases it with a fresh budget, and failures counted at another fingerprint are forgotten.
   */
  offer(key: string, timerAt?: number): void {
    const state = this.#state(key);
    if (timerAt !== undefined) this.#credit(state, timerAt);
    // DeleteExpectations: a parent gone from the primary store has nothing left to wait for.
    if (!this.parents.has(key)) state.expecting = undefined;
    if (this.config.budget !== undefined) {
      const fingerprint = ReferenceModel.fingerprintOf(this.parents.get(key));
      if (state.parkedAt !== null) {
        if (state.parkedAt === fingerprint) return;
        this.#unpark(state);
      } else if (state.failures > 0 && state.fingerprint !== fingerprint) {
        state.failures = 0;
      }
    }
    state.owed = true;
    state.triggered = true;
    if (state.running) this.stats.offersWhileRunning += 1;
  }

  /** The key is back in the queue: with its parent gone from the cache, a worker's dequeue may drop its expectations. */
  #queuedWhileGone(key: string, state: KeyState): void {
    if (state.expecting !== undefined && !this.parents.has(key)) state.mayHaveDropped = true;
  }

  #credit(state: KeyState, at: number): void {
    state.credits = state.credits.at === at ? { at, n: state.credits.n + 1 } : { at, n: 1 };
  }

  #unpark(state: KeyState): void {
    state.parkedAt = null;
    state.failures = 0;
    this.stats.releases += 1;
  }

  // ---- time: resync and deadlines ----

  /**
   * Moves the model's time to `now`: resync ticks on the way re-drive every parent with objects;
   * deadlines fire. Timers due at the same instant fire in an order the model does not know, so a
   * reconcile's start or end (`settled` false) fires only deadlines before `now`; one due exactly
   * now fires at a start that needs it or once the command settled (every timer due now has fired).
   */
  advanceTo(now: number, settled = true): void {
    if (now < this.#now) this.violations.push(`time went backwards: ${now} < ${this.#now}`);
    for (;;) {
      let next = this.#nextResync;
      for (const state of this.#keys.values()) if (state.deadline !== undefined && state.deadline < next) next = state.deadline;
      const expiry = this.#nextExpiry();
      if (expiry !== undefined && expiry < next) next = expiry;
      if (next > now || (next === now && !settled && next !== this.#nextResync && next !== expiry)) break;
      this.#now = next;
      // `ExpectationsTimeout`: unobserved writes expire and the parent is re-queued anyway.
      for (const [key, state] of this.#keys) {
        if (state.expecting !== undefined && state.expectingSince + this.config.expectationsTtlMs <= next) {
          state.expecting = undefined;
          this.offer(key, next);
        }
      }
      // A deadline passing is the delaying queue handing the key back (a retry is not gated).
      for (const [key, state] of this.#keys) {
        if (state.deadline !== undefined && state.deadline <= next && (state.deadline < now || settled)) {
          state.deadline = undefined;
          state.deadlineKind = undefined;
          state.due = true;
          state.owed = true;
          this.#credit(state, next);
          this.#queuedWhileGone(key, state);
        }
      }
      if (this.#nextResync <= next) {
        // The informer's resync: every cached object's parent is enqueued again (through the gate).
        for (const parent of this.parentsWithObjects()) this.offer(parent, next);
        this.#nextResync += this.config.resyncPeriodMs;
      }
    }
    this.#now = now;
  }

  #nextExpiry(): number | undefined {
    let next: number | undefined;
    for (const state of this.#keys.values()) {
      if (state.expecting === undefined) continue;
      const at = state.expectingSince + this.config.expectationsTtlMs;
      if (next === undefined || at < next) next = at;
    }
    return next;
  }

  /** The earliest pending retry/requeue deadline or expectations expiry, if any. */
  nextDeadline(): number | undefined {
    let next: number | undefined = this.#nextExpiry();
    for (const state of this.#keys.values()) {
      if (state.deadline !== undefined && (next === undefined || state.deadline < next)) next = state.deadline;
    }
    return next;
  }

  /** How many keys have a pending retry or requeue deadline (the loop's `health().retriesPending`). */
  pendingDeadlines(): number {
    let n = 0;
    for (const state of this.#keys.values()) if (state.deadline !== undefined) n += 1;
    return n;
  }

  // ---- leadership ----

  /** The term ended: nothing may start until the next one. */
  lose(): void {
    this.leading = false;
  }

  /**
   * A new term: controller-runtime's new leader starts its controllers and every cached object is
   * reconciled once. The loop also releases every park (dead-letter state is per term).
   */
  gain(): void {
    this.leading = true;
    this.stats.terms += 1;
    // controller-runtime starts a controller's event handlers only when leading, and its initial
    // replay enqueues only live objects (plus, through EnqueueRequestForOwner, owners of objects
    // still cached): a key queued earlier whose parent has no object in any store is dropped, so
    // nothing is owed for it. A key still held by a call keeps its re-add (dirty); a retry or
    // requeue deadline not yet passed still fires later (its timer is not the queue).
    const live = this.parentsWithObjects();
    for (const [key, state] of this.#keys) {
      if (live.has(key) || state.running) continue;
      if (state.triggered || state.due) this.stats.goneParentsDropped += 1;
      state.owed = false;
      state.triggered = false;
      state.due = false;
    }
    for (const state of this.#keys.values()) {
      if (state.parkedAt !== null) {
        this.#unpark(state);
        state.owed = true;
        state.triggered = true;
      }
    }
    for (const parent of this.parentsWithObjects()) this.offer(parent);
  }

  /** `loop.release(key)`: a parked key is released and queued. */
  release(key: string): boolean {
    const state = this.#state(key);
    if (state.parkedAt === null) return false;
    this.#unpark(state);
    state.owed = true;
    state.triggered = true;
    return true;
  }

  // ---- reconcile calls ----

  /**
   * Whether a reconcile that saw `seen` saw everything the predicates let through. With
   * `generationChanged` only the parent's existence, identity and generation count: an update that
   * keeps the uid and the generation (a status write) is dropped, so a call that saw the old version
   * owes nothing; a re-created parent (a new uid), even at the same generation, is owed a call.
   */
  #sameView(seen: View, current: View): boolean {
    const parent = (p: string | undefined): string | undefined =>
      p === undefined || !this.config.generationFilter ? p : p.split(':').slice(0, 2).join(':');
    return parent(seen.parent) === parent(current.parent) && seen.pods === current.pods && seen.configs === current.configs;
  }

  /** A reconcile of `key` began at `now`, seeing `view`. */
  started(key: string, now: number, view: View, leaderNow: boolean): void {
    this.advanceTo(now, false);
    const state = this.#state(key);
    const where = `reconcile of ${key} at t=${now}`;
    // client-go's workqueue: a key being processed is never handed to a second worker.
    if (state.running) this.violations.push(`${where}: started while another reconcile of it runs`);
    // LeaderElectionRunnable: controllers run only while leading.
    if (!this.leading || !leaderNow) this.violations.push(`${where}: started while not leading`);
    // Dead-letter (the loop's extension): nothing runs a key parked at its current fingerprint.
    if (state.parkedAt !== null) this.violations.push(`${where}: started while parked at ${String(state.parkedAt)}`);
    // ControllerExpectations: not while a recorded create is unobserved, unless expired or the parent is
    // gone (DeleteExpectations) now or at a dequeue since (see `mayHaveDropped`).
    if (state.expecting !== undefined) {
      for (const pod of [...state.expecting]) if (this.pods.has(pod)) state.expecting.delete(pod);
      const expired = state.expectingSince + this.config.expectationsTtlMs <= now;
      if (state.expecting.size > 0 && !expired && this.parents.has(key) && !state.mayHaveDropped)
        this.violations.push(`${where}: started while its create of ${[...state.expecting]} is unobserved`);
      state.expecting = undefined;
    }
    state.mayHaveDropped = false;
    // Nothing reconciles a key on its own: an event, resync, term, release, or a deadline that passed.
    // A timer of this instant, or of the instant of its last start (it may have fired after that
    // start and marked the running key dirty, so it runs once more when that call ends).
    const credits = state.credits.at === now || state.credits.at === state.lastStartAt ? state.credits.n : 0;
    if (!state.triggered && !state.due && state.deadline !== undefined && state.deadline <= now) {
      state.deadline = undefined; // its timer fired just now
      state.deadlineKind = undefined;
      state.due = true;
    }
    if (!state.triggered && !state.due && credits === 0) {
      this.violations.push(
        `${where}: started with no event and no deadline passed (pending ${state.deadlineKind ?? 'none'} at ${String(state.deadline)})`,
      );
    }
    // One start takes every offer made before it (the queue deduplicates), and one timer's offer.
    state.triggered = false;
    state.due = false;
    if (credits > 0) state.credits = { at: state.credits.at, n: credits - 1 };
    state.lastStartAt = now;
    state.running = true;
    state.lastView = view;
    state.starts += 1;
    this.stats.starts += 1;
    if (view.parent === undefined && state.starts > 1) this.stats.deletedParentRuns += 1;
    // The cache is current at a start (cache before notify), so a start that saw the current view discharges what was owed.
    if (this.#sameView(view, this.viewOf(key))) state.owed = false;
  }

  /**
   * A reconcile of `key` ended at `now` with `outcome` (`stopped`: aborted by the end of the term,
   * neither retried nor counted), having started at fingerprint `fingerprint`. controller-runtime's
   * `reconcileHandler`: an error → `AddRateLimited` (backoff grows), `RequeueAfter > 0` → `AddAfter`
   * (count reset), `Requeue` → rate-limited re-add, success or `TerminalError` → `Forget`. Where the
   * loop differs by design (README's table): an error replaces a pending requeue; a success drops a
   * pending retry but keeps a pending requeue; the earliest requeue wins.
   */
  ended(key: string, now: number, outcome: Outcome | { kind: 'stopped' }, fingerprint: string | undefined): void {
    this.advanceTo(now, false);
    const state = this.#state(key);
    if (!state.running) this.violations.push(`reconcile of ${key} ended at t=${now} but none was running`);
    state.running = false;
    // Offered while it ran: the queue hands it back now (dirty), with the writes this call recorded.
    if (state.triggered) this.#queuedWhileGone(key, state);
    if (!(outcome.kind === 'requeue' && outcome.ms === 0)) state.requeues = 0;
    // `RequeueAfter <= 0` without `Requeue`: a plain success.
    const kind = (outcome.kind === 'requeue' && outcome.ms < 0) || outcome.kind === 'expect' ? 'ok' : outcome.kind;
    switch (kind) {
      case 'stopped':
      case 'hold':
        return;
      case 'ok':
      case 'terminal':
        state.failures = 0;
        if (state.deadlineKind === 'retry') {
          state.deadline = undefined;
          state.deadlineKind = undefined;
        }
        return;
      case 'requeue': {
        const ms = (outcome as { ms: number }).ms;
        state.failures = 0;
        let delay = ms;
        if (ms === 0) {
          state.requeues += 1;
          this.stats.requeueZero += 1;
          delay = delayOf(REQUEUE_ZERO, state.requeues);
        }
        const deadline = now + delay;
        if (!(state.deadlineKind === 'requeue' && state.deadline !== undefined && state.deadline <= deadline)) {
          state.deadline = deadline;
          state.deadlineKind = 'requeue';
        }
        state.owed = true;
        return;
      }
      case 'throw': {
        this.stats.failures += 1;
        const budget = this.config.budget;
        if (budget !== undefined) {
          if (state.failures > 0 && state.fingerprint !== fingerprint) state.failures = 0;
          state.fingerprint = fingerprint;
        }
        state.failures += 1;
        state.owed = true;
        if (budget !== undefined && state.failures > budget.length) {
          state.parkedAt = fingerprint;
          state.deadline = undefined;
          state.deadlineKind = undefined;
          this.stats.parks += 1;
          return;
        }
        state.deadline =
          now + (budget !== undefined ? budget[state.failures - 1]! : delayOf(this.config.backoff, state.failures));
        state.deadlineKind = 'retry';
        return;
      }
    }
  }

  /**
   * `ctx.expect('pods').creations(pod)` in a reconcile of `key`: nothing to wait for if the cache
   * already holds it. `cached` is what the loop's store held at that moment (a listing due at the
   * same instant may already be in the model's cache and not yet in the loop's).
   */
  expectCreation(key: string, pod: string, now: number, cached: boolean): void {
    if (cached) return;
    this.stats.expectations += 1;
    const state = this.#state(key);
    if (state.expecting === undefined) {
      state.expecting = new Set();
      state.expectingSince = now;
      state.mayHaveDropped = false;
    }
    state.expecting.add(pod);
  }

  // ---- quiescence ----

  /** Keys parked now, sorted. */
  parked(): string[] {
    return [...this.#keys]
      .filter(([, s]) => s.parkedAt !== null)
      .map(([k]) => k)
      .sort();
  }

  /** Keys still owed a reconcile that are not parked (at quiescence: a lost key). */
  owedUnexcused(): string[] {
    return [...this.#keys]
      .filter(([, s]) => s.owed && s.parkedAt === null)
      .map(([k]) => k)
      .sort();
  }

  running(): string[] {
    return [...this.#keys]
      .filter(([, s]) => s.running)
      .map(([k]) => k)
      .sort();
  }

  /**
   * After quiescence (leading, every call settled, the clock past every deadline): every key owed a
   * reconcile ran after its last change and its last call saw the current view, unless it is parked.
   */
  quiescentViolations(): string[] {
    const out: string[] = [];
    for (const key of this.owedUnexcused()) {
      const state = this.#state(key);
      out.push(
        `${key} is owed a reconcile after quiescence (last saw ${JSON.stringify(state.lastView)}, now ${JSON.stringify(this.viewOf(key))})`,
      );
    }
    for (const key of this.running()) out.push(`${key} still running after quiescence`);
    return out;
  }
}
