/**
 * One upstream stream (a reflector's LIST + WATCH) fanned out to several loops: client-go's
 * `SharedInformer`, shaped as object-store `Source`s. A loop owns its store (each store keeps the
 * parent index of its own key map, and a replace is the whole world of the source that sent it), so
 * the stores are not shared; the stream and the objects are. Each subscriber is a `Source` of its
 * own whose streams are fed from the one upstream stream:
 *
 * - the first open of any subscriber opens the upstream; the last subscriber's stream closing
 *   aborts it (reference-counted: one LIST and one WATCH for every loop watching that kind);
 * - a subscriber opening after the upstream listed starts with a replace of the world as the
 *   upstream last delivered it (the objects by reference, never copied), then the live events;
 *   one opening earlier gets the upstream's own listing;
 * - an upstream failure fails every subscriber's stream with the same error (each loop's stream
 *   driver then decides: a permanent error ends the loop, anything else reopens the subscriber,
 *   which reopens the upstream); an upstream that ends ends them all.
 *
 * Invariant: after any prefix of upstream events, every subscriber's store, once it applied its
 * stream's events, equals the world the upstream's events build (the objects are the same
 * references; only each store's own map and parent index are per loop). Memory: one object per
 * key for all loops, plus a map entry per key in each store and in the world kept here.
 */
import { reportsHealth, type ObjectKey, type Source, type SourceEvent, type SourceHealth } from '@reconcile-loop/object-store';
import type { BackoffPolicy } from '@reconcile-loop/primitives';

/** A source several loops read through one upstream stream (see {@link shareSource}). */
export interface SharedSource<T> {
  /**
   * A source for one loop, named `name` (its health checks and metrics say so); every subscriber
   * reads the same upstream stream.
   */
  subscribe(name?: string): Source<T>;
  /** How many subscriber streams are open now (the reference count). */
  readonly subscribers: number;
  /** How many times the upstream was opened. */
  readonly upstreamOpens: number;
  /** Resolves once the upstream stream (if any) has closed; for a bounded shutdown. */
  closed(): Promise<void>;
}

/**
 * Shares `upstream` between loops: each `subscribe()` is a `Source` for one loop, and all of them
 * together open `upstream` once (see the module comment for the semantics).
 */
export function shareSource<T>(upstream: Source<T>): SharedSource<T> {
  return new Hub(upstream);
}

/** A subscriber stream's buffer: events in order, then an end or an error. */
class Channel<T> implements AsyncIterator<SourceEvent<T>> {
  readonly #buffer: SourceEvent<T>[] = [];
  #end: { error: unknown } | 'done' | undefined;
  #wake: (() => void) | undefined;

  push(event: SourceEvent<T>): void {
    if (this.#end !== undefined) return;
    this.#buffer.push(event);
    this.#notify();
  }

  /** Ends the stream after the buffered events: cleanly, or by throwing `error`. */
  finish(end: { error: unknown } | 'done'): void {
    if (this.#end !== undefined) return;
    this.#end = end;
    this.#notify();
  }

  /** Drops the buffer and ends at once (the subscriber's signal aborted). */
  close(): void {
    this.#buffer.length = 0;
    this.#end = 'done';
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async next(): Promise<IteratorResult<SourceEvent<T>>> {
    for (;;) {
      const event = this.#buffer.shift();
      if (event !== undefined) return { value: event, done: false };
      const end = this.#end;
      if (end === 'done') return { value: undefined, done: true };
      if (end !== undefined) {
        this.#end = 'done';
        throw end.error;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  async return(): Promise<IteratorResult<SourceEvent<T>>> {
    this.close();
    return { value: undefined, done: true };
  }
}

class Hub<T> implements SharedSource<T> {
  readonly #upstream: Source<T>;
  readonly #channels = new Set<Channel<T>>();
  /** The world the current upstream stream has built; undefined until its first listing. */
  #world: Map<ObjectKey, T> | undefined;
  #controller: AbortController | undefined;
  /** Upstream streams still closing (an aborted one may take a moment to end). */
  readonly #running = new Set<Promise<void>>();
  #opens = 0;

  constructor(upstream: Source<T>) {
    this.#upstream = upstream;
  }

  get subscribers(): number {
    return this.#channels.size;
  }

  get upstreamOpens(): number {
    return this.#opens;
  }

  async closed(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running);
  }

  subscribe(name = this.#upstream.name): Source<T> {
    // A plain object with getters, so `retry`, `stats` and `health()` are the upstream's, read live.
    const upstream = this.#upstream;
    const source: Source<T> & { readonly stats?: unknown } = {
      name,
      get retry(): BackoffPolicy | undefined {
        return upstream.retry;
      },
      open: (signal) => ({ [Symbol.asyncIterator]: () => this.#open(signal) }),
      // Structural reads of the loop and the metrics: the upstream's counters (relists, watches).
      get stats(): unknown {
        return (upstream as { stats?: unknown }).stats;
      },
    };
    if (reportsHealth(upstream)) {
      (source as { health?: () => SourceHealth }).health = () => upstream.health();
    }
    return source;
  }

  #open(signal: AbortSignal): Channel<T> {
    const channel = new Channel<T>();
    if (signal.aborted) {
      channel.close();
      return channel;
    }
    this.#channels.add(channel);
    // A late subscriber starts from the world as it is now; an early one gets the upstream's listing.
    if (this.#world !== undefined) channel.push({ type: 'replace', objects: new Map(this.#world) });
    signal.addEventListener(
      'abort',
      () => {
        channel.close();
        this.#leave(channel);
      },
      { once: true },
    );
    if (this.#controller === undefined) this.#start();
    return channel;
  }

  #leave(channel: Channel<T>): void {
    if (!this.#channels.delete(channel)) return;
    // The last reader gone: nobody needs the watch any more.
    if (this.#channels.size === 0) this.#stop();
  }

  #start(): void {
    const controller = new AbortController();
    this.#controller = controller;
    this.#world = undefined;
    this.#opens += 1;
    const run = this.#pump(controller);
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }

  #stop(): void {
    this.#controller?.abort();
    this.#controller = undefined;
    this.#world = undefined;
  }

  async #pump(controller: AbortController): Promise<void> {
    let end: { error: unknown } | 'done' = 'done';
    try {
      for await (const event of this.#upstream.open(controller.signal)) {
        if (controller.signal.aborted) break;
        this.#apply(event);
        for (const channel of this.#channels) channel.push(event);
      }
    } catch (error) {
      end = { error };
    }
    if (this.#controller !== controller) return; // stopped: its subscribers are gone already
    // The upstream ended or failed by itself: every subscriber's stream ends the same way; the next
    // open (a stream driver's reopen) opens the upstream again.
    this.#controller = undefined;
    this.#world = undefined;
    const channels = [...this.#channels];
    this.#channels.clear();
    for (const channel of channels) channel.finish(end);
  }

  /** Keeps the world a late subscriber starts from: the same objects, the store's replace semantics. */
  #apply(event: SourceEvent<T>): void {
    if (event.type === 'replace') {
      const world = new Map(event.objects);
      if (event.keep !== undefined && this.#world !== undefined) {
        for (const key of event.keep) {
          const kept = this.#world.get(key);
          if (kept !== undefined && !world.has(key)) world.set(key, kept);
        }
      }
      this.#world = world;
      return;
    }
    if (this.#world === undefined) return; // not listed yet: the stream driver refuses this stream anyway
    if (event.type === 'upsert') this.#world.set(event.key, event.object);
    else if (event.type === 'delete') this.#world.delete(event.key);
    else for (const [key, object] of this.#world) if (!event.retain(object, key)) this.#world.delete(key);
  }
}
