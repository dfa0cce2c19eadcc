import type { Clock, Logger, Source, SourceEvent } from '@reconcile-loop/object-store';

/** A manual clock: timers fire only inside `advance`, in deadline order. */
export class FakeClock implements Clock {
  #now = 0;
  #nextId = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = ++this.#nextId;
    this.#timers.set(id, { at: this.#now + Math.max(0, delayMs), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers one at a time and settling promises between them. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await settle();
      let due: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
      }
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = target;
    await settle();
  }
}

/** Lets every pending promise chain run (real macrotask turns; no time passes). */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

/** A logger that records every entry. */
export function recordingLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (fields: Record<string, unknown>, message: string) => {
    entries.push({ level, fields, message });
  };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** One stream opened on a {@link ControlledSource}; the test pushes, ends or fails it. */
export class ControlledStream<T> implements AsyncIterator<SourceEvent<T>> {
  readonly #buffer: SourceEvent<T>[] = [];
  #ended = false;
  #error: unknown;
  #wake: (() => void) | undefined;
  closed = false;
  /** When set, `return()` rejects with it. */
  closeError: unknown;

  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', () => this.#wake?.(), { once: true });
  }

  push(...events: SourceEvent<T>[]): void {
    this.#buffer.push(...events);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

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
  readonly streams: ControlledStream<T>[] = [];
  /** Called on each open, to prefill or configure the new stream. */
  onOpen: ((stream: ControlledStream<T>, index: number) => void) | undefined;

  open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> {
    const stream = new ControlledStream<T>(signal);
    this.streams.push(stream);
    this.onOpen?.(stream, this.streams.length - 1);
    return { [Symbol.asyncIterator]: () => stream };
  }

  get last(): ControlledStream<T> {
    const stream = this.streams.at(-1);
    if (!stream) throw new Error('no stream opened yet');
    return stream;
  }
}
