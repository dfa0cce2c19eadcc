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
