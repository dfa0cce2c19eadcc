import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inShardRanges, OptionsError, shardHash, shardSelector } from '../src/index.js';

/** The definition, in BigInt: FNV-1a 64 over the UTF-8 bytes (Go's hash/fnv New64a). */
function reference(value: string): string {
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(value)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, '0');
}

describe('[primitives: shard hash] FNV-1a 64 as apimachinery HashField computes it', () => {
  it('matches the published vectors and the BigInt definition on any string, ASCII or not', () => {
    expect(shardHash('')).toBe('cbf29ce484222325');
    expect(shardHash('a')).toBe('af63dc4c8601ec8c');
    expect(shardHash('foobar')).toBe('85944171f73967e8');
    fc.assert(
      fc.property(fc.oneof(fc.uuid(), fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ maxLength: 300 })), (s) => {
        expect(shardHash(s)).toBe(reference(s));
      }),
      { numRuns: 2_000, seed: 27 },
    );
  });
});

describe('[primitives: shard ranges] membership is [start, end) of the 64-bit space; the selector is the apiserver form', () => {
  const lower = { start: '0x0000000000000000', end: '0x8000000000000000' };
  const upper = { start: '0x8000000000000000', end: '0x10000000000000000' };

  it('every hash is in exactly one half, and the bounds are inclusive at the start only', () => {
    fc.assert(
      fc.property(fc.uuid(), (uid) => {
        const h = shardHash(uid);
        expect(inShardRanges(h, [lower]) !== inShardRanges(h, [upper])).toBe(true);
        expect(inShardRanges(h, [lower, upper])).toBe(true);
      }),
      { numRuns: 1_000, seed: 27 },
    );
    expect(inShardRanges('8000000000000000', [lower])).toBe(false);
    expect(inShardRanges('8000000000000000', [upper])).toBe(true);
    expect(inShardRanges('ffffffffffffffff', [upper])).toBe(true);
    expect(inShardRanges('0000000000000000', [])).toBe(false);
  });

  it('formats ranges joined by ||, and refuses a bad field, no range, a malformed bound or an empty range', () => {
    expect(shardSelector('uid', [lower, upper])).toBe(
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    );
    expect(shardSelector('namespace', [lower])).toContain('object.metadata.namespace');
    const bad: Array<[Parameters<typeof shardSelector>[0], Parameters<typeof shardSelector>[1], RegExp]> = [
      ['name' as 'uid', [lower], /field must be/],
      ['uid', [], /at least one range/],
      ['uid', [{ start: '0x0', end: '0x8000000000000000' }], /is not 0x \+ 16/],
      ['uid', [{ start: '0x8000000000000000', end: '0x8000000000000000' }], /must be below/],
      ['uid', [{ start: '0x000000000000000A', end: '0x8000000000000000' }], /lowercase/],
    ];
    for (const [field, ranges, message] of bad) {
      expect(() => shardSelector(field, ranges)).toThrow(OptionsError);
      expect(() => shardSelector(field, ranges)).toThrow(message);
    }
  });
});
