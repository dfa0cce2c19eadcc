/**
 * HTTP/1.1 response framing for {@link openWatchStream}: the status line and headers, then the body
 * as `Transfer-Encoding: chunked`, a `Content-Length`, or everything up to the end of the
 * connection (RFC 9112 §6.3). Pure functions over bytes, so each rule is tested without a socket.
 *
 * Errors carry the `code` node:http's parser (llhttp) gives the same fault, so the client maps a
 * broken response exactly as it maps one node:http refused: a {@link KubeTransportError}.
 */

/** A broken HTTP/1.1 response; `code` as llhttp names the fault (`HPE_…`). */
export class HttpFramingError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'HttpFramingError';
    this.code = code;
  }
}

/** node:http's default `maxHeaderSize` (16 KiB), the cap on a response's status line and headers. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Cap on one chunk-size line with its extensions, and on the trailer section. */
const MAX_LINE_BYTES = 4096;
/** 13 hex digits (2^52): a chunk size stays an exact integer. */
const MAX_SIZE_DIGITS = 13;

const CR = 0x0d;
const LF = 0x0a;

/** A response's status and headers (names lower-cased; repeated headers joined with `, `). */
export interface ResponseHead {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: [^\r\n]*)?$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Where the head ends in `bytes` (the index just past its blank line), searching from `from`, or
 * -1 when the blank line has not arrived yet.
 */
export function headEnd(bytes: Uint8Array, from: number): number {
  for (let i = Math.max(from, 3); i < bytes.length; i++) {
    if (bytes[i] === LF && bytes[i - 1] === CR && bytes[i - 2] === LF && bytes[i - 3] === CR) return i + 1;
  }
  return -1;
}

/** Parses a complete head (status line, header lines, the blank line). */
export function parseHead(bytes: Uint8Array): ResponseHead {
  const lines = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1').split('\r\n');
  const status = STATUS_LINE.exec(lines[0]!);
  if (status === null)
    throw new HttpFramingError('HPE_INVALID_CONSTANT', `not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
  const headers = new Map<string, string>();
  // The split leaves two empty strings for the blank line that ends the head.
  for (let i = 1; i < lines.length - 2; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    // Also refuses obsolete line folding (a line starting with a space), as llhttp does by default.
    if (!TOKEN.test(name))
      throw new HttpFramingError('HPE_INVALID_HEADER_TOKEN', `invalid header line: ${JSON.stringify(line.slice(0, 80))}`);
    if (/[\0\n\r]/.test(line)) throw new HttpFramingError('HPE_INVALID_HEADER_TOKEN', `invalid character in header ${name}`);
    const key = name.toLowerCase();
    const value = line.slice(colon + 1).trim();
    const earlier = headers.get(key);
    headers.set(key, earlier === undefined ? value : `${earlier}, ${value}`);
  }
  return { status: Number(status[1]), headers };
}

/** Receives each piece of body the framer finds: a view on the bytes it was fed, never a copy. */
export type BodySink = (piece: Uint8Array) => void;

/** How a response's body is delimited; fed the bytes after the head as they arrive. */
export interface BodyFramer {
  /** Hands `bytes[from, to)` to `sink` as body pieces; true once the body is complete (later bytes are not body). */
  feed(bytes: Uint8Array, from: number, to: number, sink: BodySink): boolean;
  /** The connection ended: throws when that cuts the body short. */
  end(): void;
}

/**
 * The framer RFC 9112 §6.3 picks for a response to a GET: none for 1xx, 204 and 304; chunked when
 * it is the last transfer coding; to the end of the connection for any other transfer coding;
 * else by a `Content-Length`; else to the end of the connection.
 */
export function bodyFramer(head: ResponseHead): BodyFramer {
  if (head.status < 200 || head.status === 204 || head.status === 304) return new LengthFramer(0);
  const coding = head.headers.get('transfer-encoding');
  if (coding !== undefined) {
    const codings = coding.split(',');
    return codings[codings.length - 1]!.trim().toLowerCase() === 'chunked' ? new ChunkedFramer() : new CloseFramer();
  }
  const length = head.headers.get('content-length');
  if (length === undefined) return new CloseFramer();
  const values = new Set(length.split(',').map((v) => v.trim()));
  const [only] = values;
  if (values.size !== 1 || !/^\d{1,15}$/.test(only!))
    throw new HttpFramingError('HPE_INVALID_CONTENT_LENGTH', `invalid Content-Length: ${JSON.stringify(length.slice(0, 80))}`);
  return new LengthFramer(Number(only));
}

function cutShort(): HttpFramingError {
  // What node:http reports for a response body cut by the peer.
  return new HttpFramingError('ECONNRESET', 'aborted: the connection ended in the middle of the response body');
}

class LengthFramer implements BodyFramer {
  #left: number;
  constructor(length: number) {
    this.#left = length;
  }
  feed(bytes: Uint8Array, from: number, to: number, sink: BodySink): boolean {
    const take = Math.min(this.#left, to - from);
    if (take > 0) sink(bytes.subarray(from, from + take));
    this.#left -= take;
    return this.#left === 0;
  }
  end(): void {
    if (this.#left > 0) throw cutShort();
  }
}

class CloseFramer implements BodyFramer {
  feed(bytes: Uint8Array, from: number, to: number, sink: BodySink): boolean {
    if (to > from) sink(bytes.subarray(from, to));
    return false;
  }
  end(): void {}
}

/** The chunked framer's states (where in the grammar the next byte falls). */
const Chunk = {
  Size: 0,
  Extension: 1,
  SizeLf: 2,
  Data: 3,
  DataCr: 4,
  DataLf: 5,
  TrailerStart: 6,
  TrailerLine: 7,
  TrailerLineLf: 8,
  EndLf: 9,
  Done: 10,
} as const;
type ChunkState = (typeof Chunk)[keyof typeof Chunk];

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/**
 * `Transfer-Encoding: chunked`: size line (hex, optional extensions), data, CRLF, … a zero size,
 * optional trailer lines, a blank line. The data of a chunk is handed on in the pieces it arrives
 * in; the framing bytes between chunks are checked one at a time (a few per chunk).
 */
class ChunkedFramer implements BodyFramer {
  #state: ChunkState = Chunk.Size;
  #size = 0;
  #digits = 0;
  /** Bytes of the current size line or of the trailer section, against {@link MAX_LINE_BYTES}. */
  #lineBytes = 0;

  feed(bytes: Uint8Array, from: number, to: number, sink: BodySink): boolean {
    let i = from;
    while (i < to) {
      if (this.#state === Chunk.Data) {
        const take = Math.min(this.#size, to - i);
        sink(bytes.subarray(i, i + take));
        this.#size -= take;
        i += take;
        if (this.#size === 0) this.#state = Chunk.DataCr;
        continue;
      }
      this.#step(bytes[i++]!);
      if (this.#state === Chunk.Done) return true;
    }
    return false;
  }

  #step(byte: number): void {
    switch (this.#state) {
      case Chunk.Size: {
        const digit = hexValue(byte);
        if (digit >= 0) {
          if (++this.#digits > MAX_SIZE_DIGITS) throw new HttpFramingError('HPE_INVALID_CHUNK_SIZE', 'chunk size too large');
          this.#size = this.#size * 16 + digit;
          this.#lineBytes++;
        } else if (this.#digits > 0 && (byte === 0x3b || byte === 0x20 || byte === 0x09)) {
          this.#state = Chunk.Extension;
        } else if (this.#digits > 0 && byte === CR) {
          this.#state = Chunk.SizeLf;
        } else throw new HttpFramingError('HPE_INVALID_CHUNK_SIZE', 'invalid character in chunk size');
        return;
      }
      case Chunk.Extension:
        if (byte === CR) this.#state = Chunk.SizeLf;
        else if (byte === LF || ++this.#lineBytes > MAX_LINE_BYTES)
          throw new HttpFramingError('HPE_CHUNK_EXTENSIONS_OVERFLOW', 'invalid chunk extension');
        return;
      case Chunk.SizeLf:
        this.#expect(byte, LF, this.#size === 0 ? Chunk.TrailerStart : Chunk.Data, 'LF after chunk size');
        this.#digits = 0;
        this.#lineBytes = 0;
        return;
      case Chunk.DataCr:
        this.#expect(byte, CR, Chunk.DataLf, 'CRLF after chunk data');
        return;
      case Chunk.DataLf:
        this.#expect(byte, LF, Chunk.Size, 'CRLF after chunk data');
        return;
      case Chunk.TrailerStart:
        this.#state = byte === CR ? Chunk.EndLf : Chunk.TrailerLine;
        this.#countTrailer();
        return;
      case Chunk.TrailerLine:
        if (byte === CR) this.#state = Chunk.TrailerLineLf;
        this.#countTrailer();
        return;
      case Chunk.TrailerLineLf:
        this.#expect(byte, LF, Chunk.TrailerStart, 'LF in trailer');
        return;
      case Chunk.EndLf:
        this.#expect(byte, LF, Chunk.Done, 'LF at the end of the chunked body');
        return;
    }
  }

  /** A framing byte that must be `want`; then the framer is in state `next`. */
  #expect(byte: number, want: number, next: ChunkState, what: string): void {
    if (byte !== want) throw new HttpFramingError('HPE_STRICT', `expected ${what}`);
    this.#state = next;
  }

  #countTrailer(): void {
    if (++this.#lineBytes > MAX_HEAD_BYTES) throw new HttpFramingError('HPE_HEADER_OVERFLOW', 'trailer section too large');
  }

  end(): void {
    if (this.#state !== Chunk.Done) throw cutShort();
  }
}
