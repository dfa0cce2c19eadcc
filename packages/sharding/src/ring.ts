import { OptionsError, shardHash, type ShardRange } from '@reconcile-loop/primitives';

/** Virtual nodes per member unless a ring says otherwise (the README's number; see its "Ring" section). */
export const DEFAULT_VIRTUAL_NODES = 32;

/** The bottom and the exclusive top of the 64-bit hash space, as `ShardRange` bounds. */
const BOTTOM = '0x0000000000000000';
const TOP = '0x10000000000000000';

interface Point {
  /** 16 lowercase hex digits (a `shardHash`): text order is numeric order. */
  readonly at: string;
  readonly member: string;
}

/**
 * A consistent-hash ring over the 64-bit FNV-1a space of `shardHash`: each member has
 * `virtualNodes` points (see `pointOf`), and a point owns the arc from itself up to the
 * next point; the arc below the lowest point belongs to the highest one (the ring wraps).
 *
 * Invariants: the arcs partition `[0, 2^64)` exactly (every hash has exactly one owner); the result
 * depends only on the member SET and `virtualNodes` (the order given is irrelevant, and two points on
 * one hash are ordered by member id), so every replica that sees the same members computes the same
 * owner for every hash; adding or removing one member changes only arcs next to that member's own
 * points, so only hashes that move to (or from) that member change owner.
 */
export class HashRing {
  /** The members, sorted, without duplicates. */
  readonly members: readonly string[];
  readonly virtualNodes: number;
  readonly #points: readonly Point[];
  readonly #ranges = new Map<string, readonly ShardRange[]>();

  constructor(members: Iterable<string>, virtualNodes: number = DEFAULT_VIRTUAL_NODES) {
    if (!Number.isInteger(virtualNodes) || virtualNodes < 1 || virtualNodes > 4096)
      throw new OptionsError('HashRing', `virtualNodes must be an integer in [1, 4096], got ${String(virtualNodes)}`);
    const set = new Set<string>();
    for (const id of members) {
      if (typeof id !== 'string' || id === '') throw new OptionsError('HashRing', 'a member id must be a non-empty string');
      set.add(id);
    }
    this.members = Object.freeze([...set].sort());
    this.virtualNodes = virtualNodes;
    const points: Point[] = [];
    for (const member of this.members) for (let i = 0; i < virtualNodes; i++) points.push({ at: pointOf(member, i), member });
    points.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
    this.#points = points;
  }

  /** The member owning `hash` (16 hex digits, from `shardHash`), or `undefined` for an empty ring. */
  ownerOf(hash: string): string | undefined {
    const points = this.#points;
    if (points.length === 0) return undefined;
    // The last point at or below `hash`; none: the wrap arc of the highest point.
    let lo = 0;
    let hi = points.length; // invariant: points[< lo].at <= hash < points[>= hi].at
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (points[mid]!.at <= hash) lo = mid + 1;
      else hi = mid;
    }
    return points[(lo === 0 ? points.length : lo) - 1]!.member;
  }

  /**
   * `member`'s arcs as sorted, disjoint `ShardRange`s, adjacent arcs merged (the wrap arc is two
   * ranges, `[highest point, 2^64)` and `[0, lowest point)`, merged with neighbours like any other).
   * Empty for a non-member or an empty ring; `[{ 0, 2^64 }]` for a sole member.
   */
  rangesOf(member: string): readonly ShardRange[] {
    const cached = this.#ranges.get(member);
    if (cached !== undefined) return cached;
    const points = this.#points;
    const out: ShardRange[] = [];
    const push = (start: string, end: string): void => {
      if (start === end) return; // two points on one hash: an empty arc
      const last = out[out.length - 1];
      if (last !== undefined && last.end === start) out[out.length - 1] = { start: last.start, end };
      else out.push({ start, end });
    };
    if (points.length > 0) {
      const wrapOwner = points[points.length - 1]!.member;
      if (wrapOwner === member) push(BOTTOM, `0x${points[0]!.at}`);
      for (let i = 0; i < points.length; i++) {
        if (points[i]!.member !== member) continue;
        push(`0x${points[i]!.at}`, i + 1 < points.length ? `0x${points[i + 1]!.at}` : TOP);
      }
    }
    const frozen = Object.freeze(out.map((r) => Object.freeze(r)));
    this.#ranges.set(member, frozen);
    return frozen;
  }
}

/**
 * Where `member`'s `i`-th point sits: `shardHash` of `${member}#${i}`, hashed once more. One pass of
 * FNV-1a leaves strings that differ only in their last bytes within a narrow band of the top bits
 * (a last byte reaches the high bits only through carries), so a member's 32 points landed side by
 * side and shares ranged from 0.02 to 4.4 of the fair one; the second pass over the 16 hex digits
 * spreads them, and shares then follow the Gamma(V) spread the README states.
 */
function pointOf(member: string, i: number): string {
  return shardHash(shardHash(`${member}#${i}`));
}

/** Whether two sorted, disjoint range lists share any hash. */
export function rangesOverlap(a: readonly ShardRange[], b: readonly ShardRange[]): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (hexLess(x.start, y.end) && hexLess(y.start, x.end)) return true;
    if (hexLess(x.end, y.end)) i++;
    else j++;
  }
  return false;
}

/** The ranges in `a` not in `b` (both sorted and disjoint). */
export function rangesMinus(a: readonly ShardRange[], b: readonly ShardRange[]): ShardRange[] {
  const out: ShardRange[] = [];
  let j = 0;
  for (const { start, end } of a) {
    let from = start;
    while (j < b.length && !hexLess(from, b[j]!.end)) j++;
    let k = j;
    while (k < b.length && hexLess(b[k]!.start, end) && hexLess(from, end)) {
      if (hexLess(from, b[k]!.start)) out.push({ start: from, end: b[k]!.start });
      if (hexLess(from, b[k]!.end)) from = b[k]!.end;
      k++;
    }
    if (hexLess(from, end)) out.push({ start: from, end });
  }
  return out;
}

/** The fraction of the 2^64 space `ranges` cover. */
export function rangesShare(ranges: readonly ShardRange[]): number {
  let sum = 0n;
  for (const { start, end } of ranges) sum += BigInt(end) - BigInt(start);
  return Number((sum * 1_000_000n) >> 64n) / 1_000_000;
}

/** Numeric order of two bounds: a shorter one is smaller (only 2^64 has 17 digits), else text order. */
function hexLess(a: string, b: string): boolean {
  return a.length !== b.length ? a.length < b.length : a < b;
}
