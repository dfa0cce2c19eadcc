/**
 * The dispatcher: the path from "this parent key needs a reconcile" to a reconcile call — the
 * dead-letter gate in front of the work queue ({@link Gate}), and the workers that take keys off it
 * (each key held by one worker at a time), admit them, build each call's context and hand it to the
 * runner ({@link Workers}).
 */
import { OptionsError } from '@reconcile-loop/primitives';
import type { ObjectKey, ObjectStore } from '@reconcile-loop/object-store';
import type { Logger, Key } from '@reconcile-loop/primitives';
import { createHash } from 'node:crypto';

import { RetrySchedulerKeyError, type Fingerprint, type RetryScheduler } from '@reconcile-loop/retry-scheduler';
import { isQueueStopped, type WorkQueue, type WorkQueuePriority } from '@reconcile-loop/work-queue';
import type { QuarantinedVersion, ReconcileContext } from './context.js';
import type { Expectations } from './expectations.js';
import type { Releases } from './released.js';
import type { Leadership } from './leadership.js';
import { ShardMovedError } from './errors.js';
import type { ShardAdmission, ShardEntry } from './shard.js';
import type { ReconcileRunner } from './runner.js';
import type { Wiring } from './sources.js';

/** Queues a parent key through the gate (see {@link Gate.offer}). */
export type Offer<P extends Key> = (key: P, priority?: WorkQueuePriority) => void;

export interface GateOptions<T, P extends Key> {
  queue: WorkQueue<P>;
  scheduler: RetryScheduler<P>;
  /** The primary store: the parent object a fingerprint is computed from. */
  primary: ObjectStore<T, P>;
  fingerprint: ((parent: T | undefined, parentKey: P) => Fingerprint) | undefined;
  logger: Logger;
}

/**
 * The dead-letter gate in front of the work queue. Needs only the queue, the scheduler and the
 * primary store, so it is built before the parts that offer through it (expectations, debouncers,
 * the sources' drivers, leadership).
 */
export class Gate<T, P extends Key> {
  readonly #o: GateOptions<T, P>;
  readonly #fingerprint: (parent: T | undefined, parentKey: P) => Fingerprint;

  constructor(options: GateOptions<T, P>) {
    this.#o = options;
    this.#fingerprint = options.fingerprint ?? identityFingerprint;
  }

  /**
   * The gate every enqueue path passes except a retry (source events, resync, `enqueue`,
   * expectations that expired): a key parked at the parent's current fingerprint is turned away; a
   * new fingerprint releases it. A fingerprint function that throws or returns a non-primitive is
   * logged and the key is enqueued anyway (nothing is lost). `priority` is the queue's: `low` for
   * listings, resyncs and new terms.
   */
  offer(key: P, priority: WorkQueuePriority = 'normal'): void {
    let admitted = true;
    try {
      // A key with no failures counted and no park is admitted at any fingerprint: skip computing one.
      const { scheduler } = this.#o;
      if (scheduler.failures(key) > 0 || scheduler.isParked(key)) admitted = scheduler.offer(key, this.fingerprintOf(key));
    } catch (error) {
      // A key that is not a primitive fails again in `add`, with the work queue's typed error.
      if (!(error instanceof RetrySchedulerKeyError)) {
        this.#o.logger.error(
          { err: error, parentKey: String(key) },
          'fingerprint unusable; enqueued without the dead-letter gate',
        );
      }
    }
    if (admitted) this.#o.queue.add(key, priority);
  }

  /**
   * Removes every queued key `drop` answers true for (keys held by a worker are left alone);
   * returns how many. The others are queued again in their order and at their priority, each
   * counted as an add again. Only between terms (no worker is taking keys), so nothing is handed
   * out meanwhile.
   */
  dropQueued(drop: (key: P) => boolean): number {
    const { queue } = this.#o;
    if (queue.size === 0) return 0;
    const kept: Array<[P, WorkQueuePriority]> = [];
    let dropped = 0;
    for (;;) {
      // A hand-out that shrank the low depth came from the low priority.
      const low = queue.byPriority().low.depth;
      const key = queue.tryGet();
      if (key === undefined) break;
      if (drop(key)) dropped += 1;
      else kept.push([key, queue.byPriority().low.depth < low ? 'low' : 'normal']);
      this.done(key);
    }
    for (const [key, priority] of kept) queue.add(key, priority);
    return dropped;
  }

  /** Releases a key a worker (or `dropQueued`) held; a throwing queue hook is logged. */
  done(key: P): void {
    try {
      this.#o.queue.done(key);
    } catch (error) {
      this.#o.logger.error({ err: error, parentKey: String(key) }, 'releasing a parent key failed');
    }
  }

  fingerprintOf(key: P): Fingerprint {
    return this.#fingerprint(this.parentObject(key), key);
  }

  /** The primary object cached under the parent key itself (the controller form), if any. */
  parentObject(key: P): T | undefined {
    const own: ObjectKey = String(key);
    const primary = this.#o.primary;
    return primary.parentsOf(own).includes(key) ? primary.get(own) : undefined;
  }
}

/**
 * The full offer: {@link Gate.offer}, after dropping the expectations of a parent gone from the
 * primary store. A parent gone has nothing left to create for: its expectations go now (upstream's
 * delete handler calls DeleteExpectations), not when a worker next dequeues it — a parent re-created
 * under the same name before that would wait out the TTL for the old one's writes. Expectations
 * themselves re-offer through the gate directly: a parent they hand back has no expectations left.
 */
export function offerThrough<T, P extends Key>(
  gate: Gate<T, P>,
  expectations: Expectations<P>,
  primary: ObjectStore<T, P>,
): Offer<P> {
  return (key, priority = 'normal') => {
    if (!primary.hasMembers(key)) expectations.forget(key);
    gate.offer(key, priority);
  };
}

export interface WorkersOptions<T, P extends Key, S> {
  queue: WorkQueue<P>;
  scheduler: RetryScheduler<P>;
  gate: Gate<T, P>;
  runner: ReconcileRunner<T, P, S>;
  wiring: Wiring<T, P, S>;
  logger: Logger;
  /** With a leader gate: workers take keys only inside a term and confirm `isLeader()` before each reconcile. */
  leadership: Leadership | undefined;
  /** Read your writes: a parent whose recorded creates/deletes the caches have not observed is not run. */
  expectations: Expectations<P>;
  /** Parents a sharded source released: turned away, never reconciled as deleted. */
  releases: Releases<T, P>;
  /** With a shard gate: a reconcile starts only for a hash the gate lets `enter`, released when it settles. */
  shard: ShardAdmission<P> | undefined;
}

/** A key a worker holds (from `take` until the queue's `done`), and the term it was taken in. */
interface Taken<P extends Key> {
  readonly key: P;
  readonly term: AbortSignal | undefined;
}

/** What `admit` prepared for a key it lets through: everything the call needs, nothing awaited since. */
interface Admitted<T, P extends Key, S> {
  /** The parent's fingerprint when the call began: a failure is counted at it. */
  readonly fingerprint: Fingerprint;
  readonly controller: AbortController;
  readonly context: ReconcileContext<T, P, S>;
  /** The shard gate's admission, when there is a gate: released when the call settles. */
  readonly shard: ShardEntry | undefined;
}

/**
 * The workers: each repeats take → admit → run until the queue stops (controller-runtime's
 * `processNextWorkItem` and `reconcileHandler`).
 *
 * Invariant: a key taken is released (`done`) exactly once — by `run` when the reconcile call
 * itself settles (after a timeout too, so a retry of a hung call waits as a dirty key instead of
 * overlapping it), or by `work` when it was not handed over (not admitted, or a throw before).
 */
export class Workers<T, P extends Key, S> {
  readonly #o: WorkersOptions<T, P, S>;

  constructor(options: WorkersOptions<T, P, S>) {
    this.#o = options;
  }

  /** One worker: runs until the queue stops or `signal` aborts. Never rejects. */
  async work(signal: AbortSignal): Promise<void> {
    for (;;) {
      const taken = await this.#take(signal);
      if (taken === undefined) return;
      let handedOver = false;
      try {
        const admitted = this.#admit(taken);
        if (admitted === undefined) continue;
        handedOver = true;
        await this.#run(taken, admitted, signal);
      } catch (error) {
        // Only a throwing logger gets here; the worker must outlive it.
        try {
          this.#o.logger.error({ err: error, parentKey: String(taken.key) }, 'worker error; continuing');
        } catch {
          // nothing left to report to
        }
      } finally {
        if (!handedOver) this.#o.gate.done(taken.key);
      }
    }
  }

  /**
   * Take: the next key no other worker holds, inside a leadership term when there is a gate (a
   * standby takes no key: they wait in the queue, deduplicated, for a term). `undefined` once the
   * queue stops or the loop's signal aborts.
   */
  async #take(signal: AbortSignal): Promise<Taken<P> | undefined> {
    const { queue, leadership } = this.#o;
    try {
      const term = leadership === undefined ? undefined : await leadership.term(signal);
      return { key: await queue.get(signal), term };
    } catch (error) {
      if (!signal.aborted && !isQueueStopped(error)) this.#o.logger.error({ err: error }, 'work queue failed; worker exiting');
      return undefined;
    }
  }

  /**
   * Admit: whether the held key runs now, in this order — a release by a reshard, a park that still holds, unobserved
   * writes (expectations), the leadership check, then the shard gate's `enter`; `undefined` turns it
   * away (released by `work`). Synchronous, and nothing awaits between these checks and the
   * reconcile call, so a replica that stopped leading or owning the hash (frozen past its deadline,
   * onLost not yet run) starts none. The shard gate is asked last: its `enter` counts the call in
   * flight, so nothing that can still turn the key away may follow it. The context is built after
   * it: building one opens the expectations log, which only the settle of a call handed over
   * closes, so no refusal path has a context to discard.
   */
  #admit({ key, term }: Taken<P>): Admitted<T, P, S> | undefined {
    const { scheduler, leadership, queue, releases, shard } = this.#o;
    // Released by a reshard while queued, retried or debounced: another replica owns it now.
    if (releases.turnAway(key)) return undefined;
    // Parked while it waited as a dirty re-add: run it only if its fingerprint moved on.
    if (scheduler.isParked(key) && !scheduler.offer(key, this.#fingerprint(key))) return undefined;
    if (this.#awaitsWrites(key)) return undefined;
    const fingerprint = this.#fingerprint(key);
    if (term !== undefined && !leadership!.confirm(term)) {
      queue.add(key); // held: marked dirty, so the release in `work` puts it back; nothing is lost
      return undefined;
    }
    // Refused: asked again after a delay while the hash is this replica's, else dropped (ShardAdmission).
    const entry = shard?.enter(key);
    if (shard !== undefined && entry === undefined) return undefined;
    // Admitted: nothing below refuses. A throw while building the context (a user fingerprint or
    // store callback) hands nothing over, so the gate's count is released here.
    const controller = new AbortController();
    try {
      return { fingerprint, controller, context: this.#contextFor(key, controller.signal), shard: entry };
    } catch (error) {
      entry?.release();
      throw error;
    }
  }

  /**
   * Its own writes not yet in the cache: running now could act on a stale view (a second create).
   * Deferred, not lost: satisfaction or the TTL re-offers it. A parent gone from the primary store
   * has nothing left to create for: its expectations are dropped (upstream's DeleteExpectations).
   */
  #awaitsWrites(key: P): boolean {
    const { expectations, wiring, logger } = this.#o;
    if (expectations.satisfied(key)) return false;
    if (!wiring.primary.hasMembers(key)) {
      expectations.forget(key);
      return false;
    }
    logger.debug({ parentKey: String(key) }, 'expectations unsatisfied; reconcile deferred until the cache observes its writes');
    return true;
  }

  /** The parent's fingerprint now, as the scheduler accepts it. */
  #fingerprint(key: P): Fingerprint {
    return safeFingerprint(() => this.#o.gate.fingerprintOf(key));
  }

  /**
   * Run: hands the call to the runner (timeout and outcome booking are its), aborted by the loop's
   * stop or the term's end; the key is released once the call has settled and its outcome is
   * booked, and then a released parent it was the last copy of is let go (`Releases.settled`).
   * Returns the runner's promise as it is (no async wrapper: one promise fewer per reconcile).
   */
  #run(
    { key, term }: Taken<P>,
    { fingerprint, controller, context, shard: entry }: Admitted<T, P, S>,
    signal: AbortSignal,
  ): Promise<void> {
    const { leadership, gate, releases } = this.#o;
    const onStop = (): void => controller.abort(signal.reason);
    const onTermEnd = (): void => controller.abort(term!.reason);
    signal.addEventListener('abort', onStop, { once: true });
    term?.addEventListener('abort', onTermEnd, { once: true });
    let settled!: () => void;
    if (term !== undefined) leadership!.track(new Promise<void>((resolve) => (settled = resolve)));
    const sharded = entry === undefined ? undefined : this.#shardTracking(key, entry, controller);
    const running = this.#o.runner.run(key, context, controller, fingerprint, () => {
      signal.removeEventListener('abort', onStop);
      term?.removeEventListener('abort', onTermEnd);
      sharded?.settled();
      gate.done(key);
      this.#o.expectations.close(); // opened by #contextFor
      settled?.();
      releases.settled(key);
    });
    return sharded === undefined ? running : running.finally(sharded.booked);
  }

  /**
   * A sharded call: aborted when its hash stops being admitted; its release called once, when the
   * runner lets the key go (the call settled and its outcome booked: every path, success, throw,
   * abort, a timed-out call's late end). Once that AND the runner's promise resolved (booked: at
   * the settle, or at the timeout), a call aborted by a shard move is asked again or dropped, and
   * the hash of a gone parent with no retry owed is forgotten.
   */
  #shardTracking(key: P, entry: ShardEntry, controller: AbortController): { settled: () => void; booked: () => void } {
    const { scheduler } = this.#o;
    const shard = this.#o.shard!;
    const untrack = shard.track(key, entry.hash, controller);
    let pending = 2;
    const booked = (): void => {
      if (--pending > 0) return;
      if (controller.signal.reason instanceof ShardMovedError) shard.refused(key, entry.hash);
      else shard.settled(key, scheduler.failures(key) > 0 || scheduler.deadline(key) !== undefined);
    };
    const settled = (): void => {
      untrack();
      entry.release();
      booked();
    };
    return { settled, booked };
  }

  /**
   * The quarantined versions among this call's objects: the primary source's entries under the parent
   * key or a member's key, each secondary's under an owned key. Sources are wired primary first, then
   * the secondaries in `secondary`'s order; a source without a quarantine costs one read of its own health.
   */
  #quarantinedFor(
    key: P,
    members: ReadonlyMap<ObjectKey, T>,
    owned: ReadonlyMap<string, ReadonlyMap<ObjectKey, unknown>>,
  ): readonly QuarantinedVersion[] {
    const { sources } = this.#o.wiring;
    const found: QuarantinedVersion[] = [];
    const names = [...owned.keys()];
    for (const [index, wired] of sources.entries()) {
      const held = wired.driver.quarantined();
      if (held.length === 0) continue;
      const secondary = index === 0 ? undefined : names[index - 1];
      const keys = secondary === undefined ? members : owned.get(secondary);
      for (const entry of held) {
        const mine =
          secondary === undefined ? entry.key === String(key) || members.has(entry.key) : keys?.has(entry.key) === true;
        if (mine) found.push({ ...entry, source: secondary ?? wired.name });
      }
    }
    return Object.freeze(found);
  }

  /**
   * Snapshots taken now, before the call: the parent's members and its owned objects in every
   * secondary store. Opens the expectations log last (nothing after it throws), closed by the call's settle.
   */
  #contextFor(key: P, signal: AbortSignal): ReconcileContext<T, P, S> {
    const { wiring, expectations } = this.#o;
    const owned = new Map<string, ReadonlyMap<ObjectKey, unknown>>();
    for (const [name, store] of wiring.secondaries) owned.set(name, store.members(key));
    const members = wiring.primary.members(key);
    const quarantined = this.#quarantinedFor(key, members, owned);
    const parent = this.#o.gate.parentObject(key);
    // Synchronous from here to the call: no event is logged between the snapshots and `since`.
    const since = expectations.open();
    return Object.freeze({
      parentKey: key,
      members,
      quarantined,
      parent,
      owned: <K extends keyof S & string>(name: K) => {
        const snapshot = owned.get(name);
        if (snapshot === undefined)
          throw new OptionsError('ReconcileLoop', `ctx.owned("${name}"): no secondary source of that name`);
        return snapshot as ReadonlyMap<ObjectKey, S[K]>;
      },
      store: wiring.primary.reader,
      stores: wiring.readers,
      expect: (name: string) => expectations.recorder(key, name, since),
      signal,
    });
  }
}

/**
 * The default fingerprint a parked key is compared on: the parent's identity plus its spec.
 * - With `metadata.generation`: `uid:generation` (just the generation for an object without a uid,
 *   as in-process test objects are). A spec change moves the generation; a delete + re-create under
 *   the same name comes back at generation 1 with a new uid, so either releases the key, and a
 *   status-only write (same generation) does not.
 * - Without it (ConfigMap, Secret, Service): `uid#` plus a SHA-256 of every top-level field but
 *   `metadata` and `status` (keys sorted). Not the resourceVersion, which every write moves — a
 *   failing reconcile that records its failure in `status` would release its own park. A change of
 *   data or spec releases; a status write, a label or an annotation does not.
 * - No parent (deleted, or not cached): `undefined`, which differs from any fingerprint of a live
 *   object, so a parked parent's deletion reaches reconcile.
 */
export function identityFingerprint(parent: unknown): Fingerprint {
  if (parent === null || typeof parent !== 'object') return undefined;
  const metadata = (parent as { metadata?: { uid?: unknown; generation?: unknown } | null }).metadata;
  const uid = typeof metadata?.uid === 'string' ? metadata.uid : undefined;
  const generation = metadata?.generation;
  if (typeof generation === 'number' || typeof generation === 'string' || typeof generation === 'bigint') {
    return uid === undefined ? generation : `${uid}:${String(generation)}`;
  }
  const hash = createHash('sha256');
  for (const field of Object.keys(parent).sort()) {
    if (field === 'metadata' || field === 'status') continue;
    hash
      .update(JSON.stringify(field))
      .update(':')
      .update(canonicalJson((parent as Record<string, unknown>)[field]))
      .update(',');
  }
  return `${uid ?? ''}#${hash.digest('base64url')}`;
}

/** JSON with object keys sorted at every depth (a bigint as its decimal string), so equal content hashes equally. */
function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return JSON.stringify(String(value));
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** A fingerprint the scheduler accepts: a throw or a non-primitive becomes `undefined`. */
function safeFingerprint(compute: () => Fingerprint): Fingerprint {
  try {
    const value: unknown = compute();
    const type = typeof value;
    return value === null || type === 'string' || type === 'number' || type === 'bigint' || type === 'boolean'
      ? (value as Fingerprint)
      : undefined;
  } catch {
    return undefined;
  }
}
