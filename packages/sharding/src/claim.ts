import { OptionsError, shardHash } from '@reconcile-loop/primitives';
import { HashRing } from './ring.js';

/** The label every member Lease of a ring carries, its value the ring's name: members are listed by it. */
export const RING_LABEL = 'sharding.reconcile-loop.dev/ring';
/**
 * The annotation holding a member's claim: the ring (members and virtual nodes) it acknowledged, as
 * JSON `{"members":[...],"virtualNodes":n}`. Its meaning: every hash this member admits, or has a
 * reconcile in flight for, is one it owns in that ring.
 */
export const CLAIM_ANNOTATION = 'sharding.reconcile-loop.dev/claim';

/** A claim: a ring acknowledged. The empty ring claims nothing. */
export interface Claim {
  readonly ring: HashRing;
  /** The annotation text (also the claim's identity: equal text, equal claim). */
  readonly text: string;
}

const rings = new Map<string, HashRing>();

/** The claim of `members` with `virtualNodes`; rings are cached by their text (a member computes the same few many times). */
export function claimOf(members: Iterable<string>, virtualNodes: number): Claim {
  const sorted = [...new Set(members)].sort();
  const text = JSON.stringify({ members: sorted, virtualNodes });
  let ring = rings.get(text);
  if (ring === undefined) {
    ring = new HashRing(sorted, virtualNodes);
    if (rings.size >= 256) rings.delete(rings.keys().next().value!);
    rings.set(text, ring);
  }
  return { ring, text };
}

/**
 * A claim read from a Lease's annotations; `undefined` when absent or unreadable. An unreadable
 * claim is treated by the caller as claiming everything (see the member): another version's or a
 * hand-edited annotation must block a handover, never let one through.
 */
export function parseClaim(annotations: unknown): Claim | 'unreadable' | undefined {
  const text = (annotations as Record<string, unknown> | undefined)?.[CLAIM_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(String(text)) as { members?: unknown; virtualNodes?: unknown };
    if (!Array.isArray(value.members) || !value.members.every((m) => typeof m === 'string' && m !== '')) return 'unreadable';
    return claimOf(value.members as string[], value.virtualNodes as number);
  } catch {
    return 'unreadable';
  }
}

/** A DNS-1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric, at most 63. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Checks a ring name: it is a label value and the prefix of Lease names, so a DNS-1123 label of at most 40 characters. */
export function checkRingName(name: unknown): string {
  if (typeof name !== 'string' || name.length > 40 || !DNS_LABEL.test(name))
    throw new OptionsError('ShardMember', `ring must be a DNS-1123 label of at most 40 characters, got ${JSON.stringify(name)}`);
  return name;
}

/**
 * The name of `identity`'s Lease in `ring`: `${ring}-${identity}` when that is a DNS-1123 subdomain
 * label, else the identity lowercased with every other character made '-', cut, and followed by 8
 * hex digits of its hash, so two identities that differ only in such characters never share a Lease.
 */
export function memberLeaseName(ring: string, identity: string): string {
  const plain = `${ring}-${identity}`;
  if (plain.length <= 63 && DNS_LABEL.test(plain)) return plain;
  const cleaned = identity
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63 - ring.length - 10)
    .replace(/^-+|-+$/g, '');
  return `${ring}-${cleaned === '' ? '' : `${cleaned}-`}${shardHash(identity).slice(0, 8)}`;
}
