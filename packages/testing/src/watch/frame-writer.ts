import type { ServerResponse } from 'node:http';

/**
 * Frames joined into one `res.write` stop growing past this many characters (a single larger
 * frame goes alone). Large enough that a backlog goes out in a few hundred writes, small enough
 * that the string joined for a write stays small next to the frames it copies.
 */
export const COALESCE_CHARS = 256 * 1024;

/**
 * The byte side of one watch: newline-terminated frames, coalesced and paced by the socket.
 *
 * Invariants kept:
 * - Order and content: frames leave in the order pushed, each followed by one `\n`; only the
 *   chunked encoding's chunk boundaries differ from one write per frame (clients read a byte
 *   stream, and the chunk framing is the transport's).
 * - Coalescing: frames pushed in one tick leave together on the next tick (the same tick Node's
 *   own per-tick cork would have flushed them), joined into writes of about {@link COALESCE_CHARS}.
 * - Pacing: once `res.write` reports a full socket, nothing more is handed to the response until
 *   it drains; the frames wait here as references (history frames are cached strings shared by
 *   every watcher), not as copies inside the socket's buffer.
 * - Memory: {@link unsentBytes} counts both, so a bound on it (the watch's slow-client limit)
 *   bounds the same bytes it bounded when every frame was written at once.
 * - Ending: {@link end} hands every queued frame to the response before ending it, so a clean
 *   end (timeout, ERROR frame, slow-watcher close, `dropWatches`) still delivers all that was
 *   sent before it; {@link discard} (client gone, socket reset) drops them.
 */
export class FrameWriter {
  private queue: string[] = [];
  /** Index of the first frame of `queue` not yet handed to the response. */
  private head = 0;
  /** Characters queued and not yet handed to the response, newlines included. */
  private queuedChars = 0;
  private scheduled = false;
  private awaitingDrain = false;
  private done = false;

  constructor(private readonly res: ServerResponse) {
    res.on('drain', () => {
      this.awaitingDrain = false;
      this.pump();
    });
  }

  /** Characters not yet on the wire: queued here plus what the response and its socket still hold. */
  get unsentBytes(): number {
    return this.queuedChars + this.res.writableLength;
  }

  /** Queues one frame (without its newline); it leaves on the next tick, or once the socket drains. */
  push(line: string): void {
    if (this.done) return;
    this.queue.push(line);
    this.queuedChars += line.length + 1;
    if (this.scheduled || this.awaitingDrain) return;
    this.scheduled = true;
    process.nextTick(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Writes while the socket takes it; stops at the first full write and resumes on `drain`. */
  private pump(): void {
    while (!this.done && !this.awaitingDrain && this.head < this.queue.length) {
      if (!this.res.write(this.take())) this.awaitingDrain = true;
    }
    this.compact();
  }

  /** Removes the next run of frames (at least one, about {@link COALESCE_CHARS}) as one newline-terminated string. */
  private take(): string {
    const parts: string[] = [];
    let chars = 0;
    while (this.head < this.queue.length && (parts.length === 0 || chars + this.queue[this.head]!.length < COALESCE_CHARS)) {
      const line = this.queue[this.head++]!;
      parts.push(line);
      chars += line.length + 1;
    }
    this.queuedChars -= chars;
    // A trailing empty part makes join end with the last frame's newline.
    parts.push('');
    return parts.join('\n');
  }

  /** Drops the frames already handed over from the front of the queue, without copying it per frame. */
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** Hands every queued frame to the response (ignoring backpressure, as an end must), then ends it. */
  end(): void {
    if (this.done) return;
    if (!this.res.destroyed) while (this.head < this.queue.length) this.res.write(this.take());
    this.finish();
    this.res.end();
  }

  /** Forgets queued frames: the response is gone or is being reset. */
  discard(): void {
    this.finish();
  }

  private finish(): void {
    this.done = true;
    this.queue = [];
    this.head = 0;
    this.queuedChars = 0;
  }
}
