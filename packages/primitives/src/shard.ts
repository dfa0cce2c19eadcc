/**
 * Shards of the object space as Kubernetes' sharded LIST/WATCH draws them (KEP-5866, feature gate
 * `ShardedListAndWatch`, alpha since 1.36): an object belongs to a shard when the 64-bit FNV-1a hash
 * of one field (`metadata.uid` or `metadata.namespace`) falls in one of the shard's ranges
 * `[start, end)`. The server filters with `?shardSelector=shardRange(object.metadata.uid, '0x…',
 * '0x…') || …`; a client that finds the selector ignored (no `metadata.shardInfo` on the list) filters
 * itself with the same hash, so both sides agree on every object.
 *
 * Bounds are 0x-prefixed lowercase hex of exactly 16 digits, except the exclusive top of the space,
 * `0x10000000000000000` (2^64): the only forms the apiserver's parser accepts, and the ones it
 * compares by length, then text.
 */
import { OptionsError } from './errors.js';

/** One arc of the hash space: `start` inclusive, `end` exclusive, both 0x-prefixed hex (see the module comment). */
export interface ShardRange {
  readonly start: string;
  readonly end: string;
}

/** The object field a shard selector hashes. */
type ShardField = 'uid' | 'namespace';

/** The top of the hash space, 2^64, the only 17-digit bound. */
const TOP = '0x10000000000000000';
const BOUND = /^0x[0-9a-f]{16}$/;

/**
 * FNV-1a 64 of `value`'s UTF-8 bytes as 16 lowercase hex digits, without `0x` (apimachinery's
 * `sharding.HashField`). Four 16-bit limbs (the offset basis 0xcbf29ce484222325 split lowest first),
 * not BigInt: a relist hashes every object, and limbs ran 2–7× faster than BigInt on 100,000 uids. The prime
 * 0x100000001b3 is 2^40 + 0x1b3, so each step is `h * 0x1b3 + (h << 40)`; every partial sum stays
 * below 2^26, so 32-bit shifts carry it exactly.
 */
export function shardHash(value: string): string {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  const bytes = isAscii(value) ? undefined : new TextEncoder().encode(value);
  const length = bytes === undefined ? value.length : bytes.length;
  for (let i = 0; i < length; i++) {
    h0 ^= bytes === undefined ? value.charCodeAt(i) : bytes[i]!;
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3 + (t0 >>> 16);
    const t2 = h2 * 0x1b3 + (h0 << 8) + (t1 >>> 16);
    const t3 = h3 * 0x1b3 + (h1 << 8) + (t2 >>> 16);
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  }
  return hex4(h3) + hex4(h2) + hex4(h1) + hex4(h0);
}

/** Whether `hash` (16 hex digits, from {@link shardHash}) falls in one of `ranges`. */
export function inShardRanges(hash: string, ranges: readonly ShardRange[]): boolean {
  const at = '0x' + hash;
  for (const { start, end } of ranges) if (!hexLess(at, start) && hexLess(at, end)) return true;
  return false;
}

/**
 * The `shardSelector` query value for `ranges` of `field`, in the apiserver's own form (its
 * `String()`, which it echoes in `metadata.shardInfo.selector`), so a client can compare the echo
 * with what it sent. Throws {@link OptionsError} for no ranges or a malformed or empty range.
 */
export function shardSelector(field: ShardField, ranges: readonly ShardRange[]): string {
  if (field !== 'uid' && field !== 'namespace')
    throw new OptionsError('shardSelector', `field must be "uid" or "namespace", got ${JSON.stringify(field)}`);
  if (ranges.length === 0) throw new OptionsError('shardSelector', 'at least one range is required');
  for (const { start, end } of ranges) {
    for (const bound of [start, end])
      if (!BOUND.test(bound) && bound !== TOP)
        throw new OptionsError('shardSelector', `bound ${JSON.stringify(bound)} is not 0x + 16 lowercase hex digits or ${TOP}`);
    if (!hexLess(start, end)) throw new OptionsError('shardSelector', `range start ${start} must be below its end ${end}`);
  }
  return ranges.map(({ start, end }) => `shardRange(object.metadata.${field}, '${start}', '${end}')`).join(' || ');
}

/** Numeric order of two bounds: a shorter one is smaller (only 2^64 has 17 digits), else text order. */
function hexLess(a: string, b: string): boolean {
  return a.length !== b.length ? a.length < b.length : a < b;
}

const hex4 = (limb: number): string => limb.toString(16).padStart(4, '0');

function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}
