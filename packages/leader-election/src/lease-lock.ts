import type { KubeClient, KubeObject, RateLimiter, RateLimitOptions, ResourceClient } from '@reconcile-loop/kube-client';
import { isNotFound } from '@reconcile-loop/kube-client/errors';
import { OptionsError } from '@reconcile-loop/primitives';
import { leaseSpecFromRecord, recordFromLeaseSpec, type LeaderElectionRecord } from './record.js';

/** Per-call options of a lock operation: every call is abortable and has a deadline. */
export interface LockCallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/**
 * Where the election record lives (client-go's `resourcelock.Interface`). `update` must be an
 * optimistic write: it fails (a 409 `Conflict`) unless the object is still the one last read or
 * written through this lock, which is what makes two concurrent takeovers impossible.
 */
export interface ResourceLock {
  /** This candidate's identity; unique per process instance (a restarted process must not reuse it). */
  readonly identity: string;
  /** e.g. `default/my-controller`, for logs. */
  describe(): string;
  /** The current record, or `undefined` when the lock object does not exist. */
  get(options?: LockCallOptions): Promise<LeaderElectionRecord | undefined>;
  /** Creates the lock object holding `record`; a 409 `AlreadyExists` when another candidate was first. */
  create(record: LeaderElectionRecord, options?: LockCallOptions): Promise<void>;
  /** Replaces the record, conditional on the version last read or written (409 `Conflict` when stale). */
  update(record: LeaderElectionRecord, options?: LockCallOptions): Promise<void>;
}

/** Where a Lease lives and who competes for it. */
export interface LeaseLockOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  /** Unique per process instance, e.g. `${hostname}_${randomUUID()}`. */
  readonly identity: string;
  /**
   * The Lease's own rate limiter (`client.withLane('leader-election', rateLimit)`): default a bucket
   * of its own at client-go's 5 QPS / burst 10, so reconcile writes queued on `client` never delay
   * a renewal; `'shared'` sends the Lease traffic through `client`'s limiter, behind everything else.
   */
  readonly rateLimit?: RateLimitOptions | RateLimiter | false | 'shared' | undefined;
  /** Labels merged into the Lease on every create and update (e.g. so a set of Leases can be listed by selector). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /**
   * Annotations merged into the Lease on every create and update, read at the moment of the write:
   * a holder publishes what it acknowledged (`@reconcile-loop/sharding`'s ring claim) in the same
   * write that renews it, so the two can never disagree.
   */
  readonly annotations?: (() => Readonly<Record<string, string>>) | undefined;
}

/** The lane name the Lease traffic's limiter reports under (`KubeClientOptions.onRateLimitWait`). */
export const LEASE_LANE = 'leader-election';

/** `coordination.k8s.io/v1` `leases`. */
export const leaseResource = Object.freeze({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' });

function nonEmpty(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new OptionsError('LeaseLock', `${name} must be a non-empty string`);
  return value;
}

/**
 * A {@link ResourceLock} on a `coordination.k8s.io/v1` Lease. It keeps the Lease last read or
 * written, so an update carries its `resourceVersion`: the apiserver refuses it with 409 when anyone
 * wrote the Lease since, and the elector then re-reads (client-go's `LeaseLock`).
 */
export class LeaseLock implements ResourceLock {
  readonly identity: string;
  readonly namespace: string;
  readonly name: string;
  readonly #leases: ResourceClient<KubeObject>;
  /** The Lease as last seen: its `resourceVersion` guards the next update. */
  #lease: KubeObject | undefined;
  readonly #labels: Readonly<Record<string, string>> | undefined;
  readonly #annotations: (() => Readonly<Record<string, string>>) | undefined;

  constructor(options: LeaseLockOptions) {
    if (options?.client === undefined) throw new OptionsError('LeaseLock', 'a LeaseLock needs a KubeClient');
    this.namespace = nonEmpty('namespace', options.namespace);
    this.name = nonEmpty('name', options.name);
    this.identity = nonEmpty('identity', options.identity);
    if (options.annotations !== undefined && typeof options.annotations !== 'function')
      throw new OptionsError('LeaseLock', 'annotations must be a function returning the annotations to write');
    this.#labels = options.labels;
    this.#annotations = options.annotations;
    // Its own lane: an elector does at most a write per retry period (2 s), so its own bucket never
    // makes it wait, while the shared one can hold hundreds of reconcile writes ahead of it.
    const client = options.rateLimit === 'shared' ? options.client : options.client.withLane(LEASE_LANE, options.rateLimit);
    this.#leases = client.resource(leaseResource).inNamespace(this.namespace);
  }

  describe(): string {
    return `${this.namespace}/${this.name}`;
  }

  async get(options?: LockCallOptions): Promise<LeaderElectionRecord | undefined> {
    try {
      this.#lease = await this.#leases.get(this.name, options);
    } catch (error) {
      if (isNotFound(error)) {
        this.#lease = undefined;
        return undefined;
      }
      throw error;
    }
    return recordFromLeaseSpec(this.#lease['spec']);
  }

  async create(record: LeaderElectionRecord, options?: LockCallOptions): Promise<void> {
    this.#lease = await this.#leases.create(
      { metadata: this.#metadata({ name: this.name, namespace: this.namespace }), spec: leaseSpecFromRecord(record) },
      options,
    );
  }

  async update(record: LeaderElectionRecord, options?: LockCallOptions): Promise<void> {
    // client-go refuses to update a lock it never read: without a resourceVersion the PUT would be unconditional.
    if (this.#lease === undefined)
      throw new OptionsError('LeaseLock', `lease ${this.describe()} not initialized: get or create it first`);
    this.#lease = await this.#leases.update(
      {
        ...this.#lease,
        metadata: this.#metadata(this.#lease.metadata as Record<string, unknown>),
        spec: { ...(this.#lease['spec'] as object | undefined), ...leaseSpecFromRecord(record) },
      },
      options,
    );
  }

  /** `metadata` with the configured labels (on create) and annotations (on every write) merged in. */
  #metadata(metadata: Record<string, unknown>): Record<string, unknown> {
    if (this.#labels === undefined && this.#annotations === undefined) return metadata;
    const out = { ...metadata };
    if (this.#labels !== undefined) out['labels'] = { ...(metadata['labels'] as object | undefined), ...this.#labels };
    if (this.#annotations !== undefined)
      out['annotations'] = { ...(metadata['annotations'] as object | undefined), ...this.#annotations() };
    return out;
  }
}
