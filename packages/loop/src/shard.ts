/**
 * Sharded dispatch: the loop's side of a shard gate (`ShardMember` of `@reconcile-loop/sharding`
 * satisfies {@link ShardGate} structurally; the loop imports no Kubernetes package). Every replica
 * may hold every parent in its caches; a reconcile starts only for a parent whose hash the gate
 * admits, and the gate counts it in flight until it settles.
 *
 * The hash of a parent key is `shardHash(uid)` of the parent object (the field Kubernetes' sharded
 * LIST/WATCH filters by, so a replica reconciles exactly what its sharded sources hold). A key whose
 * parent is absent from the primary store (deleted, a reconcile of the cleanup) keeps the hash of the
 * uid last seen under it. A key never seen with a parent has no hash and is dropped, not
 * reconciled: every replica that holds an object of that parent saw its uid, so the replica that
 * owns that uid reconciles it; hashing the name instead would let two replicas (one by name, one by
 * uid) reconcile one key at once. With `shard.field: 'namespace'` the hash is of the parent's
 * namespace (a gone parent's from its key), so every key has one.
 */
import {
  inShardRanges,
  OptionsError,
  shardHash,
  type Clock,
  type Key,
  type Logger,
  type ShardRange,
} from '@reconcile-loop/primitives';
import { describeError, ShardMovedError } from './errors.js';
import type { RangesFollowed, RangesFollower } from './shard-sources.js';

/**
 * What the loop needs from a shard member; `ShardMember` of `@reconcile-loop/sharding` has these
 * members (the match is structural: sharding does not depend on the loop, nor the loop on it).
 */
export interface ShardGate {
  /** This replica's share of its view of the ring: the hashes its sources hold (empty before the first read). */
  readonly ranges: readonly ShardRange[];
  /** Calls `listener` with the new ranges whenever they change; returns the unsubscribe function. */
  onRangesChanged(listener: (ranges: readonly ShardRange[]) => void): () => void;
  /**
   * Whether a reconcile of a key with this hash may start now. Computed from the clock on every
   * call (a replica resumed after a freeze answers false before any of its timers ran).
   */
  admits(hash: string): boolean;
  /**
   * `admits`, and the gate counts the reconcile in flight until the returned release is called
   * (once, when the call settles); `undefined` when not admitted. Called synchronously right before
   * each reconcile, after the leadership check.
   */
  enter(hash: string): (() => void) | undefined;
  /** Optional: calls `listener` when the gate's own Lease is lost; returns the unsubscribe function. */
  onLost?(listener: (reason: unknown) => void): () => void;
  /** Optional: the gate's own report (a `ShardMember`'s `status()`), carried as is in `health().shard.gate`. */
  status?(): unknown;
  /**
   * Optional: whether the gate can do its part now, asked at every `health()`; the loop's readiness
   * has a `shard` check failing with `reason` while `ok` is false (liveness is not affected: a
   * restart does not heal what makes a gate unready, e.g. a Role without `list` on leases). A
   * `ShardMember` implements it: not ok once its reads of the ring have failed for a lease duration.
   */
  ready?(): { readonly ok: boolean; readonly reason?: string | undefined };
}

/** After a refusal of a hash this replica holds (a handover in progress, its Lease not valid): ask again after 1 s. */
export const DEFAULT_SHARD_RETRY_DELAY_MS = 1_000;

/** `health().shard`: what the loop's side of sharding reports. */
export interface ShardHealth {
  /** The gate's ranges now. */
  readonly ranges: readonly ShardRange[];
  /** Parent keys with a known hash in those ranges. */
  readonly keysOwned: number;
  /** Parent keys with a known hash (this replica's and others' it holds in its caches). */
  readonly keysKnown: number;
  /** Admissions the gate refused for a hash this replica holds; each key was asked again after `shard.retryDelayMs`. */
  readonly refused: number;
  /** Keys turned away for good: their hash is outside the ranges, or unknown. */
  readonly dropped: number;
  /** Reconciles aborted because their hash stopped being admitted (the ranges moved, the Lease was lost). */
  readonly aborted: number;
  /** Keys waiting to be asked again. */
  readonly waiting: number;
  /** Sources still relisting after the ranges gained: no gained hash is admitted until this is empty. */
  readonly coldSources: readonly string[];
  /** The gate's `status()` when it has one. */
  readonly gate: unknown;
}

/** @throws {OptionsError} when `gate` lacks a member. */
export function validateShardGate(gate: unknown): void {
  const g = gate as Partial<ShardGate> | null;
  if (g === null || typeof g !== 'object') throw new OptionsError('ReconcileLoop', 'shard.gate must be an object');
  for (const method of ['onRangesChanged', 'admits', 'enter'] as const) {
    if (typeof g[method] !== 'function') throw new OptionsError('ReconcileLoop', `shard.gate.${method} must be a function`);
  }
  if (!Array.isArray(g.ranges)) throw new OptionsError('ReconcileLoop', 'shard.gate.ranges must be an array of ShardRange');
  for (const method of ['onLost', 'status', 'ready'] as const) {
    if (g[method] !== undefined && typeof g[method] !== 'function')
      throw new OptionsError('ReconcileLoop', `shard.gate.${method} must be a function when given`);
  }
}

export interface ShardAdmissionOptions<P extends Key> {
  readonly gate: ShardGate;
  readonly retryDelayMs: number;
  /** The value hashed for `key` now (its parent's uid, or its namespace), if known. */
  readonly valueOf: (key: P) => string | undefined;
  /** Whether any store still holds an object of `key` (its hash is kept while one does). */
  readonly held: (key: P) => boolean;
  /** Queues `key` again (through the offer gate). */
  readonly requeue: (key: P, low: boolean) => void;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What {@link ShardAdmission.enter} gives a key it lets through: the release to call when the call settles. */
export interface ShardEntry {
  readonly hash: string;
  readonly release: () => void;
}

/**
 * The loop's side of a shard gate.
 *
 * Invariants: a key admitted got one `enter` from the gate and its release is called exactly once,
 * when its reconcile call settles (any outcome: success, throw, abort, a timeout's late end); a call
 * in flight whose hash the gate stops admitting (a ranges change, the Lease lost) has its signal
 * aborted with {@link ShardMovedError}. Memory: one 16-character hash per parent key seen with a
 * parent, dropped once no store holds an object of it and nothing is owed (a retry) for it.
 */
export class ShardAdmission<P extends Key> implements RangesFollowed {
  readonly #o: ShardAdmissionOptions<P>;
  readonly #followers: RangesFollower[] = [];
  /** Sources still relisting after a gain: gained hashes are not admitted until none is left. */
  readonly #cold = new Set<RangesFollower>();
  /** While a source is cold: the ranges whose objects every source holds (those before the gain). */
  #warmRanges: readonly ShardRange[];
  readonly #hashes = new Map<P, string>();
  readonly #inFlight = new Map<AbortController, { readonly key: P; readonly hash: string }>();
  readonly #timers = new Map<P, unknown>();
  #ranges: readonly ShardRange[];
  #refused = 0;
  #dropped = 0;
  #aborted = 0;
  #unsubscribe: Array<() => void> = [];

  constructor(options: ShardAdmissionOptions<P>) {
    this.#o = options;
    this.#ranges = Object.freeze([...options.gate.ranges]);
    this.#warmRanges = this.#ranges;
  }

  /** The ranges the sources follow now (the gate's, as of its last change). */
  get ranges(): readonly ShardRange[] {
    return this.#ranges;
  }

  /** A sharded source: told every change; a gain makes it cold until its relist landed. */
  follow(follower: RangesFollower): void {
    this.#followers.push(follower);
    follower.onWarm = () => {
      this.#cold.delete(follower);
      if (this.#cold.size === 0) this.#warmRanges = this.#ranges;
    };
  }

  /** Subscribes to the gate's ranges and Lease until {@link stop}. */
  start(): void {
    const { gate, logger } = this.#o;
    try {
      this.#unsubscribe.push(gate.onRangesChanged((ranges) => this.#rangesChanged(ranges)));
      if (gate.onLost !== undefined) this.#unsubscribe.push(gate.onLost((reason) => this.#abortUnadmitted(reason)));
    } catch (error) {
      logger.error({ err: error }, 'shard.gate subscription threw; in-flight reconciles are aborted only by the loop');
    }
    // Ranges that changed between construction and start.
    if (!sameRanges(gate.ranges, this.#ranges)) this.#rangesChanged(gate.ranges);
  }

  /** Unsubscribes and cancels the pending re-asks (the loop is stopping). */
  stop(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) {
      try {
        unsubscribe();
      } catch (error) {
        this.#o.logger.error({ err: error }, 'shard.gate unsubscribe threw; ignored');
      }
    }
    for (const handle of this.#timers.values()) this.#o.clock.clearTimeout(handle);
    this.#timers.clear();
  }

  /** A source event touched `key`: remember the hash of its parent's value while the parent is cached. */
  observe(key: P): void {
    const value = this.#o.valueOf(key);
    if (value !== undefined) this.#hashes.set(key, shardHash(value));
  }

  /** `key` was released by a reshard (another replica owns it): its hash goes when no store holds it. */
  released(key: P): void {
    if (!this.#o.held(key)) this.#hashes.delete(key);
  }

  /**
   * The synchronous admission right before a reconcile: the gate's `enter` with the key's hash.
   * `undefined` turns the key away: asked again after `retryDelayMs` when its hash is in this
   * replica's ranges (a handover still running, the Lease not valid now), dropped otherwise (another
   * replica's; a listing or a ranges change brings it back when it becomes this one's).
   */
  enter(key: P): ShardEntry | undefined {
    this.observe(key);
    const hash = this.#hashes.get(key);
    if (hash === undefined) {
      this.#drop(key, 'no parent seen for this key: its hash is unknown');
      return undefined;
    }
    // A gained hash waits for every sharded source to relist: its parent and children must be cached first.
    if (this.#cold.size > 0 && !inShardRanges(hash, this.#warmRanges)) {
      this.refused(key, hash);
      return undefined;
    }
    let release: (() => void) | undefined;
    try {
      release = this.#o.gate.enter(hash);
    } catch (error) {
      this.#o.logger.error({ err: error, parentKey: String(key) }, 'shard.gate.enter threw; treated as not admitted');
    }
    if (typeof release !== 'function') {
      this.refused(key, hash);
      return undefined;
    }
    let done = false;
    const gateRelease = release;
    return {
      hash,
      release: () => {
        if (done) return;
        done = true;
        try {
          gateRelease();
        } catch (error) {
          this.#o.logger.error({ err: error, parentKey: String(key) }, 'shard release threw; ignored');
        }
      },
    };
  }

  /** The call of `key` runs under `controller`: aborted when its hash stops being admitted. Returns the untrack. */
  track(key: P, hash: string, controller: AbortController): () => void {
    this.#inFlight.set(controller, { key, hash });
    return () => this.#inFlight.delete(controller);
  }

  /** Not admitted now: asked again later while its hash is in the ranges, else dropped. */
  refused(key: P, hash: string): void {
    if (!inShardRanges(hash, this.#ranges)) {
      this.#drop(key, 'hash outside the ranges of this replica');
      return;
    }
    this.#refused += 1;
    if (this.#timers.has(key)) return;
    const handle = this.#o.clock.setTimeout(() => {
      this.#timers.delete(key);
      this.#o.requeue(key, false);
    }, this.#o.retryDelayMs);
    this.#timers.set(key, handle);
  }

  /**
   * A call of `key` settled with nothing owed for it (`owed`: a retry or requeue pending): when no
   * store holds an object of it either, its hash is forgotten.
   */
  settled(key: P, owed: boolean): void {
    if (!owed && !this.#o.held(key)) this.#hashes.delete(key);
  }

  /**
   * The gate's `ready()` for the `shard` readiness check; `undefined` when the gate has none. A throw
   * or an answer without `ok: true` is not ready.
   */
  ready(): { readonly ok: boolean; readonly reason?: string | undefined } | undefined {
    const gate = this.#o.gate;
    if (gate.ready === undefined) return undefined;
    try {
      const answer = gate.ready();
      const reason = typeof answer?.reason === 'string' ? answer.reason : undefined;
      if (answer?.ok === true) return { ok: true, reason };
      return { ok: false, reason: reason ?? 'shard.gate.ready() answered not ok' };
    } catch (error) {
      return { ok: false, reason: `shard.gate.ready() threw: ${describeError(error)}` };
    }
  }

  health(): ShardHealth {
    let owned = 0;
    for (const hash of this.#hashes.values()) if (inShardRanges(hash, this.#ranges)) owned += 1;
    let gate: unknown;
    try {
      gate = this.#o.gate.status?.();
    } catch (error) {
      gate = undefined;
      this.#o.logger.error({ err: error }, 'shard.gate.status threw; omitted from health');
    }
    return {
      ranges: this.#ranges,
      keysOwned: owned,
      keysKnown: this.#hashes.size,
      refused: this.#refused,
      dropped: this.#dropped,
      aborted: this.#aborted,
      waiting: this.#timers.size,
      coldSources: [...this.#cold].map((f) => f.name),
      gate,
    };
  }

  /**
   * New ranges: in-flight calls whose hash is no longer admitted are aborted, and the keys known
   * here whose hash just came into the ranges are queued at low priority (a replica whose sources
   * are not sharded holds them already; nothing else would re-drive them).
   */
  #rangesChanged(ranges: readonly ShardRange[]): void {
    const before = this.#ranges;
    this.#ranges = Object.freeze([...ranges]);
    this.#abortUnadmitted(new ShardMovedError('the shard ranges changed'));
    const grew = gains(before, this.#ranges);
    if (grew && this.#cold.size === 0) this.#warmRanges = before;
    for (const follower of this.#followers) {
      let relisting = false;
      try {
        relisting = follower.rangesChanged(this.#ranges, grew);
      } catch (error) {
        this.#o.logger.error({ err: error, source: follower.name }, 'a sharded source failed to follow the ranges');
      }
      if (relisting) this.#cold.add(follower);
    }
    if (this.#cold.size === 0) this.#warmRanges = this.#ranges;
    let gained = 0;
    for (const [key, hash] of this.#hashes) {
      if (inShardRanges(hash, this.#ranges) && !inShardRanges(hash, before)) {
        gained += 1;
        this.#o.requeue(key, true);
      }
    }
    this.#o.logger.info({ ranges: this.#ranges.length, gained }, 'shard ranges changed');
  }

  #abortUnadmitted(reason: unknown): void {
    const error =
      reason instanceof ShardMovedError ? reason : new ShardMovedError('the shard gate lost its Lease', { cause: reason });
    for (const [controller, { key, hash }] of this.#inFlight) {
      if (controller.signal.aborted || this.#admits(hash)) continue;
      this.#aborted += 1;
      this.#o.logger.info({ parentKey: String(key) }, 'reconcile aborted: its hash is no longer admitted here');
      controller.abort(error);
    }
  }

  #admits(hash: string): boolean {
    try {
      return this.#o.gate.admits(hash) === true;
    } catch (error) {
      this.#o.logger.error({ err: error }, 'shard.gate.admits threw; treated as not admitted');
      return false;
    }
  }

  #drop(key: P, why: string): void {
    this.#dropped += 1;
    this.#o.logger.debug({ parentKey: String(key), why }, 'not in the shard of this replica: key dropped');
    if (!this.#o.held(key)) this.#hashes.delete(key);
  }
}

/** Whether `after` holds a hash `before` does not: some gap of `before` starts at a bound inside an `after` range. */
export function gains(before: readonly ShardRange[], after: readonly ShardRange[]): boolean {
  const bounds = [...before, ...after].flatMap((r) => [r.start, r.end]);
  for (const range of after) {
    for (const bound of bounds) {
      // A 17-digit bound is the top of the space: never inside a range.
      if (bound.length !== 18 || !inShardRanges(bound.slice(2), [range])) continue;
      if (!inShardRanges(bound.slice(2), before)) return true;
    }
  }
  return false;
}

function sameRanges(a: readonly ShardRange[], b: readonly ShardRange[]): boolean {
  return a.length === b.length && a.every((r, i) => r.start === b[i]!.start && r.end === b[i]!.end);
}
