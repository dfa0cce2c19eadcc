import type { ServerResponse } from 'node:http';

/**
 * Bytes joined into one `res.write` stop growing once they reach this size (a single larger piece
 * goes alone, uncopied). Large enough that a backlog goes out in a few hundred writes, small
 * enough that the buffer allocated for a write stays small next to the frames it copies.
 */
export const COALESCE_BYTES = 256 * 1024;

/**
 * A full write is copied into a reused buffer of this size (a run of pieces never exceeds it unless
 * one piece alone does, and that piece is written as it is). Reuse matters: a fresh 256 KB buffer
 * per write made a backlog churn its size in external memory, and the collector's work on a server
 * holding hundreds of MB of history cost more than the copies.
 */
const SLAB_BYTES = 2 * COALESCE_BYTES;
/** Slabs a writer keeps for reuse; released once its queue runs empty, so an idle watch holds none. */
const MAX_SPARE_SLABS = 2;

/**
 * The byte side of one watch: newline-terminated frames, coalesced and paced by the socket.
 *
 * Invariants kept:
 * - Order and content: bytes leave in the order pushed; only the chunked encoding's chunk
 *   boundaries differ from one write per frame (clients read a byte stream, and the chunk
 *   framing is the transport's).
 * - Coalescing: frames pushed in one tick leave together on the next tick (the same tick Node's
 *   own per-tick cork would have flushed them), copied into writes of about {@link COALESCE_BYTES}.
 * - Pacing: once `res.write` reports a full socket, nothing more is handed to the response until
 *   it drains; the frames wait here as references (a stored object's bytes are shared by every
 *   watcher, see engine/serialized.ts), not as copies inside the socket's buffer.
 * - Memory: {@link unsentBytes} counts both, so a bound on it (the watch's slow-client limit)
 *   bounds the same bytes it bounded when every frame was written at once.
 * - Ending: {@link end} hands every queued frame to the response before ending it, so a clean
 *   end (timeout, ERROR frame, slow-watcher close, `dropWatches`) still delivers all that was
 *   sent before it; {@link discard} (client gone, socket reset) drops them.
 */
export class FrameWriter {
  #queue: Buffer[] = [];
  /** Index of the first piece of `queue` not yet handed to the response. */
  #head = 0;
  /** Bytes queued and not yet handed to the response. */
  #queuedBytes = 0;
  #scheduled = false;
  #awaitingDrain = false;
  #done = false;
  /** Slabs the socket has finished with, ready for the next full write. */
  #spare: Buffer[] = [];

  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
    res.on('drain', () => {
      this.#awaitingDrain = false;
      this.#pump();
    });
  }

  /** Bytes not yet on the wire: queued here plus what the response and its socket still hold. */
  get unsentBytes(): number {
    return this.#queuedBytes + this.#res.writableLength;
  }

  /** Queues one frame given as pieces of bytes, its newline included; it leaves on the next tick, or once the socket drains. */
  push(pieces: readonly Buffer[]): void {
    if (this.#done) return;
    for (const p of pieces) {
      this.#queue.push(p);
      this.#queuedBytes += p.length;
    }
    if (this.#scheduled || this.#awaitingDrain) return;
    this.#scheduled = true;
    process.nextTick(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  /** Writes while the socket takes it; stops at the first full write and resumes on `drain`. */
  #pump(): void {
    while (!this.#done && !this.#awaitingDrain && this.#head < this.#queue.length) {
      if (!this.#writeNext()) this.#awaitingDrain = true;
    }
    this.#compact();
  }

  /**
   * Writes the next run of pieces (at least one; about {@link COALESCE_BYTES}, never more than
   * {@link SLAB_BYTES} unless one piece alone is) as one chunk. Returns `res.write`'s answer.
   */
  #writeNext(): boolean {
    const start = this.#head;
    let bytes = 0;
    while (this.#head < this.#queue.length) {
      const n = this.#queue[this.#head]!.length;
      if (bytes > 0 && bytes + n > SLAB_BYTES) break;
      bytes += n;
      this.#head++;
      if (bytes >= COALESCE_BYTES) break;
    }
    this.#queuedBytes -= bytes;
    if (this.#head - start === 1) return this.#res.write(this.#queue[start]!);
    if (bytes < COALESCE_BYTES) return this.#res.write(Buffer.concat(this.#queue.slice(start, this.#head), bytes));
    const slab = this.#spare.pop() ?? Buffer.allocUnsafe(SLAB_BYTES);
    let at = 0;
    for (let i = start; i < this.#head; i++) at += this.#queue[i]!.copy(slab, at);
    // The socket is done with the slab once this chunk's write completed: it may then be refilled.
    return this.#res.write(slab.subarray(0, at), () => {
      if (!this.#done && this.#spare.length < MAX_SPARE_SLABS) this.#spare.push(slab);
    });
  }

  /** Drops the pieces already handed over from the front of the queue, without copying it per piece. */
  #compact(): void {
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      this.#spare = [];
    } else if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Hands every queued frame to the response (ignoring backpressure, as an end must), then ends it. */
  end(): void {
    if (this.#done) return;
    // Every slab written here stays in the response until sent: none may be reused meanwhile.
    this.#spare = [];
    if (!this.#res.destroyed) while (this.#head < this.#queue.length) this.#writeNext();
    this.#finish();
    this.#res.end();
  }

  /** Forgets queued frames: the response is gone or is being reset. */
  discard(): void {
    this.#finish();
  }

  #finish(): void {
    this.#done = true;
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#spare = [];
  }
}
