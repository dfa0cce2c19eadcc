import type { Transport, TransportRequest, TransportResponse } from './all.js';

/** What a fake answers: a status, a JSON (or text) body or streamed chunks, headers. */
export interface FakeAnswer {
  readonly status?: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** A streamed body: chunks in order; a `Promise` chunk holds the stream until it resolves. */
  readonly chunks?: readonly (string | Uint8Array | Promise<string | Uint8Array | undefined>)[];
}

/** One request as the fake saw it. */
export interface SeenRequest {
  readonly method: TransportRequest['method'];
  readonly url: URL;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string>>;
  readonly contentType: string | undefined;
  readonly body: unknown;
  readonly signal: AbortSignal;
  /** `TransportRequest.stream` and `readWhole`, as booleans. */
  readonly stream: boolean;
  readonly readWhole: boolean;
}

type Handler = (request: SeenRequest) => FakeAnswer | Promise<FakeAnswer>;

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('aborted', 'AbortError');
}

/** Rejects when `signal` aborts: what a socket does under an aborted request. */
function raced<V>(promise: Promise<V>, signal: AbortSignal): Promise<V> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<V>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * A fake {@link Transport}: answers queued with {@link FakeTransport.next} first, then the default
 * handler. Every request is recorded. Bodies honour the request's signal like a socket does.
 */
export class FakeTransport {
  readonly requests: SeenRequest[] = [];
  readonly #queue: Handler[] = [];
  #handler: Handler = () => ({ status: 200, body: {} });
  closed = 0;

  /** The default answer for requests with nothing queued. */
  otherwise(handler: Handler): this {
    this.#handler = handler;
    return this;
  }

  /** Queues answers for the next requests, in order. */
  next(...answers: (FakeAnswer | Handler)[]): this {
    for (const answer of answers) this.#queue.push(typeof answer === 'function' ? answer : () => answer);
    return this;
  }

  readonly transport: Transport = async (request) => {
    request.signal.throwIfAborted();
    const contentType = request.headers['Content-Type'];
    const seen: SeenRequest = {
      method: request.method,
      url: request.url,
      path: request.url.pathname,
      query: request.url.searchParams,
      headers: request.headers,
      contentType,
      body: request.body === undefined ? undefined : JSON.parse(request.body),
      signal: request.signal,
      stream: request.stream === true,
      readWhole: request.readWhole === true,
    };
    this.requests.push(seen);
    const handler = this.#queue.shift() ?? this.#handler;
    const answer = await raced(Promise.resolve(handler(seen)), request.signal);
    return this.#response(answer, request.signal);
  };

  #response(answer: FakeAnswer, signal: AbortSignal): TransportResponse {
    const headers = new Map(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    const chunks =
      answer.chunks ??
      (answer.body === undefined ? [] : [typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body)]);
    let closed = false;
    async function* body(): AsyncGenerator<string | Uint8Array> {
      for (const chunk of chunks) {
        if (closed) return;
        const value = await raced(Promise.resolve(chunk), signal);
        if (value === undefined) return;
        yield value;
      }
    }
    return {
      status: answer.status ?? 200,
      header: (name) => headers.get(name.toLowerCase()),
      body: body(),
      close: () => {
        if (!closed) this.closed += 1;
        closed = true;
      },
    };
  }
}

/** A `Status` body like the apiserver's. */
export function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    ...(details ? { details } : {}),
  };
}

/** A deferred value a test resolves by hand. */
export function deferred<V>(): { promise: Promise<V>; resolve(value: V): void } {
  let resolve!: (value: V) => void;
  const promise = new Promise<V>((r) => (resolve = r));
  return { promise, resolve };
}
