import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitLines } from './all.js';

async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const v of iterable) out.push(v);
  return out;
}

async function* chunked(bytes: Buffer, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
  yield bytes.subarray(start);
}

describe('[kube_client: watch] property: any chunking of a watch body yields exactly its lines', () => {
  it('lines (with multi-byte characters) come out whole and in order whatever the chunk boundaries; over-cap lines always fail', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((s) => !s.includes('\n') && s.trim() !== ''),
          { maxLength: 12 },
        ),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.integer({ min: 8, max: 200 }),
        async (lines, cuts, cap) => {
          const body = Buffer.from(lines.map((l) => `${l}\n`).join(''));
          const tooLong = lines.some((l) => Buffer.byteLength(l) > cap);
          const result = await collect(splitLines(chunked(body, cuts), cap)).then(
            (v) => ({ ok: true as const, v }),
            (e: unknown) => ({ ok: false as const, e }),
          );
          if (tooLong) {
            expect(result.ok).toBe(false);
            expect(!result.ok && (result.e as { code?: string }).code).toBe('RL_KUBE_WATCH_FRAME_TOO_LARGE');
          } else {
            expect(result).toEqual({ ok: true, v: lines });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
