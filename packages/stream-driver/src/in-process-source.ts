import {
  deleteEvent,
  replaceEvent,
  releaseEvent,
  upsertEvent,
  type ObjectKey,
  type Source,
  type SourceEvent,
} from '@reconcile-loop/object-store';
import type { BackoffPolicy } from '@reconcile-loop/primitives';

/** Options of an {@link InProcessSource}. */
export interface InProcessSourceOptions {
  /**
   * How the stream driver backs off before reopening a stream that ended (see
   * {@link InProcessSource.disconnect}). Default: object-store's `DEFAULT_SOURCE_RETRY` (1 s doubling to 30 s).
   */
  readonly retry?: BackoffPolicy | undefined;
}

const END: unique symbol = Symbol('end');

/** One open stream's buffer. Unbounded: producers are method calls and the driver drains between them. */
class Subscription<T> {
  readonly #buffer: SourceEvent<T>[] = [];
  #ended = false;
  #error: { readonly value: unknown } | undefined;
  #wake: (() => void) | undefined;

  push(event: SourceEvent<T>): void {
    if (this.#ended) return;
    this.#buffer.push(event);
    this.#wake?.();
  }

  end(error?: { readonly value: unknown }): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#wake?.();
  }

  /** The next buffered event; {@link END} once ended or aborted (buffered events first); throws a disconnect error. */
  async next(signal: AbortSignal): Promise<SourceEvent<T> | typeof END> {
    for (;;) {
      if (signal.aborted) return END;
      const event = this.#buffer.shift();
      if (event !== undefined) return event;
      if (this.#ended) {
        if (this.#error) throw this.#error.value;
        return END;
      }
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.#wake = undefined;
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.#wake = wake;
        signal.addEventListener('abort', wake, { once: true });
      });
    }
  }
}

/**
 * An in-process source: a registry of objects by object key that producers change by method call
 * (`upsert`, `delete`, `replace`), and that any number of streams read. Every `open` yields a replace
 * of the current world, then each later change as a source event, in order. No resourceVersion and no replay
 * window: a stream that ends (see {@link InProcessSource.disconnect}) is reopened by the driver after
 * this source's `retry` backoff and starts again from a replace, so changes made while no stream was open still land
 * in the store — a deletion missed while disconnected included.
 *
 * This is the in-process backend behind the common `Source` interface, not a side channel into the
 * loop (controller-runtime's `source.Channel` is dropped: internal events are method calls here).
 */
export class InProcessSource<T> implements Source<T> {
  readonly name: string;
  /** The reopen backoff the stream driver applies when a stream of this source ends; see {@link InProcessSourceOptions.retry}. */
  readonly retry: BackoffPolicy | undefined;
  readonly #world = new Map<ObjectKey, T>();
  readonly #subscriptions = new Set<Subscription<T>>();

  /**
   * @param initial the world the first stream opens with.
   * @param options `retry`: the reopen backoff (see {@link InProcessSourceOptions}).
   */
  constructor(
    name: string,
    initial?: Iterable<readonly [ObjectKey, T]> | undefined,
    options?: InProcessSourceOptions | undefined,
  ) {
    this.name = name;
    this.retry = options?.retry;
    if (initial) for (const [key, object] of initial) this.#world.set(key, object);
  }

  /**
   * Starts a stream: a replace of the current world, then every later change. The snapshot is taken
   * and the stream subscribed in the same step, so no change falls between them. Aborting `signal`
   * ends the stream.
   */
  open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> {
    return this.#stream(signal);
  }

  async *#stream(signal: AbortSignal): AsyncGenerator<SourceEvent<T>, void, undefined> {
    if (signal.aborted) return;
    const subscription = new Subscription<T>();
    this.#subscriptions.add(subscription);
    try {
      yield replaceEvent(new Map(this.#world));
      for (;;) {
        const event = await subscription.next(signal);
        if (event === END) return;
        yield event;
      }
    } finally {
      this.#subscriptions.delete(subscription);
    }
  }

  /** Creates or updates the object under `key`, and tells every open stream. */
  upsert(key: ObjectKey, object: T): void {
    this.#world.set(key, object);
    this.#broadcast(upsertEvent(key, object));
  }

  /** Removes the object under `key`; returns false (and sends nothing) if there was none. */
  delete(key: ObjectKey): boolean {
    if (!this.#world.delete(key)) return false;
    this.#broadcast(deleteEvent(key));
    return true;
  }

  /** Replaces the whole world, and sends open streams one replace (the store synthesizes the deletions). */
  replace(objects: Iterable<readonly [ObjectKey, T]>): void {
    this.#world.clear();
    for (const [key, object] of objects) this.#world.set(key, object);
    this.#broadcast(replaceEvent(new Map(this.#world)));
  }

  /**
   * Stops holding the objects `retain` rejects (they live on elsewhere: a shard moved) and sends
   * open streams one release: their stores drop them without a deletion.
   */
  release(retain: (object: T, key: ObjectKey) => boolean): void {
    for (const [key, object] of this.#world) if (!retain(object, key)) this.#world.delete(key);
    this.#broadcast(releaseEvent(retain));
  }

  /**
   * Ends every open stream after the events already sent to it: cleanly, or by throwing `error` when
   * one is given. Changes made before the next `open` reach the store through that open's replace.
   */
  disconnect(...error: [] | [unknown]): void {
    const reason = error.length > 0 ? { value: error[0] } : undefined;
    for (const subscription of this.#subscriptions) subscription.end(reason);
    this.#subscriptions.clear();
  }

  /** The object under `key` in the current world. */
  get(key: ObjectKey): T | undefined {
    return this.#world.get(key);
  }

  /** A copy of the current world. */
  snapshot(): ReadonlyMap<ObjectKey, T> {
    return new Map(this.#world);
  }

  /** Number of objects in the current world. */
  get size(): number {
    return this.#world.size;
  }

  /** Number of streams currently open. */
  get openStreams(): number {
    return this.#subscriptions.size;
  }

  #broadcast(event: SourceEvent<T>): void {
    for (const subscription of this.#subscriptions) subscription.push(event);
  }
}
