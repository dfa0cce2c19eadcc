import { podSchema, type Pod, type Status } from '@reconcile-loop/k8s-types';
import { KubeApiError } from '@reconcile-loop/kube-client';
import type { SourceEvent } from '@reconcile-loop/object-store';
import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import {
  Reflector,
  type ListRequest,
  type ListResult,
  type ListWatchClient,
  type ReflectorOptions,
  type WatchRequest,
} from '../src/index.js';

/** Lets pending work schedule its timers, advances the manual clock, and lets the reactions run. */
export async function advance(clock: ManualClock, ms: number): Promise<void> {
  await settle();
  clock.advance(ms);
  await settle();
}

/** A pod as the apiserver sends it, small. */
export function pod(name: string, resourceVersion: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion },
    status: { phase: 'Running' },
    ...extra,
  };
}

/** One watch line, as the apiserver writes it. */
export function line(type: string, object: unknown): string {
  return JSON.stringify({ type, object });
}

/** A bookmark line. */
export function bookmark(resourceVersion: string): string {
  return line('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion } });
}

/** An in-band ERROR line carrying a Status. */
export function errorFrame(status: Record<string, unknown>): string {
  return line('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', ...status });
}

function abortError(): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
}

type Item = { kind: 'frame'; value: unknown } | { kind: 'end' } | { kind: 'error'; error: unknown };

/** One fake watch: the test pushes frames, ends it or fails it. Honors its signal unless told not to. */
export class FakeWatch implements AsyncIterable<unknown> {
  readonly request: WatchRequest;
  readonly #queue: Item[] = [];
  #waiter: { resolve: (result: IteratorResult<unknown>) => void; reject: (error: unknown) => void } | undefined;
  #finished = false;
  /** True once the reflector called `return()` on the iterator. */
  returned = false;

  constructor(request: WatchRequest, honorSignal: boolean) {
    this.request = request;
    if (honorSignal) request.signal.addEventListener('abort', () => this.fail(abortError()), { once: true });
  }

  push(...values: unknown[]): this {
    for (const value of values) this.#offer({ kind: 'frame', value });
    return this;
  }

  end(): this {
    this.#offer({ kind: 'end' });
    return this;
  }

  fail(error: unknown): this {
    this.#offer({ kind: 'error', error });
    return this;
  }

  #offer(item: Item): void {
    if (this.#finished) return;
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      this.#settle(item, waiter.resolve, waiter.reject);
    } else {
      this.#queue.push(item);
    }
  }

  #settle(item: Item, resolve: (result: IteratorResult<unknown>) => void, reject: (error: unknown) => void): void {
    if (item.kind === 'frame') {
      resolve({ done: false, value: item.value });
      return;
    }
    this.#finished = true;
    if (item.kind === 'end') resolve({ done: true, value: undefined });
    else reject(item.error);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return {
      next: () =>
        new Promise<IteratorResult<unknown>>((resolve, reject) => {
          const item = this.#queue.shift();
          if (item) this.#settle(item, resolve, reject);
          else if (this.#finished) resolve({ done: true, value: undefined });
          else this.#waiter = { resolve, reject };
        }),
      return: () => {
        this.returned = true;
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}

type ListStep = ListResult | Error | 'hang';

/** A scripted {@link ListWatchClient}: LIST answers come from a queue (or the default), every WATCH is a {@link FakeWatch}. */
export class FakeClient implements ListWatchClient {
  readonly lists: ListRequest[] = [];
  readonly watches: FakeWatch[] = [];
  readonly #listSteps: ListStep[] = [];
  /** What a LIST answers when nothing is queued. */
  defaultList: ListResult = { items: [], resourceVersion: '1' };
  /** Whether new watches end when their signal aborts (a well-behaved client). */
  honorSignal = true;

  queueList(...steps: ListStep[]): this {
    this.#listSteps.push(...steps);
    return this;
  }

  list(request: ListRequest): Promise<ListResult> {
    this.lists.push(request);
    const step = this.#listSteps.shift() ?? this.defaultList;
    if (step === 'hang') return new Promise<ListResult>(() => {}); // a connect that never completes, deaf to its signal
    if (step instanceof Error) return Promise.reject(step);
    return Promise.resolve(step);
  }

  watch(request: WatchRequest): AsyncIterable<unknown> {
    const watch = new FakeWatch(request, this.honorSignal);
    this.watches.push(watch);
    return watch;
  }

  /** The latest watch. */
  get watch0(): FakeWatch {
    const watch = this.watches.at(-1);
    if (!watch) throw new Error('no watch opened yet');
    return watch;
  }
}

/** Consumes a stream in the background, recording events and the error it ended with. */
export function consume<T>(stream: AsyncIterable<SourceEvent<T>>): {
  events: SourceEvent<T>[];
  readonly error: unknown;
  readonly ended: boolean;
  done: Promise<void>;
} {
  const state = { events: [] as SourceEvent<T>[], error: undefined as unknown, ended: false, done: Promise.resolve() };
  state.done = (async () => {
    try {
      for await (const event of stream) state.events.push(event);
    } catch (error) {
      state.error = error;
    } finally {
      state.ended = true;
    }
  })();
  return state;
}

/**
 * A reflector over a {@link FakeClient} on a {@link ManualClock} with a recording logger, its stream
 * already being consumed. `prepare` queues the client's answers before the stream opens; `client`
 * replaces the fake (a subclass of it).
 */
export function openReflector<C extends FakeClient = FakeClient>(
  options: Partial<ReflectorOptions<Pod>> = {},
  prepare: (client: C) => void = () => {},
  client: C = new FakeClient() as C,
) {
  const clock = new ManualClock();
  prepare(client);
  const logger = recordingLogger();
  const controller = new AbortController();
  const reflector = new Reflector<Pod>({
    client,
    schema: podSchema,
    clock,
    logger,
    random: () => 0,
    watchTimeoutSeconds: 300,
    idleGraceMs: 30_000,
    retry: { initialMs: 1_000, maxMs: 8_000 },
    ...options,
  });
  const stream = consume(reflector.open(controller.signal));
  return { clock, client, controller, reflector, stream, logger };
}

/**
 * What kube-client throws for a non-2xx answer, as a fake client throws it: the reflector passes
 * kube-client's `KubeApiError` through, so the fakes fail with the same class.
 */
export function apiError(
  statusCode: number,
  status?: Status,
  _message?: string,
  extra: { retryAfterSeconds?: number | undefined; verb?: 'list' | 'watch' | undefined; path?: string | undefined } = {},
): KubeApiError {
  return new KubeApiError({
    statusCode,
    status,
    verb: extra.verb ?? 'watch',
    path: extra.path ?? '/api/v1/namespaces/ns/pods',
    retryAfterSeconds: extra.retryAfterSeconds ?? status?.details?.retryAfterSeconds,
  });
}
