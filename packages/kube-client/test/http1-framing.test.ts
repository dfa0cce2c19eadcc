import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyFramer, headEnd, HttpFramingError, parseHead, type ResponseHead } from '../src/http/http1-framing.js';

const head = (status: number, headers: Record<string, string> = {}): ResponseHead => ({
  status,
  headers: new Map(Object.entries(headers)),
});

/** Feeds `wire` to a framer cut at `cuts`; the body pieces joined, whether the framer said done, and where. */
function feed(
  framerHead: ResponseHead,
  wire: Uint8Array,
  cuts: readonly number[],
  ended = false,
): { body: Buffer; done: boolean; error?: string } {
  const framer = bodyFramer(framerHead);
  const pieces: Buffer[] = [];
  const points = [...new Set(cuts.map((cut) => cut % (wire.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  try {
    for (const end of [...points, wire.length]) {
      // Each read in memory of its own, overwritten once fed: a piece must be used before the next read.
      const read = new Uint8Array(wire.subarray(start, end));
      const done = framer.feed(read, 0, read.length, (piece) => pieces.push(Buffer.from(piece)));
      read.fill(0x21);
      start = end;
      if (done) return { body: Buffer.concat(pieces), done: true };
    }
    if (ended) framer.end();
  } catch (error) {
    return { body: Buffer.concat(pieces), done: false, error: (error as HttpFramingError).code };
  }
  return { body: Buffer.concat(pieces), done: false };
}

/** A chunked encoding of `body` cut into `sizes`, with extensions and trailers. */
function chunkedWire(
  body: Buffer,
  sizes: readonly number[],
  extension: string,
  trailers: readonly string[],
  upper: boolean,
): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    if (at >= body.length) break;
    const piece = body.subarray(at, at + Math.max(1, size));
    at += piece.length;
    const hex = piece.length.toString(16);
    parts.push(Buffer.from(`${upper ? hex.toUpperCase() : hex}${extension}\r\n`), piece, Buffer.from('\r\n'));
  }
  if (at < body.length) parts.push(Buffer.from(`${(body.length - at).toString(16)}\r\n`), body.subarray(at), Buffer.from('\r\n'));
  parts.push(Buffer.from(`0\r\n${trailers.map((t) => `${t}\r\n`).join('')}\r\n`));
  return Buffer.concat(parts);
}

describe('[kube_client: watch socket] HTTP/1.1 response framing', () => {
  it('[kube_client: watch socket] property: a chunked body, cut into any reads, comes out whole, and the framer is done exactly at its end', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.array(fc.integer({ min: 1, max: 70 }), { maxLength: 10 }),
        fc.constantFrom('', ';name=value', ' ;x', '\t;a="b"'),
        fc.array(fc.constantFrom('X-Trailer: 1', 'Checksum: abc'), { maxLength: 2 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        (body, sizes, extension, trailers, upper, cuts) => {
          const wire = chunkedWire(Buffer.from(body), sizes, extension, trailers, upper);
          // Bytes after the body (a pipelined response) are not body.
          const withTail = Buffer.concat([wire, Buffer.from('HTTP/1.1 200 OK\r\n')]);
          expect(feed(head(200, { 'transfer-encoding': 'chunked' }), withTail, cuts)).toEqual({
            body: Buffer.from(body),
            done: true,
          });
          // Cut anywhere before its last byte, the body is incomplete: the end of the connection is an error.
          const cut = wire.subarray(0, wire.length - 1 - ((cuts[0] ?? 0) % wire.length));
          expect(feed(head(200, { 'transfer-encoding': 'chunked' }), cut, cuts, true)).toMatchObject({
            done: false,
            error: 'ECONNRESET',
          });
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("[kube_client: watch socket] a broken chunked body fails with llhttp's code: a bad size, a size past 2^52, no CRLF after data, an endless extension", () => {
    const chunked = head(200, { 'transfer-encoding': 'chunked' });
    expect(feed(chunked, Buffer.from('zz\r\nab\r\n'), []).error).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(feed(chunked, Buffer.from(';x\r\n'), []).error).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(feed(chunked, Buffer.from('-1\r\n'), []).error).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(feed(chunked, Buffer.from(`${'f'.repeat(14)}\r\n`), []).error).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(feed(chunked, Buffer.from('2\r\nabXY'), []).error).toBe('HPE_STRICT');
    expect(feed(chunked, Buffer.from('2\nab\r\n'), []).error).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(feed(chunked, Buffer.from('2\r\rab\r\n'), []).error).toBe('HPE_STRICT');
    expect(feed(chunked, Buffer.from(`2;${'x'.repeat(5000)}`), []).error).toBe('HPE_CHUNK_EXTENSIONS_OVERFLOW');
    expect(feed(chunked, Buffer.from(`0\r\n${'x'.repeat(20_000)}`), []).error).toBe('HPE_HEADER_OVERFLOW');
  });

  it('[kube_client: watch socket] Content-Length, no length, and bodiless statuses: as RFC 9112 §6.3 picks the framing', () => {
    const wire = Buffer.from('{"kind":"Status"}trailing');
    expect(feed(head(410, { 'content-length': '17' }), wire, [3, 9])).toEqual({
      body: Buffer.from('{"kind":"Status"}'),
      done: true,
    });
    expect(feed(head(500, { 'content-length': '17, 17' }), wire, [])).toMatchObject({ done: true });
    expect(feed(head(200, { 'content-length': '40' }), wire, [5], true)).toMatchObject({ done: false, error: 'ECONNRESET' });
    expect(() => bodyFramer(head(200, { 'content-length': '1, 2' }))).toThrow(
      expect.objectContaining({ code: 'HPE_INVALID_CONTENT_LENGTH' }),
    );
    expect(() => bodyFramer(head(200, { 'content-length': '-3' }))).toThrow(
      expect.objectContaining({ code: 'HPE_INVALID_CONTENT_LENGTH' }),
    );
    // Neither: the body runs to the end of the connection, which is then no error.
    expect(feed(head(200), wire, [4], true)).toEqual({ body: wire, done: false });
    // A transfer coding other than chunked last: to the end of the connection too.
    expect(feed(head(200, { 'transfer-encoding': 'chunked, gzip', 'content-length': '2' }), wire, [], true)).toEqual({
      body: wire,
      done: false,
    });
    for (const status of [204, 304])
      expect(bodyFramer(head(status, { 'content-length': '5' })).feed(wire, 0, wire.length, () => expect.unreachable())).toBe(
        true,
      );
    expect(feed(head(200, { 'content-length': '0' }), wire, [])).toEqual({ body: Buffer.alloc(0), done: true });
  });

  it('[kube_client: watch socket] the head: status, lower-cased names, repeated headers joined; a bad status line, header name or folded line is refused', () => {
    const text =
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nWarning: 299 - "a"\r\nwarning:  299 - "b" \r\nX-Empty:\r\n\r\n';
    const bytes = Buffer.from(`${text}{"body"`);
    expect(headEnd(bytes, 0)).toBe(text.length);
    expect(headEnd(bytes.subarray(0, text.length - 1), 0)).toBe(-1);
    const parsed = parseHead(bytes.subarray(0, text.length));
    expect(parsed.status).toBe(200);
    expect(Object.fromEntries(parsed.headers)).toEqual({
      'content-type': 'application/json',
      warning: '299 - "a", 299 - "b"',
      'x-empty': '',
    });
    expect(parseHead(Buffer.from('HTTP/1.0 410\r\n\r\n')).status).toBe(410);
    for (const bad of ['HTTP/2 200 OK\r\n\r\n', 'ICY 200 OK\r\n\r\n', 'HTTP/1.1 20 OK\r\n\r\n']) {
      expect(() => parseHead(Buffer.from(bad))).toThrow(expect.objectContaining({ code: 'HPE_INVALID_CONSTANT' }));
    }
    for (const bad of [
      'HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n',
      'HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n',
      'HTTP/1.1 200 OK\r\n: x\r\n\r\n',
      'HTTP/1.1 200 OK\r\nA: x\ny\r\n\r\n',
    ]) {
      expect(() => parseHead(Buffer.from(bad))).toThrow(HttpFramingError);
    }
  });
});
