import {
  isKubeApiError,
  type KubeClient,
  type KubeObject,
  type RateLimiter,
  type RateLimitOptions,
  type ResourceClient,
} from '@reconcile-loop/kube-client';
import {
  LeaderElector,
  LeaseLock,
  LeaseObservation,
  type LeaderElectionRecord,
  type LockCallOptions,
  type ResourceLock,
} from '@reconcile-loop/leader-election';
import {
  FailureStreak,
  OptionsError,
  sleep,
  systemClock,
  type Clock,
  type Logger,
  type ShardRange,
  type TimerOptions,
} from '@reconcile-loop/primitives';
import { CLAIM_ANNOTATION, checkRingName, claimOf, memberLeaseName, parseClaim, RING_LABEL, type Claim } from './claim.js';
import type { HandoverWait, ShardObserver } from './observer.js';
import { DEFAULT_VIRTUAL_NODES, rangesMinus, rangesOverlap, rangesShare } from './ring.js';

const KEEP_ALIVE: TimerOptions = Object.freeze({ keepAlive: true });
const LEASES = Object.freeze({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' });

/** How to build a {@link ShardMember}. Durations in milliseconds, on `clock`. */
export interface ShardMemberOptions {
  readonly client: KubeClient;
  /** Where the member Leases live. */
  readonly namespace: string;
  /** The ring's name: the label value of its member Leases and their name prefix (a DNS-1123 label, ≤ 40). */
  readonly ring: string;
  /** Unique per process instance, e.g. `${hostname}_${randomUUID()}` (a restarted process must not reuse it). */
  readonly identity: string;
  /** Points per member on the ring; every member of a ring must use the same. Default 32. */
  readonly virtualNodes?: number | undefined;
  /** The member Lease's duration: others drop this member after seeing its Lease unchanged this long. Default 15 000 (client-go). */
  readonly leaseDurationMs?: number | undefined;
  /** This member admits nothing once its last successful renewal was sent this long ago. Default 10 000. */
  readonly renewDeadlineMs?: number | undefined;
  /** Between renewals (each also publishes the claim) and between reads of the ring. Default 2 000. */
  readonly retryPeriodMs?: number | undefined;
  /**
   * Start-up: the member reports no ranges (its sources list nothing) and admits nothing until its
   * reads of the ring have shown the same members for this long, measured between the sends of the
   * first and a later read. Default: the retry period (one renew interval; at least two reads agree),
   * or the lease duration when `expectedMembers` is given (then it only covers a replica that never
   * starts). `0`: the first read settles. Once settled, later ring changes pass through at once.
   */
  readonly settleMs?: number | undefined;
  /**
   * Start-up: settle as soon as a read shows at least this many members (the Deployment's
   * `replicas`), without waiting for `settleMs`; `settleMs` still settles a ring that never reaches
   * it (a replica that does not start). Default: none (only `settleMs`).
   */
  readonly expectedMembers?: number | undefined;
  /** The Lease traffic's limiter, as `LeaseLock`'s option: default a lane of its own. */
  readonly rateLimit?: RateLimitOptions | RateLimiter | false | 'shared' | undefined;
  /** Monotonic time for every decision and wait. Default `systemClock`. */
  readonly clock?: Clock | undefined;
  /** Wall time for the Lease's `MicroTime`s. Default `Date.now`. */
  readonly wallClock?: (() => number) | undefined;
  readonly random?: (() => number) | undefined;
  readonly logger?: Logger | undefined;
  /** Ranges, handovers and acknowledgements as they happen (the metrics package implements it). */
  readonly observer?: ShardObserver | undefined;
}

/** What this member knows of another member's Lease. */
interface Peer {
  readonly identity: string;
  readonly observation: LeaseObservation;
  /** Its published claim; `'unreadable'` blocks every hash. */
  claim: Claim | 'unreadable' | undefined;
  /** Not expired by this member's clock at the start of the read that last returned it. */
  live: boolean;
}

/** The last completed read of the ring. */
interface RingRead {
  /** When the LIST was sent, on this member's clock. */
  readonly startedAt: number;
  /**
   * Every claim of this member that may have been visible on its Lease at some instant since
   * `startedAt` (the confirmed one at the start, and every one written since). A hash is admitted
   * only when it is this member's in all of them: it was then claimed without a gap since before
   * the read, so any member that claimed it later must have seen this claim (see the README).
   */
  readonly claims: Map<string, Claim>;
}

interface PendingHandover {
  /** The view change, or earlier: when this member last saw the Lease of a member that then expired change. */
  since: number;
  gained: ShardRange[];
  readonly waitedFor: Set<HandoverWait>;
  /** Members that left the view by Lease expiry (by this member's clock) in the changes it covers. */
  readonly expired: Set<string>;
}

/**
 * One replica's membership in a ring of Leases, and the admission gate of the handover protocol.
 *
 * The member holds its own Lease through a `LeaderElector` (the elector's timing rules, renewals,
 * renew deadline and release), publishes in that Lease, on every renewal, its claim (the ring it
 * acknowledged), and lists the ring's Leases every retry period. Its view of the ring is itself
 * plus every member whose Lease it has not seen expire by its own clock; {@link ShardMember.ranges}
 * is its share of that view (what its sources should watch).
 *
 * Invariant (never two admitters, see the README for the proof and its timing assumptions):
 * {@link ShardMember.admits} is true for a hash only when (1) this member's own Lease is valid by
 * the elector's renew deadline, (2) a read of the ring started after its current term began,
 * (3) it owns the hash in its view, (4) it owns the hash in every claim it may have published since
 * that read started, and (5) no member whose Lease was live in that read claims the hash. Besides,
 * nothing is admitted and no ranges are reported before the start-up membership settled
 * (`settleMs`, `expectedMembers`): a stricter gate, never a looser one.
 */
export class ShardMember {
  readonly identity: string;
  readonly ring: string;
  readonly virtualNodes: number;
  readonly #elector: LeaderElector;
  readonly #leases: ResourceClient<KubeObject>;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #observer: ShardObserver | undefined;
  readonly #retryPeriodMs: number;
  readonly #readTimeoutMs: number;
  readonly #leaseDurationMs: number;
  readonly #settleMs: number;
  readonly #expectedMembers: number | undefined;
  /**
   * Whether the start-up membership has settled. Invariant: until it has, {@link ShardMember.ranges}
   * is empty, no range listener or `onRanges` is called and no hash is admitted, so the loop's
   * sharded sources open nothing: a member that read the ring before the others' Leases appeared
   * (it alone owns everything in its view) lists nothing it would drop a read later. Never unset.
   */
  #settled = false;
  /** Before settling: the members of the reads since `since` (the send of the first read that showed them). */
  #settling: { readonly members: string; readonly since: number } | undefined;

  #running = false;
  #stopping = false;
  #termStartedAt: number | undefined;
  #peers = new Map<string, Peer>();
  #view: Claim;
  #viewBefore: readonly string[] = [];
  #lastRead: RingRead | undefined;
  /** Claims written while a read is in flight: they join its `claims` when it completes. */
  #reading: Map<string, Claim> | undefined;
  /** The claim last confirmed written (the empty ring until the first write). */
  #confirmed: Claim;
  /** Claims that may be on the Lease now: the confirmed one and every write not known to have failed cleanly. */
  #possible = new Map<string, Claim>();
  /** The claim being written, read by the Lease lock's annotations at the moment of the write. */
  #writing: Claim | undefined;
  readonly #inFlight = new Map<string, number>();
  readonly #drainWaiters = new Set<() => void>();
  readonly #rangeListeners = new Set<(ranges: readonly ShardRange[]) => void>();
  #handover: PendingHandover | undefined;
  #wake: AbortController | undefined;
  /** A term began while a read was in flight: that read started too early to count, so read again at once. */
  #readAgain = false;
  /**
   * Ring reads failed since the last successful one (an aborted read, at a stop, is not counted):
   * how many, when the first of them was sent (this member's clock), the last error; logged once per
   * outage (a read fails every retry period, so a warn per read was thousands of lines an hour).
   * Reset by a successful read.
   */
  readonly #ringReads: FailureStreak;

  constructor(options: ShardMemberOptions) {
    if (options === null || typeof options !== 'object') throw new OptionsError('ShardMember', 'options are required');
    if (options.client === undefined) throw new OptionsError('ShardMember', 'a ShardMember needs a KubeClient');
    if (typeof options.namespace !== 'string' || options.namespace === '')
      throw new OptionsError('ShardMember', 'namespace must be a non-empty string');
    if (typeof options.identity !== 'string' || options.identity === '')
      throw new OptionsError('ShardMember', 'identity must be a non-empty string');
    this.ring = checkRingName(options.ring);
    this.identity = options.identity;
    this.virtualNodes = options.virtualNodes ?? DEFAULT_VIRTUAL_NODES;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
    this.#ringReads = new FailureStreak({
      logger: options.logger,
      clock: this.#clock,
      failure: 'failed to read the ring; keeping the last view',
      recovery: 'the ring can be read again',
      level: ringReadLevel,
      signature: ringReadKind,
    });
    this.#observer = options.observer;
    // Nothing until the first read: the member does not know the ring yet.
    this.#view = claimOf([], this.virtualNodes);
    this.#confirmed = claimOf([], this.virtualNodes);
    this.#possible.set(this.#confirmed.text, this.#confirmed);
    const inner = new LeaseLock({
      client: options.client,
      namespace: options.namespace,
      name: memberLeaseName(this.ring, this.identity),
      identity: this.identity,
      rateLimit: options.rateLimit,
      labels: { [RING_LABEL]: this.ring },
      annotations: () => ({ [CLAIM_ANNOTATION]: (this.#writing ?? this.#confirmed).text }),
    });
    this.#elector = new LeaderElector({
      lock: this.#claimingLock(inner),
      leaseDurationMs: options.leaseDurationMs,
      renewDeadlineMs: options.renewDeadlineMs,
      retryPeriodMs: options.retryPeriodMs,
      clock: this.#clock,
      wallClock: options.wallClock,
      random: options.random,
      logger: options.logger,
      // A graceful stop writes the Lease with no holder once every admitted reconcile finished:
      // the others drop this member at their next read instead of a lease duration later.
      releaseOnCancel: true,
      onStartedLeading: (signal) => this.#startTerm(signal),
      onStoppedLeading: () => this.#endTerm(),
    });
    this.#retryPeriodMs = this.#elector.timings.retryPeriodMs;
    this.#readTimeoutMs = this.#elector.timings.renewDeadlineMs;
    this.#leaseDurationMs = this.#elector.timings.leaseDurationMs;
    const expected = options.expectedMembers;
    if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 1))
      throw new OptionsError('ShardMember', `expectedMembers must be an integer >= 1, got ${String(expected)}`);
    this.#expectedMembers = expected;
    // With expectedMembers the window is only the fallback for a replica that never starts, so it is
    // as long as a silent member takes to expire (the lease duration): a rollout starts its pods
    // seconds apart, and one retry period settled on a partial ring that listed more than its share
    // (the sharding benchmark under load: 25 MB received by one of 4 replicas against ~7 MB).
    const settleMs = options.settleMs ?? (expected === undefined ? this.#retryPeriodMs : this.#elector.timings.leaseDurationMs);
    if (typeof settleMs !== 'number' || !Number.isFinite(settleMs) || settleMs < 0)
      throw new OptionsError('ShardMember', `settleMs must be a finite number >= 0, got ${String(options.settleMs)}`);
    this.#settleMs = settleMs;
    const client = options.rateLimit === 'shared' ? options.client : options.client.withLane('sharding', options.rateLimit);
    this.#leases = client.resource(LEASES).inNamespace(options.namespace);
  }

  /** The elector's timings after defaults (client-go's rules). */
  get timings(): LeaderElector['timings'] {
    return this.#elector.timings;
  }

  /** The members of this member's view of the ring, sorted (itself included). */
  get members(): readonly string[] {
    return this.#view.ring.members;
  }

  /**
   * This member's share of its view: what its sources should list and watch (`shardSelector`'s
   * ranges). It can differ from what it admits: a gained range is watched at once, so its cache is
   * warm when the previous owner lets go; a lost one stops being admitted at once. Empty until the
   * start-up membership settled (`settleMs`, `expectedMembers`).
   */
  get ranges(): readonly ShardRange[] {
    return this.#settled ? this.#viewRanges() : [];
  }

  /** This member's share of its view, settled or not (what the handover bookkeeping follows). */
  #viewRanges(): readonly ShardRange[] {
    return this.#view.ring.rangesOf(this.identity);
  }

  /** Calls `listener` with the new {@link ShardMember.ranges} whenever they change; returns the unsubscribe. */
  onRangesChanged(listener: (ranges: readonly ShardRange[]) => void): () => void {
    this.#rangeListeners.add(listener);
    return () => this.#rangeListeners.delete(listener);
  }

  /**
   * Calls `listener` each time this member's own Lease is lost (its elector's `onLost`: renewals
   * failed past the renew deadline, a freeze past it); returns the unsubscribe function. The loop
   * aborts its in-flight reconciles then (`admits` is already false for every hash).
   */
  onLost(listener: (reason: unknown) => void): () => void {
    return this.#elector.onLost(listener);
  }

  /**
   * Whether a reconcile of a key with this hash (`shardHash` of the field the ring shards by) may
   * start now. Computed from the clock and the last read on every call, so a member resumed after a
   * freeze answers false on its first call. A caller that acts on `true` must use
   * {@link ShardMember.enter} instead, so the member knows the reconcile is in flight.
   */
  admits(hash: string): boolean {
    return this.#blocker(hash) === undefined;
  }

  /**
   * Admits a reconcile of `hash` when {@link ShardMember.admits} would, and returns the function to
   * call once it finished (idempotent); `undefined` when not admitted (put the key back, try later).
   * The member publishes a ring that takes a hash away from it only once every admitted reconcile
   * of such a hash has called its release: that is the "in-flight reconciles finished" of the handover.
   */
  enter(hash: string): (() => void) | undefined {
    if (this.#blocker(hash) !== undefined) return undefined;
    this.#inFlight.set(hash, (this.#inFlight.get(hash) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = (this.#inFlight.get(hash) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(hash, n);
      else this.#inFlight.delete(hash);
      if (this.#inFlight.size === 0) for (const resolve of [...this.#drainWaiters]) resolve();
    };
  }

  /** What this member knows, for `health()` and logs. */
  status(): {
    readonly identity: string;
    readonly holdsLease: boolean;
    /** Whether the start-up membership settled (before it: no ranges, nothing admitted). */
    readonly settled: boolean;
    readonly members: readonly string[];
    readonly ranges: readonly ShardRange[];
    readonly share: number;
    readonly acknowledged: readonly string[];
    readonly inFlight: number;
    readonly handover: { readonly sinceMs: number; readonly waitingFor: readonly HandoverWait[] } | undefined;
    /**
     * The reads of the ring since the last successful one: failures in a row, ms since the first of
     * them was sent, the last one's message (e.g. the apiserver's 403); `0`, `undefined`,
     * `undefined` after a successful read (or none yet).
     */
    readonly ringRead: {
      readonly consecutiveFailures: number;
      readonly failingForMs: number | undefined;
      readonly lastError: string | undefined;
    };
  } {
    const handover = this.#handover;
    const reads = this.#ringReads;
    return {
      identity: this.identity,
      holdsLease: this.#elector.isLeader(),
      settled: this.#settled,
      members: this.members,
      ranges: this.ranges,
      share: rangesShare(this.ranges),
      acknowledged: this.#confirmed.ring.members,
      inFlight: [...this.#inFlight.values()].reduce((a, b) => a + b, 0),
      handover: handover && { sinceMs: this.#clock.now() - handover.since, waitingFor: [...this.#waitsNow()] },
      ringRead: {
        consecutiveFailures: reads.failures,
        failingForMs: reads.since === undefined ? undefined : this.#clock.now() - reads.since,
        lastError: reads.failures === 0 ? undefined : errorMessage(reads.lastError),
      },
    };
  }

  /**
   * Readiness (the loop's `shard` readiness check): not ok while the reads of the ring have failed
   * without a break for at least the lease duration (15 s by default), measured from the send of
   * the first failed read; the reason names that duration, the failure count and the last error
   * (e.g. the apiserver's 403 when the Role lacks `list` on leases). The threshold is the lease
   * duration because past it this member's view is older than any peer's Lease: a member that
   * joined since is missing from it and one that left may have expired, so the share it computes,
   * and what its sources list, may be wrong; below it, a read or two failing is a blip the next
   * retry period heals. One successful read makes it ready again. A member that has not settled
   * yet, or not read yet, with no failure is ready: like a starting source, the loop's sources
   * already gate start-up.
   */
  ready(): { readonly ok: boolean; readonly reason?: string | undefined } {
    const reads = this.#ringReads;
    if (reads.since === undefined) return { ok: true };
    const failingMs = this.#clock.now() - reads.since;
    const ok = failingMs < this.#leaseDurationMs;
    const reason =
      `reads of ring ${this.ring} failing for ${Math.round(failingMs / 1000)} s (${reads.failures} failures)` +
      `${ok ? `, under the lease duration (${Math.round(this.#leaseDurationMs / 1000)} s)` : ''}: ${errorMessage(reads.lastError)}`;
    return { ok, reason };
  }

  /** The elector's health rule on the member Lease (client-go's `HealthzAdaptor`). */
  check(toleranceMs?: number): { readonly healthy: boolean; readonly reason?: string | undefined } {
    return this.#elector.check(toleranceMs);
  }

  /**
   * Holds the member Lease and reads the ring until `signal` aborts. On a graceful stop the member
   * admits nothing more, waits (up to the renew deadline) for the admitted reconciles to release,
   * then releases its Lease. Never rejects for an apiserver failure (each is logged and retried).
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new OptionsError('ShardMember', 'this ShardMember is already running');
    this.#running = true;
    this.#stopping = signal.aborted;
    const onAbort = (): void => {
      this.#stopping = true;
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.all([this.#elector.run(signal), this.#readLoop(signal)]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#running = false;
    }
  }

  async #readLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.#read(signal);
      if (this.#readAgain) {
        this.#readAgain = false;
        continue;
      }
      const wake = new AbortController();
      this.#wake = wake;
      try {
        await sleep(this.#clock, this.#retryPeriodMs, { signal: AbortSignal.any([signal, wake.signal]), ...KEEP_ALIVE });
      } catch {
        // woken early (a new term wants a fresh read) or stopped: the loop condition decides
      }
      this.#wake = undefined;
    }
  }

  /** One LIST of the ring's Leases: peers, their expiry by this member's clock, their claims. */
  async #read(signal: AbortSignal): Promise<void> {
    const startedAt = this.#clock.now();
    const claims = new Map(this.#possible);
    this.#reading = claims;
    let items: KubeObject[];
    try {
      items = (await this.#leases.list({ labelSelector: `${RING_LABEL}=${this.ring}`, signal, timeoutMs: this.#readTimeoutMs }))
        .items;
    } catch (error) {
      if (!signal.aborted) this.#ringReads.failed(error, { ring: this.ring }, { sentAt: startedAt });
      return;
    } finally {
      if (this.#reading === claims) this.#reading = undefined;
    }
    this.#ringReads.succeeded({ ring: this.ring });
    const now = this.#clock.now();
    const peers = new Map<string, Peer>();
    for (const lease of items) {
      const record = LeaseObservation.parse(lease['spec']);
      const holder = record.holderIdentity;
      // A released Lease (no holder) is a member that drained and left; this member's own is itself.
      if (holder === '' || holder === this.identity) continue;
      const peer = this.#peers.get(holder) ?? {
        identity: holder,
        observation: new LeaseObservation(),
        claim: undefined,
        live: true,
      };
      peer.observation.update(record, now);
      peer.claim = parseClaim(lease.metadata?.annotations);
      // Expired only when a read SENT a lease duration after this member saw the record change still
      // returned it unchanged: a stale view never expires anyone (see the README).
      peer.live = peer.observation.validAt(startedAt);
      peers.set(holder, peer);
    }
    this.#peers = peers;
    this.#lastRead = { startedAt, claims };
    this.#setView(
      claimOf([this.identity, ...[...peers.values()].filter((p) => p.live).map((p) => p.identity)], this.virtualNodes),
    );
    this.#settle(startedAt);
    this.#checkHandover();
  }

  /**
   * Start-up: settles once the reads have shown the same members for `settleMs` (between the sends
   * of the first and this read), or at least `expectedMembers`; then reports the ranges to the
   * listeners for the first time. Replicas started together appear on the ring one after another; a
   * member that listed at its first read would list the whole kind (alone in its view) and drop
   * most of it at the next. The cost is start-up latency: at least `settleMs` before any listing.
   */
  #settle(readStartedAt: number): void {
    if (this.#settled) return;
    const members = this.#view.ring.members;
    const text = members.join('\n');
    if (this.#settling?.members !== text) this.#settling = { members: text, since: readStartedAt };
    const stable = readStartedAt - this.#settling.since >= this.#settleMs;
    const expected = this.#expectedMembers !== undefined && members.length >= this.#expectedMembers;
    if (!stable && !expected) return;
    this.#settled = true;
    this.#settling = undefined;
    this.#logger?.info({ ring: this.ring, identity: this.identity, members }, "the ring settled; listing this member's ranges");
    this.#publishRanges();
  }

  /** Tells the observer and the listeners the ranges now (settled only). */
  #publishRanges(): void {
    const after = this.ranges;
    const members = this.#view.ring.members;
    this.#guard(() => this.#observer?.onRanges?.({ identity: this.identity, members, ranges: after, share: rangesShare(after) }));
    for (const listener of [...this.#rangeListeners]) this.#guard(() => listener(after));
  }

  #setView(view: Claim): void {
    if (view.text === this.#view.text) return;
    const before = this.#viewRanges();
    this.#view = view;
    const after = this.#viewRanges();
    this.#logger?.info({ ring: this.ring, identity: this.identity, members: view.ring.members }, 'the ring changed');
    const gained = rangesMinus(after, before);
    if (gained.length > 0) {
      const handover = (this.#handover ??= { since: this.#clock.now(), gained: [], waitedFor: new Set(), expired: new Set() });
      handover.gained = [...handover.gained, ...gained];
      for (const id of this.#viewBefore) {
        const peer = this.#peers.get(id);
        if (view.ring.members.includes(id) || peer === undefined || peer.live) continue;
        handover.expired.add(id);
        handover.since = Math.min(handover.since, peer.observation.observedAt);
      }
    }
    this.#viewBefore = view.ring.members;
    // Before the start-up settled nobody is told: the ranges stay empty (see #settled).
    if (this.#settled) this.#publishRanges();
  }

  /** Why `hash` is not admitted now, or `undefined` when it is. */
  #blocker(hash: string): HandoverWait | 'not-owner' | 'stopped' | undefined {
    if (!this.#running || this.#stopping) return 'stopped';
    if (!this.#elector.isLeader() || this.#termStartedAt === undefined) return 'lease';
    const read = this.#lastRead;
    if (read === undefined || read.startedAt <= this.#termStartedAt) return 'ring-read';
    // Nothing is admitted outside `ranges`, which are empty until the start-up settled.
    if (!this.#settled) return 'settling';
    if (this.#view.ring.ownerOf(hash) !== this.identity) return 'not-owner';
    for (const claim of read.claims.values()) if (claim.ring.ownerOf(hash) !== this.identity) return 'own-claim';
    for (const peer of this.#peers.values()) {
      if (!peer.live || peer.claim === undefined) continue;
      if (peer.claim === 'unreadable' || peer.claim.ring.ownerOf(hash) === peer.identity) return 'peer-claim';
    }
    return undefined;
  }

  /** What blocks the pending handover as a whole now (empty: done). */
  #waitsNow(): Set<HandoverWait> {
    const waits = new Set<HandoverWait>();
    if (!this.#elector.isLeader() || this.#termStartedAt === undefined) waits.add('lease');
    const read = this.#lastRead;
    if (read === undefined || this.#termStartedAt === undefined || read.startedAt <= this.#termStartedAt) waits.add('ring-read');
    if (!this.#settled) waits.add('settling');
    const mine = this.#viewRanges();
    if (read !== undefined)
      for (const claim of read.claims.values())
        if (rangesMinus(mine, claim.ring.rangesOf(this.identity)).length > 0) waits.add('own-claim');
    for (const peer of this.#peers.values()) {
      if (!peer.live || peer.claim === undefined) continue;
      if (peer.claim === 'unreadable' || rangesOverlap(mine, peer.claim.ring.rangesOf(peer.identity))) {
        waits.add('peer-claim');
      }
    }
    return waits;
  }

  #checkHandover(): void {
    const handover = this.#handover;
    if (handover === undefined) return;
    const waits = this.#waitsNow();
    for (const wait of waits) handover.waitedFor.add(wait);
    if (waits.size > 0) return;
    this.#handover = undefined;
    this.#guard(() =>
      this.#observer?.onHandover?.({
        identity: this.identity,
        members: this.members,
        gained: handover.gained,
        waitedMs: this.#clock.now() - handover.since,
        waitedFor: [...handover.waitedFor],
        expired: [...handover.expired],
      }),
    );
  }

  /** The claim to publish now: the view, once read in this term and once nothing in flight would fall outside it; else the confirmed one. */
  #nextClaim(): Claim {
    // Before a read of the ring in this term the view is a guess (alone, or stale after a freeze):
    // claiming it would block the others for nothing, so the claim stays what it was.
    const read = this.#lastRead;
    if (read === undefined || this.#termStartedAt === undefined || read.startedAt <= this.#termStartedAt) return this.#confirmed;
    const view = this.#view;
    for (const hash of this.#inFlight.keys()) if (view.ring.ownerOf(hash) !== this.identity) return this.#confirmed;
    return view;
  }

  /** The elector's lock, publishing the claim in every write and tracking which claims may be visible. */
  #claimingLock(inner: LeaseLock): ResourceLock {
    const write = async (send: () => Promise<void>): Promise<void> => {
      const claim = this.#nextClaim();
      this.#writing = claim;
      this.#possible.set(claim.text, claim);
      this.#reading?.set(claim.text, claim);
      this.#lastRead?.claims.set(claim.text, claim);
      try {
        await send();
      } finally {
        this.#writing = undefined;
      }
      // Written: only this claim is on the Lease now. A failed write may still have committed, so
      // its claim stays possible (and keeps gating admission) until a later write succeeds.
      const changed = claim.text !== this.#confirmed.text;
      this.#confirmed = claim;
      this.#possible = new Map([[claim.text, claim]]);
      if (changed) {
        this.#logger?.info({ ring: this.ring, identity: this.identity, members: claim.ring.members }, 'acknowledged the ring');
        this.#guard(() => this.#observer?.onAcknowledged?.({ identity: this.identity, members: claim.ring.members }));
      }
      this.#checkHandover();
    };
    return {
      identity: inner.identity,
      describe: () => inner.describe(),
      get: (options?: LockCallOptions) => inner.get(options),
      create: (record: LeaderElectionRecord, options?: LockCallOptions) => write(() => inner.create(record, options)),
      update: (record: LeaderElectionRecord, options?: LockCallOptions) => write(() => inner.update(record, options)),
    };
  }

  /** A term of the own Lease began: nothing is admitted before a read that starts after this instant. */
  #startTerm(signal: AbortSignal): Promise<void> {
    this.#termStartedAt = this.#clock.now();
    if (this.#wake === undefined) this.#readAgain = true;
    else this.#wake.abort();
    // The term's work, as the elector sees it: it ends once the term ended and every admitted
    // reconcile released, so a graceful release never precedes a reconcile still running.
    return new Promise<void>((resolve) => {
      const drained = (): void => {
        if (this.#inFlight.size > 0) {
          const waiter = (): void => {
            this.#drainWaiters.delete(waiter);
            resolve();
          };
          this.#drainWaiters.add(waiter);
        } else resolve();
      };
      if (signal.aborted) drained();
      else signal.addEventListener('abort', drained, { once: true });
    });
  }

  #endTerm(): void {
    this.#termStartedAt = undefined;
  }

  #guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#logger?.error({ err: error }, 'a sharding observer or listener threw');
    }
  }
}

/**
 * A failed ring read that needs a human is logged at error: 401, 403 (a Role without `list` on
 * leases), 404; anything else (a timeout, a 5xx, a refused connection) is an outage the next retry
 * period may heal, at warn.
 */
function ringReadLevel(error: unknown): 'warn' | 'error' {
  return isKubeApiError(error) && [401, 403, 404].includes(error.statusCode) ? 'error' : 'warn';
}

/**
 * The kind of a failed ring read: its HTTP status, else its code (`RL_KUBE_REQUEST_TIMEOUT`,
 * `ECONNREFUSED`) or class; a new kind in one outage is logged again (a 403 after a run of timeouts).
 */
function ringReadKind(error: unknown): string {
  if (isKubeApiError(error)) return `HTTP ${error.statusCode}`;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : typeof error;
}

/** An error's message for `status()` and `ready()` (a thrown non-Error as text). */
function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
