/**
 * The election record (client-go's `LeaderElectionRecord`) and its Lease form. Times are
 * `MicroTime` strings written for humans and other tools; this package never compares them with a
 * clock (expiry is judged by when the record was observed, see the elector).
 */

/** What a lock stores. */
export interface LeaderElectionRecord {
  /** The holder; `''` when released (a standby may take it at once). */
  readonly holderIdentity: string;
  /** How long, from when a candidate observes this record, it must wait before taking over. */
  readonly leaseDurationSeconds: number;
  /** MicroTime when the holder acquired the lease. */
  readonly acquireTime: string;
  /** MicroTime of the holder's last renewal. */
  readonly renewTime: string;
  /** How many times the lease changed hands. */
  readonly leaseTransitions: number;
}

/**
 * A `metav1.MicroTime` on the wire: RFC 3339, UTC, exactly six fractional digits
 * (`2026-11-30T08:46:54.123000Z`). JavaScript time has millisecond precision, so the last three
 * digits are zero.
 */
export function formatMicroTime(epochMs: number): string {
  const iso = new Date(epochMs).toISOString(); // 2026-11-30T08:46:54.123Z
  return `${iso.slice(0, -1)}000Z`;
}

/** True when `a` and `b` are the same record (client-go compares the raw record bytes). */
export function sameRecord(a: LeaderElectionRecord | undefined, b: LeaderElectionRecord | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A Lease `spec` as a record, as client-go's `LeaseSpecToLeaderElectionRecord` reads it: an absent
 * field is its zero value (an absent `leaseDurationSeconds` is 0, i.e. already expired).
 */
export function recordFromLeaseSpec(spec: unknown): LeaderElectionRecord {
  const s = isRecord(spec) ? spec : {};
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const int = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    holderIdentity: str(s['holderIdentity']),
    leaseDurationSeconds: int(s['leaseDurationSeconds']),
    acquireTime: str(s['acquireTime']),
    renewTime: str(s['renewTime']),
    leaseTransitions: int(s['leaseTransitions']),
  };
}

/**
 * What one observer knows of one Lease record, and client-go's rule for its validity: a record is
 * valid until `leaseDurationSeconds` after this observer last saw it CHANGE, by this observer's own
 * clock (never by the record's timestamps, which another machine wrote). The elector judges its
 * lock with it; `@reconcile-loop/sharding` judges every member's Lease with the same instance of
 * the rule, so there is one implementation of it.
 */
export class LeaseObservation {
  #record: LeaderElectionRecord | undefined;
  #observedAt = Number.NEGATIVE_INFINITY;

  /** A Lease `spec` read as client-go reads it (an absent field is its zero value). */
  static parse(spec: unknown): LeaderElectionRecord {
    return recordFromLeaseSpec(spec);
  }

  /** The record as last observed (`undefined`: never). */
  get record(): LeaderElectionRecord | undefined {
    return this.#record;
  }

  /** When the record was last seen to change (or was last {@link LeaseObservation.set}), on the observer's clock. */
  get observedAt(): number {
    return this.#observedAt;
  }

  /** Records `record` as observed at `now`, whether or not it changed (after this observer's own write). */
  set(record: LeaderElectionRecord, now: number): void {
    this.#record = record;
    this.#observedAt = now;
  }

  /** Records `record` read at `now`; the observation time moves only when it differs from the last. True when it changed. */
  update(record: LeaderElectionRecord, now: number): boolean {
    if (sameRecord(record, this.#record)) return false;
    this.set(record, now);
    return true;
  }

  /** Whether the record is still valid at `now` by this observer's clock (`false` when never observed). */
  validAt(now: number): boolean {
    return this.#observedAt + (this.#record?.leaseDurationSeconds ?? 0) * 1000 > now;
  }
}

/** A record as a Lease `spec` (client-go's `LeaderElectionRecordToLeaseSpec`). */
export function leaseSpecFromRecord(record: LeaderElectionRecord): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    leaseTransitions: record.leaseTransitions,
  };
  if (record.acquireTime !== '') spec['acquireTime'] = record.acquireTime;
  if (record.renewTime !== '') spec['renewTime'] = record.renewTime;
  return spec;
}
