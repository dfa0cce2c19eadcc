import { podResource, podSchema } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KubeClient, splitFrameBatches, splitLineBatches } from './all.js';
import { FakeTransport } from './fake-transport.js';

/** What a splitter produced: its batches (each item as hex, lines encoded to UTF-8) and the error code it ended with, if any. */
interface Outcome {
  readonly batches: string[][];
  readonly error: string | undefined;
}

async function outcome<V>(batches: AsyncIterable<V[]>, hex: (item: V) => string): Promise<Outcome> {
  const out: string[][] = [];
  try {
    for await (const batch of batches) out.push(batch.map(hex));
  } catch (error) {
    return { batches: out, error: String((error as { code?: unknown }).code) };
  }
  return { batches: out, error: undefined };
}

const lineHex = (line: string): string => Buffer.from(line, 'utf8').toString('hex');
const frameHex = (frame: Uint8Array): string => Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('hex');

/** The body cut at `cuts` (byte offsets, multi-byte characters cut too), each chunk in an ArrayBuffer of its own. */
async function* chunked(body: Uint8Array, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
  const points = [...new Set(cuts.map((cut) => cut % (body.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  for (const end of [...points, body.length]) {
    yield new Uint8Array(body.subarray(start, end));
    start = end;
  }
}

/** Characters where the splitters could disagree: newlines, CR, ASCII and Unicode whitespace, controls trim keeps, multi-byte text, `{`. */
const tricky = fc.constantFrom(
  '\n',
  '\n',
  '\r',
  ' ',
  '\t',
  '\v',
  '\f',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u200a',
  '\u200b',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
  '\u180e',
  '\u0085',
  '\u001c',
  '\u0000',
  '{',
  'x',
  'é',
  '€',
  '😀',
);
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 60 });

describe('[kube_client: frames as bytes] splitFrameBatches carries each frame as its bytes', () => {
  it("[kube_client: frames as bytes] property: for any chunking of any text, the frames are the UTF-8 encodings of splitLineBatches' lines, in the same batches, with the same errors at the same points", async () => {
    await fc.assert(
      fc.asyncProperty(text, fc.array(fc.nat(), { maxLength: 12 }), fc.integer({ min: 1, max: 80 }), async (body, cuts, cap) => {
        const bytes = Buffer.from(body, 'utf8');
        const lines = await outcome(splitLineBatches(chunked(bytes, cuts), cap), lineHex);
        const frames = await outcome(splitFrameBatches(chunked(bytes, cuts), cap), frameHex);
        expect(frames).toEqual(lines);
        expect(frames.batches.every((batch) => batch.length > 0)).toBe(true);
      }),
      { numRuns: 1500 },
    );
  });

  it("[kube_client: frames as bytes] property: chunks whose memory is reused once the next is read (a watch's one read buffer) give the same frames, read before the next batch", async () => {
    /** Every chunk in one buffer, scribbled over before the next is copied in. */
    async function* reused(body: Uint8Array, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
      const buffer = new Uint8Array(body.length + 1);
      for await (const piece of chunked(body, cuts)) {
        buffer.fill(0x7b);
        buffer.set(piece);
        yield buffer.subarray(0, piece.length);
      }
    }
    await fc.assert(
      fc.asyncProperty(text, fc.array(fc.nat(), { maxLength: 12 }), fc.integer({ min: 1, max: 80 }), async (body, cuts, cap) => {
        const bytes = Buffer.from(body, 'utf8');
        expect(await outcome(splitFrameBatches(reused(bytes, cuts), cap), frameHex)).toEqual(
          await outcome(splitFrameBatches(chunked(bytes, cuts), cap), frameHex),
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('[kube_client: frames as bytes] property: for any bytes (invalid UTF-8 included), the same frame boundaries, blank-line drops and errors as splitLineBatches', async () => {
    const byte = fc.oneof(
      fc.constantFrom(0x0a, 0x0a, 0x20, 0x09, 0x0d, 0xc2, 0xa0, 0xe2, 0x80, 0xa8, 0xef, 0xbb, 0xbf, 0x7b),
      fc.integer({ min: 0, max: 255 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(byte, { maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.integer({ min: 1, max: 80 }),
        async (raw, cuts, cap) => {
          const bytes = Uint8Array.from(raw);
          const lines = await outcome(splitLineBatches(chunked(bytes, cuts), cap), (line) => line);
          const frames = await outcome(splitFrameBatches(chunked(bytes, cuts), cap), (frame) =>
            Buffer.from(frame).toString('utf8'),
          );
          // Decoding is where the two may differ for invalid sequences (U+FFFD); the shape and the errors may not.
          expect(frames.batches.map((batch) => batch.length)).toEqual(lines.batches.map((batch) => batch.length));
          expect(frames.error).toEqual(lines.error);
          // Every frame is exactly the bytes of one line of the body.
          const all = new Set(Buffer.from(bytes).toString('latin1').split('\n'));
          for (const frame of (
            await outcome(splitFrameBatches(chunked(bytes, cuts), cap), (f) => Buffer.from(f).toString('latin1'))
          ).batches.flat())
            expect(all.has(frame)).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("[kube_client: frames as bytes] a frame inside one chunk is a view on that chunk; one spanning chunks is one copy of its own, sharing no chunk's memory", async () => {
    const big = `{"a":"${'x'.repeat(8_000)}"}`;
    const first = Buffer.from(`{"a":1}\n{"b":2}\n${big.slice(0, 3_000)}`);
    const second = Buffer.from(`${big.slice(3_000)}\n{"c":3}\n`);
    const chunks = [new Uint8Array(first), new Uint8Array(second)];
    async function* source(): AsyncGenerator<Uint8Array> {
      yield* chunks;
    }
    const batches: Uint8Array[][] = [];
    for await (const batch of splitFrameBatches(source())) batches.push(batch);
    expect(batches.map((batch) => batch.map((frame) => Buffer.from(frame).toString()))).toEqual([
      ['{"a":1}', '{"b":2}'],
      [big, '{"c":3}'],
    ]);
    const [[a, b], [spanning, c]] = batches as [[Uint8Array, Uint8Array], [Uint8Array, Uint8Array]];
    // Zero copy: the views sit in the chunk's own ArrayBuffer, at their offsets.
    expect(a.buffer).toBe(chunks[0]!.buffer);
    expect([a.byteOffset, b.buffer === chunks[0]!.buffer, b.byteOffset]).toEqual([0, true, 8]);
    expect(c.buffer).toBe(chunks[1]!.buffer);
    expect(c.byteOffset).toBe(big.length - 3_000 + 1);
    // One copy: the spanning frame owns exactly its bytes, so it keeps neither chunk alive.
    expect(spanning.buffer).not.toBe(chunks[0]!.buffer);
    expect(spanning.buffer).not.toBe(chunks[1]!.buffer);
    expect(spanning.buffer.byteLength).toBe(big.length);
    chunks[0]!.fill(0);
    chunks[1]!.fill(0);
    expect(Buffer.from(spanning).toString()).toBe(big);
  });

  it('[kube_client: frames as bytes] the cap, a cut frame and blank lines, as splitLineBatches: errors after the batch completed before them', async () => {
    async function* of(...parts: (string | Uint8Array)[]): AsyncGenerator<string | Uint8Array> {
      yield* parts;
    }
    const text = async (source: AsyncIterable<Uint8Array[]>): Promise<string[][]> => {
      const out: string[][] = [];
      for await (const batch of source) out.push(batch.map((frame) => Buffer.from(frame).toString()));
      return out;
    };
    const over = splitFrameBatches(of(`{"a":1}\n${'x'.repeat(50)}\n`), 40);
    expect((await over.next()).value?.map((frame) => Buffer.from(frame).toString())).toEqual(['{"a":1}']);
    await expect(over.next()).rejects.toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE', maxFrameBytes: 40 });
    // A frame that never ends fails as soon as its pending part passes the cap.
    await expect(text(splitFrameBatches(of('x'.repeat(30), 'x'.repeat(30)), 40))).rejects.toMatchObject({
      code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE',
    });
    expect(await text(splitFrameBatches(of('x'.repeat(40) + '\n'), 40))).toEqual([['x'.repeat(40)]]);
    await expect(text(splitFrameBatches(of('{"type":"ADDED"')))).rejects.toMatchObject({ code: 'RL_KUBE_PROTOCOL' });
    // CRLF keeps its CR (as the lines do); blank, whitespace-only and Unicode-whitespace lines are dropped; a trailing blank remainder is no error.
    expect(await text(splitFrameBatches(of('{"a":1}\r\n', '  \n\n', ' \u00a0\u3000\n', '\t'), 40))).toEqual([['{"a":1}\r']]);
  });

  it('[kube_client: frames as bytes] watchFrameBatches streams a WATCH as byte frames: same request and teardown as watchLines', async () => {
    const fake = new FakeTransport();
    const client = new KubeClient({
      server: 'https://k8s.test',
      transport: fake.transport,
      clock: new ManualClock(0),
      rateLimit: false,
    });
    const pods = client.resource(podResource, podSchema).inNamespace('d');
    const frame = (name: string) =>
      `${JSON.stringify({ type: 'ADDED', object: { metadata: { name, namespace: 'd', resourceVersion: '1' } } })}\n`;
    const body = Buffer.from(frame('ü-a') + frame('b'));
    const cut = body.indexOf(0xc3) + 1; // inside the two bytes of ü
    fake.next({ chunks: [body.subarray(0, cut), body.subarray(cut)] });
    const batches: string[][] = [];
    for await (const batch of pods.watchFrameBatches({ resourceVersion: '5', timeoutSeconds: 30 }))
      batches.push(batch.map((f) => Buffer.from(f).toString()));
    expect(batches).toEqual([[frame('ü-a').trimEnd(), frame('b').trimEnd()]]);
    expect(Object.fromEntries(fake.requests[0]!.query)).toEqual({
      watch: 'true',
      resourceVersion: '5',
      timeoutSeconds: '30',
      allowWatchBookmarks: 'true',
    });
    expect(fake.closed).toBe(1);
    fake.next({ chunks: ['x'.repeat(70)] });
    const capped = new KubeClient({
      server: 'https://k8s.test',
      transport: fake.transport,
      clock: new ManualClock(0),
      rateLimit: false,
      maxFrameBytes: 64,
    });
    const stream = capped.streamFrameBatches({ verb: 'watch', method: 'GET', path: '/api/v1/pods' });
    await expect(stream.next()).rejects.toMatchObject({ code: 'RL_KUBE_WATCH_FRAME_TOO_LARGE', maxFrameBytes: 64 });
    expect(fake.closed).toBe(2);
  });
});
