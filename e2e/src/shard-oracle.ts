/**
 * The test's own shard hash, to check a server's or a replica's filtering against: FNV-1a 64 over
 * the UTF-8 bytes, as Go's hash/fnv New64a (which apimachinery's shard selector applies to the
 * field). Written here from the algorithm, not imported from primitives' `shardHash`, so a bug
 * there cannot hide in both sides of a check.
 */
export interface HashRange {
  readonly start: string;
  readonly end: string;
}

export function fnv1a64(value: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(value, 'utf8')) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h;
}

/** Whether `hash` lies in one of `ranges` (`[start, end)`, bounds as `0x` hex strings). */
export function hashInRanges(hash: bigint, ranges: readonly HashRange[]): boolean {
  return ranges.some(({ start, end }) => BigInt(start) <= hash && hash < BigInt(end));
}
