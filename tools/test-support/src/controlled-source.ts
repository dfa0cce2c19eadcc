import type { Source, SourceEvent } from '@reconcile-loop/object-store';
import type { BackoffPolicy } from '@reconcile-loop/primitives';

/** One stream opened on a {@link ControlledSource}; the test pushes, ends or fails it. */
export class ControlledStream<T> implements AsyncIterator<SourceEvent<T>> {
  readonly #buffer: SourceEvent<T>[] = [];
  #ended = false;
  #error: unknown;
  #wake: (() => void) | undefined;
  /** True once `return()` was called. */
  closed = false;
  /** When set, `return()` rejects with it. */
  closeError: unknown;

  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', () => this.#wake?.(), { once: true });
  }

  /** Queues source events; buffered ones are delivered before an end or failure. */
  push(...events: SourceEvent<T>[]): void {
    this.#buffer.push(...events);
    this.#wake?.();
  }

  /** Ends the stream once the buffer is drained. */
  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  /** Makes `next()` reject with `error` once the buffer is drained. */
  fail(error: unknown): void {
    this.#ended = true;
    this.#error = error;
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<SourceEvent<T>>> {
    for (;;) {
      const event = this.#buffer.shift();
      if (event !== undefined) return { done: false, value: event };
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended || this.closed || this.signal.aborted) return { done: true, value: undefined };
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<SourceEvent<T>>> {
    this.closed = true;
    this.#wake?.();
    if (this.closeError !== undefined) throw this.closeError;
    return { done: true, value: undefined };
  }
}

/** A source whose every open is a {@link ControlledStream} recorded in `streams`. */
export class ControlledSource<T> implements Source<T> {
  readonly name = 'controlled';
  /** The reopen backoff the stream driver applies (the source's own `retry`); undefined = the default. */
  retry: BackoffPolicy | undefined;
  readonly streams: ControlledStream<T>[] = [];
  /** Called on each open, to prefill or configure the new stream. */
  onOpen: ((stream: ControlledStream<T>, index: number) => void) | undefined;

  constructor(options?: { retry?: BackoffPolicy | undefined }) {
    this.retry = options?.retry;
  }

  open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> {
    const stream = new ControlledStream<T>(signal);
    this.streams.push(stream);
    this.onOpen?.(stream, this.streams.length - 1);
    return { [Symbol.asyncIterator]: () => stream };
  }

  /** The stream opened last; throws when none was opened yet. */
  get last(): ControlledStream<T> {
    const stream = this.streams.at(-1);
    if (!stream) throw new Error('no stream opened yet');
    return stream;
  }
}
