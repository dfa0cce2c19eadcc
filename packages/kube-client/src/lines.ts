import { StringDecoder } from 'node:string_decoder';
import { KubeProtocolError, WatchFrameTooLargeError } from './errors.js';

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
export async function* splitLines(chunks: AsyncIterable<Uint8Array | string>, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): AsyncGenerator<string, void, undefined> {
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
export async function* splitLineBatches(chunks: AsyncIterable<Uint8Array | string>, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): AsyncGenerator<string[], void, undefined> {
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
