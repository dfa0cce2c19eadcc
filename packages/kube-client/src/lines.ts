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
 * Splits a watch body into its lines (one JSON frame each), whatever the chunking. The split is on
 * bytes: `\n` never occurs inside a multi-byte UTF-8 sequence, so a character cut across chunks is
 * decoded whole, and the cap counts bytes exactly. Blank lines are dropped.
 *
 * Throws {@link WatchFrameTooLargeError} as soon as a pending frame exceeds `maxFrameBytes` (memory
 * stays bounded by the cap), and {@link KubeProtocolError} when the body ends inside a frame: the
 * apiserver ends every frame with a newline, so a remainder means the connection was cut.
 */
export async function* splitLines(chunks: AsyncIterable<Uint8Array | string>, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): AsyncGenerator<string, void, undefined> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const raw of chunks) {
    const chunk = toBuffer(raw);
    let start = 0;
    let end = chunk.indexOf(NEWLINE);
    while (end !== -1) {
      const piece = chunk.subarray(start, end);
      if (pendingBytes + piece.length > maxFrameBytes) throw new WatchFrameTooLargeError(maxFrameBytes);
      let line: string;
      if (pending.length === 0) {
        line = piece.toString('utf8');
      } else {
        pending.push(piece);
        line = Buffer.concat(pending, pendingBytes + piece.length).toString('utf8');
        pending = [];
        pendingBytes = 0;
      }
      if (line.trim() !== '') yield line;
      start = end + 1;
      end = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      pendingBytes += rest.length;
      if (pendingBytes > maxFrameBytes) throw new WatchFrameTooLargeError(maxFrameBytes);
      pending.push(rest);
    }
  }
  if (pending.length > 0 && Buffer.concat(pending).toString('utf8').trim() !== '') {
    throw new KubeProtocolError('watch stream ended in the middle of a frame');
  }
}
