import { StringDecoder } from 'node:string_decoder';
import { KubeProtocolError, WatchFrameTooLargeError } from '../errors.js';

/**
 * The default cap on one watch frame: apimachinery's streaming decoder refuses objects over 16 MiB,
 * and etcd stores at most ~1.5 MiB per object, so a longer line is a broken stream, not an object.
 */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

const NEWLINE = 0x0a;

function toBuffer(chunk: Uint8Array | string): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/**
 * Splits a watch body into its lines (one JSON frame each), whatever the chunking. Each chunk is
 * decoded once (a character cut across chunks is held back by the decoder and decoded whole) and
 * split on `\n` as text, while the same newlines are found in the bytes to count each frame's
 * length exactly: `\n` never occurs inside a multi-byte UTF-8 sequence, so the n-th newline of the
 * text is the n-th newline of the bytes. Blank lines are dropped.
 *
 * Throws {@link WatchFrameTooLargeError} as soon as a pending frame exceeds `maxFrameBytes` (memory
 * stays bounded by the cap), and {@link KubeProtocolError} when the body ends inside a frame: the
 * apiserver ends every frame with a newline, so a remainder means the connection was cut.
 */
export async function* splitLines(
  chunks: AsyncIterable<Uint8Array | string>,
  maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
): AsyncGenerator<string, void, undefined> {
  for await (const batch of splitLineBatches(chunks, maxFrameBytes)) {
    for (const line of batch) yield line;
  }
}

/**
 * {@link splitLines}, one batch per chunk read: the lines each chunk completes, in order, as one
 * array (never empty). A reader that handles the frames of one socket read together pays one
 * promise hop per read instead of one per frame. Errors are thrown at the same points, after the
 * batch of the lines completed before them.
 */
export async function* splitLineBatches(
  chunks: AsyncIterable<Uint8Array | string>,
  maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
): AsyncGenerator<string[], void, undefined> {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let partialBytes = 0;
  for await (const raw of chunks) {
    const bytes = toBuffer(raw);
    const text = decoder.write(bytes);
    const batch: string[] = [];
    let start = 0;
    let byteStart = 0;
    let end = text.indexOf('\n');
    let byteEnd = bytes.indexOf(NEWLINE);
    while (end !== -1) {
      if (partialBytes + (byteEnd - byteStart) > maxFrameBytes) {
        if (batch.length > 0) yield batch;
        throw new WatchFrameTooLargeError(maxFrameBytes);
      }
      const line = partial === '' ? text.slice(start, end) : partial + text.slice(start, end);
      partial = '';
      partialBytes = 0;
      // A JSON frame starts with `{`: only a line starting with whitespace needs the trim.
      if (line.length > 0 && (line.charCodeAt(0) > 32 || line.trim() !== '')) batch.push(line);
      start = end + 1;
      byteStart = byteEnd + 1;
      end = text.indexOf('\n', start);
      byteEnd = bytes.indexOf(NEWLINE, byteStart);
    }
    if (batch.length > 0) yield batch;
    // Bytes the decoder holds back (a cut character) count towards the pending frame already.
    partialBytes += bytes.length - byteStart;
    if (partialBytes > maxFrameBytes) throw new WatchFrameTooLargeError(maxFrameBytes);
    if (start < text.length) partial += text.slice(start);
  }
  partial += decoder.end();
  if (partial.trim() !== '') throw new KubeProtocolError('watch stream ended in the middle of a frame');
}

/**
 * True when `bytes` decode to nothing but what `String.prototype.trim` removes, so a line is
 * dropped exactly when {@link splitLineBatches} drops its text. Read from the UTF-8 encodings of
 * ECMAScript's WhiteSpace and LineTerminator code points; any other byte (an invalid sequence
 * included, which decodes to U+FFFD) makes the line not blank. Only reached for a line whose first
 * byte is <= 0x20: a JSON frame starts with `{`.
 */
function isBlank(bytes: Uint8Array): boolean {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i]!;
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) {
      i += 1;
      continue;
    }
    const b1 = bytes[i + 1];
    const b2 = bytes[i + 2];
    if (b === 0xc2 && b1 === 0xa0) {
      i += 2; // U+00A0
      continue;
    }
    const threeByte =
      (b === 0xe1 && b1 === 0x9a && b2 === 0x80) || // U+1680
      (b === 0xe2 && b1 === 0x80 && b2 !== undefined && (b2 <= 0x8a ? b2 >= 0x80 : b2 === 0xa8 || b2 === 0xa9 || b2 === 0xaf)) || // U+2000–200A, 2028, 2029, 202F
      (b === 0xe2 && b1 === 0x81 && b2 === 0x9f) || // U+205F
      (b === 0xe3 && b1 === 0x80 && b2 === 0x80) || // U+3000
      (b === 0xef && b1 === 0xbb && b2 === 0xbf); // U+FEFF
    if (!threeByte) return false;
    i += 3;
  }
  return true;
}

/**
 * The one copy of a frame that spans chunks, into an `ArrayBuffer` of exactly its length: not
 * `Buffer.concat`, whose small results are slices of Node's shared allocation pool, so a frame kept
 * by its reader would keep that whole pool slab alive with it.
 */
function concatParts(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = Buffer.allocUnsafeSlow(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * {@link splitLineBatches} without decoding: one batch per chunk read, each item the bytes of one
 * line (one JSON frame) without its `\n`, for a reader that parses frames from their UTF-8 bytes
 * (k8s-types' `parseWatchFrame`). A line lying inside one chunk is a `subarray` of that chunk (no
 * copy); a line spanning chunks is assembled, from copies of its parts, into memory of its own.
 *
 * The same lines, batches and errors as {@link splitLineBatches} on the same chunks: each item is
 * the UTF-8 encoding of the line that one yields (for a body that is valid UTF-8, as the
 * apiserver writes it), blank and whitespace-only lines are dropped by the same rule,
 * {@link WatchFrameTooLargeError} is thrown as soon as a pending frame exceeds `maxFrameBytes`,
 * and {@link KubeProtocolError} when the body ends inside a frame, each after the batch of the
 * lines completed before it.
 *
 * A chunk is read only until the next one is asked for, so its memory may be reused then (a
 * watch's transport reads every chunk into one buffer, `TransportRequest.stream`), and a batch's
 * lines are valid until the next batch is asked for: a reader that keeps a line copies it. The
 * reflector parses every line of a batch before asking for the next.
 */
export async function* splitFrameBatches(
  chunks: AsyncIterable<Uint8Array | string>,
  maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
): AsyncGenerator<Uint8Array[], void, undefined> {
  // The unfinished frame's parts, each copied when its chunk is done: a chunk's memory may be reused
  // once the next one is read (`TransportRequest.stream`). Memory stays bounded by the cap.
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  for await (const raw of chunks) {
    const bytes = toBuffer(raw);
    const batch: Uint8Array[] = [];
    let start = 0;
    let end = bytes.indexOf(NEWLINE);
    while (end !== -1) {
      const length = pendingBytes + (end - start);
      if (length > maxFrameBytes) {
        if (batch.length > 0) yield batch;
        throw new WatchFrameTooLargeError(maxFrameBytes);
      }
      let line: Uint8Array;
      if (pending.length === 0) line = bytes.subarray(start, end);
      else {
        pending.push(bytes.subarray(start, end));
        line = concatParts(pending, length);
        pending = [];
        pendingBytes = 0;
      }
      // A JSON frame starts with `{`: only a line whose first byte is a control or a space needs the check.
      if (line.length > 0 && (line[0]! > 0x20 || !isBlank(line))) batch.push(line);
      start = end + 1;
      end = bytes.indexOf(NEWLINE, start);
    }
    if (batch.length > 0) yield batch;
    pendingBytes += bytes.length - start;
    if (pendingBytes > maxFrameBytes) throw new WatchFrameTooLargeError(maxFrameBytes);
    if (start < bytes.length) pending.push(new Uint8Array(bytes.subarray(start)));
  }
  if (pending.length > 0 && !isBlank(concatParts(pending, pendingBytes)))
    throw new KubeProtocolError('watch stream ended in the middle of a frame');
}
