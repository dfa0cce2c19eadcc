import type { ApiResource, ObjectSchema, Status } from '@reconcile-loop/k8s-types';
import { decodeJsonBody } from './http/body.js';
import { abortReason, OptionsError, sleep, systemClock, type Clock } from '@reconcile-loop/primitives';
import { isKubeClientError, KubeApiError, KubeRequestTimeoutError, KubeTransportError, type Verb } from './errors.js';
import { DEFAULT_MAX_FRAME_BYTES, splitFrameBatches, splitLines } from './http/lines.js';
import { DEFAULT_BURST, DEFAULT_QPS, TokenBucketRateLimiter, type RateLimiter } from './rate-limiter.js';
import type { KubeRequest, ResourceHost } from './request.js';
import { ResourceClient, type KubeObject, type ResourceRef } from './resource.js';
import { readStatus } from './http/status-body.js';
import { httpTransport, staticAuth, type KubeConfigAuth } from './http/transport.js';
import type { Transport, TransportResponse } from './http/transport-types.js';

/** Client-side rate limiting: client-go's token bucket (`rest.Config.QPS` / `Burst`). */
export interface RateLimitOptions {
  /** Default 5 (client-go). */
  readonly qps?: number | undefined;
  /** Default 10 (client-go). */
  readonly burst?: number | undefined;
  /** Which requests take a token: the writes (default) or every request, as client-go does. */
  readonly scope?: 'writes' | 'all' | undefined;
}

/** How to build a {@link KubeClient}: a `KubeConfig` (1.x or 2.x), or a server URL and a token. */
export interface KubeClientOptions {
  /** A @kubernetes/client-node `KubeConfig` (or anything with the two methods of {@link KubeConfigAuth}). */
  readonly kubeConfig?: KubeConfigAuth | undefined;
  /** Without a `kubeConfig`: the server URL, e.g. `https://127.0.0.1:6443`. */
  readonly server?: string | undefined;
  /** Without a `kubeConfig`: a bearer token. */
  readonly token?: string | undefined;
  /** Without a `kubeConfig`: a PEM CA bundle. */
  readonly ca?: string | undefined;
  /** Without a `kubeConfig`: skip TLS verification (loopback test servers only). */
  readonly insecureSkipTlsVerify?: boolean | undefined;
  /** Where requests go; default HTTP(S) with the config's auth. Tests inject a fake. */
  readonly transport?: Transport | undefined;
  /** Drives the rate limiter, `Retry-After` waits and request timeouts. Default {@link systemClock}. */
  readonly clock?: Clock | undefined;
  /** Options, a limiter of your own, or `false` for none. Default 5 QPS / burst 10 on the writes. */
  readonly rateLimit?: RateLimitOptions | RateLimiter | false | undefined;
  /** How many times a request answered 429 (or a read answered 5xx) with `Retry-After` is retried. Default 10 (client-go). */
  readonly maxRetries?: number | undefined;
  /** Per-request deadline in ms, covering rate-limit and `Retry-After` waits too; `0` for none. Default 30 000. */
  readonly requestTimeoutMs?: number | undefined;
  /** Cap on one watch frame, in bytes. Default 16 MiB (apimachinery's streaming decoder). */
  readonly maxFrameBytes?: number | undefined;
  /** Sent as `User-Agent`. */
  readonly userAgent?: string | undefined;
  /** Called with each `Warning` header the server sends (deprecations, unknown fields). */
  readonly onWarning?: ((warning: string, request: { readonly verb: Verb; readonly path: string }) => void) | undefined;
  /**
   * Called once per rate-limited attempt with the time it waited for the limiter (0 when a token was
   * there): client-go's `rest_client_rate_limiter_duration_seconds`. `@reconcile-loop/metrics`'
   * `rateLimiterMetrics` gives one. Lanes made by {@link KubeClient.withLane} report here too.
   */
  readonly onRateLimitWait?: ((waitMs: number, request: RateLimitWait) => void) | undefined;
  /** The limiter's name in `onRateLimitWait`. Default `'default'`; see {@link KubeClient.withLane}. */
  readonly lane?: string | undefined;
}

/** What {@link KubeClientOptions.onRateLimitWait} is told about a wait. */
export interface RateLimitWait {
  readonly verb: Verb;
  /** The client's lane: `'default'`, or the name given to {@link KubeClient.withLane} (`'leader-election'`). */
  readonly lane: string;
}

/** The default per-request deadline. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** client-go's default number of `Retry-After` retries (`rest.Request.maxRetries`). */
export const DEFAULT_MAX_RETRIES = 10;

const READS: ReadonlySet<Verb> = new Set(['get', 'list', 'watch']);
/** Most of a non-2xx body read for its `Status`. */
const MAX_ERROR_BODY = 64 * 1024;

function positiveInt(name: string, value: number | undefined, fallback: number, allowZero: boolean): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1))
    throw new OptionsError('KubeClient', `${name} must be an integer >= ${allowZero ? 0 : 1}, got ${String(value)}`);
  return value;
}

function retryAfterSeconds(response: TransportResponse, status: Status | undefined): number | undefined {
  // client-go reads Retry-After as whole seconds only; the Status detail is the same number.
  const header = response.header('retry-after');
  if (header !== undefined && /^\s*\d+\s*$/.test(header)) return Number(header);
  const detail = status?.details?.retryAfterSeconds;
  return typeof detail === 'number' && Number.isInteger(detail) && detail >= 0 ? detail : undefined;
}

/**
 * Reads a body whole into memory of its own (up to `limit` bytes kept; the rest is drained and
 * dropped). `reused`: the body's pieces may be overwritten once the next is read (a streamed
 * request's, `TransportRequest.stream`), so each kept piece is copied as it comes.
 */
async function readBytes(body: AsyncIterable<Uint8Array | string>, limit: number, reused = false): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (size < limit) chunks.push(reused ? Buffer.from(buffer) : buffer);
    size += buffer.length;
  }
  return Buffer.concat(chunks);
}

/** The least a body buffer is allocated or grown to, so a body of many small pieces is not copied per piece. */
const MIN_BODY_BUFFER = 64 * 1024;
/** The largest body buffer kept for the next read (a page of 500 pods is ≈ 2.5 MB); a larger one is left to the GC. */
export const MAX_SPARE_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Reads a body whole into `buffer` (from its start), growing it when the body does not fit. With a
 * `Content-Length` larger than `buffer`, a new buffer an eighth over it (so the next page of a LIST,
 * a little longer, still fits); without one, to at least twice the size whenever it is full. Every
 * piece is copied as it comes, so the transport may reuse a piece once the next is asked for.
 * Resolves with the buffer holding the body (`buffer` itself when it fit) and the body's length.
 */
async function readInto(
  response: TransportResponse,
  buffer: Buffer | undefined,
): Promise<{ readonly buffer: Buffer; readonly length: number }> {
  const header = response.header('content-length');
  const declared = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
  let into = buffer;
  if (into === undefined || (declared !== undefined && declared > into.length))
    into = Buffer.allocUnsafe(Math.max(MIN_BODY_BUFFER, declared === undefined ? 0 : declared + (declared >>> 3)));
  let length = 0;
  for await (const chunk of response.body) {
    const piece = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const end = length + piece.byteLength;
    if (end > into.length) {
      const grown = Buffer.allocUnsafe(Math.max(end, 2 * into.length));
      into.copy(grown, 0, 0, length);
      into = grown;
    }
    into.set(piece, length);
    length = end;
  }
  return { buffer: into, length };
}

/** A non-2xx body's text; its pieces are copied as they come (the request may have been streamed). */
async function readText(body: AsyncIterable<Uint8Array | string>, limit: number): Promise<string> {
  const bytes = await readBytes(body, limit, true);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** An open response plus the function releasing its deadline timer and abort listener. */
interface Opened {
  readonly response: TransportResponse;
  readonly signal: AbortSignal;
  /** The path and query errors name. */
  readonly path: string;
  release(): void;
}

/**
 * One Kubernetes HTTP client: every request of every resource goes through it, so auth, the rate
 * limiter, `Retry-After`, deadlines and error mapping are decided in one place.
 *
 * ```ts
 * const kc = new KubeConfig(); kc.loadFromDefault();
 * const client = new KubeClient({ kubeConfig: kc });
 * const pods = client.resource(podResource, podSchema).inNamespace('default');
 * const pod = await pods.get('web-0');
 * ```
 */
export class KubeClient implements ResourceHost {
  readonly #auth: KubeConfigAuth;
  readonly #transport: Transport;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter | undefined;
  readonly #limitReads: boolean;
  /**
   * Body buffers free for the next {@link requestBody}: one kept only while another body read of
   * this client is under way (a LIST's next page, requested while this one is read), so the pages
   * of one LIST share one buffer and none is held once the LIST ends.
   */
  readonly #spareBodies: Buffer[] = [];
  /** {@link requestBody} calls not yet finished. */
  #bodyReads = 0;
  readonly #maxRetries: number;
  readonly #timeoutMs: number;
  readonly #maxFrameBytes: number;
  readonly #userAgent: string | undefined;
  readonly #onWarning: KubeClientOptions['onWarning'];
  readonly #onRateLimitWait: KubeClientOptions['onRateLimitWait'];
  readonly #options: KubeClientOptions;
  /** This client's limiter's name (`onRateLimitWait`). */
  readonly lane: string;

  constructor(options: KubeClientOptions) {
    this.#options = options;
    this.lane = options.lane ?? 'default';
    if (typeof this.lane !== 'string' || this.lane === '')
      throw new OptionsError('KubeClient', 'lane must be a non-empty string');
    if (options.kubeConfig !== undefined && options.server !== undefined)
      throw new OptionsError('KubeClient', 'give either kubeConfig or server, not both');
    if (options.kubeConfig === undefined) {
      if (typeof options.server !== 'string' || options.server === '')
        throw new OptionsError('KubeClient', 'a kubeConfig or a server URL is required');
      try {
        new URL(options.server);
      } catch {
        throw new OptionsError('KubeClient', `server is not a URL: ${options.server}`);
      }
    }
    this.#auth =
      options.kubeConfig ??
      staticAuth({
        server: options.server!,
        token: options.token,
        ca: options.ca,
        insecureSkipTlsVerify: options.insecureSkipTlsVerify,
      });
    this.#transport = options.transport ?? httpTransport(this.#auth);
    this.#clock = options.clock ?? systemClock;
    const rateLimit = options.rateLimit ?? {};
    if (rateLimit === false) {
      this.#limiter = undefined;
      this.#limitReads = false;
    } else if (typeof (rateLimit as RateLimiter).wait === 'function') {
      this.#limiter = rateLimit as RateLimiter;
      this.#limitReads = false;
    } else {
      const { qps = DEFAULT_QPS, burst = DEFAULT_BURST, scope = 'writes' } = rateLimit as RateLimitOptions;
      if (scope !== 'writes' && scope !== 'all')
        throw new OptionsError('KubeClient', `rateLimit.scope must be 'writes' or 'all', got ${String(scope)}`);
      this.#limiter = new TokenBucketRateLimiter({ qps, burst, clock: this.#clock });
      this.#limitReads = scope === 'all';
    }
    this.#maxRetries = positiveInt('maxRetries', options.maxRetries, DEFAULT_MAX_RETRIES, true);
    this.#timeoutMs = positiveInt('requestTimeoutMs', options.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS, true);
    this.#maxFrameBytes = positiveInt('maxFrameBytes', options.maxFrameBytes, DEFAULT_MAX_FRAME_BYTES, false);
    this.#userAgent = options.userAgent;
    this.#onWarning = options.onWarning;
    this.#onRateLimitWait = options.onRateLimitWait;
  }

  /**
   * A client for one kind of traffic that must not queue behind the rest: the same server, auth,
   * transport (its connections), clock, deadlines and hooks, with a rate limiter of its own
   * (default client-go's 5 QPS / burst 10 on the writes, `false` for none). Leader election takes
   * one (`LeaseLock` does by default), so a burst of reconcile writes cannot delay a Lease renewal
   * toward its renew deadline — as controller-runtime gives leader election a clientset of its own.
   */
  withLane(lane: string, rateLimit?: RateLimitOptions | RateLimiter | false | undefined): KubeClient {
    return new KubeClient({ ...this.#options, transport: this.#transport, clock: this.#clock, rateLimit, lane });
  }

  /**
   * The server URL of the config's current cluster as the config gives it (userinfo included, if
   * any: strip it before printing), or `undefined` when the config has no current cluster. Read per
   * call, like the auth, so a wrapper (the reflector) can check and name the server it talks to.
   */
  currentServer(): string | undefined {
    return this.#auth.getCurrentCluster()?.server;
  }

  /** The clock the client waits on (helpers built on the client default to it). */
  get clock(): Clock {
    return this.#clock;
  }

  /**
   * A typed handle on one resource. With a schema (a zod view from `@reconcile-loop/k8s-types`),
   * every object read back is validated into the view's type; without one, objects come back as
   * plain JSON ({@link KubeObject}). `kind` on the resource lets `apply` fill in `apiVersion`/`kind`.
   */
  resource(resource: ResourceRef | ApiResource): ResourceClient<KubeObject>;
  resource<T>(resource: ResourceRef | ApiResource, schema: ObjectSchema<T>): ResourceClient<T>;
  resource<T>(resource: ResourceRef | ApiResource, schema?: ObjectSchema<T>): ResourceClient<T> | ResourceClient<KubeObject> {
    return new ResourceClient<T>(this, resource, schema, undefined);
  }

  /**
   * Sends one request and resolves with its decoded JSON body (`undefined` for an empty one):
   * {@link requestBytes}, read by {@link decodeJsonBody}.
   */
  async request(request: KubeRequest): Promise<unknown> {
    return decodeJsonBody(await this.requestBytes(request), `${request.verb} ${request.path}`);
  }

  /**
   * {@link request} without decoding: resolves with the 2xx body's raw bytes, whole (possibly
   * empty), for a reader that parses them itself (k8s-types' `parseListPage`) and falls back to
   * {@link decodeJsonBody} on the same bytes. The same request, rate limiting, `Retry-After`
   * retries, deadline (it covers the body read), abort and errors (a non-2xx answer is a
   * `KubeApiError`, a reset socket a `KubeTransportError`) as {@link request}. The bytes are the
   * caller's: nothing here keeps a reference once it resolves.
   */
  async requestBytes(request: KubeRequest): Promise<Uint8Array> {
    const opened = await this.#open(request, 'plain');
    try {
      return await readBytes(opened.response.body, Number.POSITIVE_INFINITY);
    } catch (error) {
      throw this.#bodyFailure(error, request, opened);
    } finally {
      opened.response.close();
      opened.release();
    }
  }

  /**
   * {@link requestBytes} for a reader that is done with the body before it returns: the 2xx body is
   * read whole into a buffer and handed to `read` once, synchronously; the call resolves with what
   * `read` returns (a throw from it rejects the call). The body is valid only during `read`: its
   * memory is then reused by the next body this client reads while another read is under way (a
   * LIST's pages: the reflector requests page N+1 while it reads page N), so a paged LIST leaves one
   * buffer of its largest page behind, not one (or, joined from the socket's pieces, two) per page,
   * and the buffer is let go with the LIST's last page. With the default transport the body is read
   * off a connection of its own into one reused read buffer (`TransportRequest.readWhole`), not
   * through node:http's fresh Buffer per socket read. The same request, rate limiting,
   * `Retry-After` retries, deadline (it covers the body read), abort and errors as {@link requestBytes}.
   */
  async requestBody<R>(request: KubeRequest, read: (body: Uint8Array) => R): Promise<R> {
    this.#bodyReads++;
    let body: { readonly buffer: Buffer; readonly length: number } | undefined;
    try {
      const opened = await this.#open(request, 'whole');
      let result: R;
      try {
        try {
          // Taken only now that the body arrives: the read that requested this one has let its buffer go.
          body = await readInto(opened.response, this.#spareBodies.pop());
        } catch (error) {
          throw this.#bodyFailure(error, request, opened);
        }
        // Read before the response is closed: a read that `read` starts (a LIST's next page) is
        // then under way when this one's transport lets its read buffer go, and gets it.
        result = read(body.buffer.subarray(0, body.length));
      } finally {
        opened.response.close();
        opened.release();
      }
      return result;
    } finally {
      this.#bodyReads--;
      // Kept for a read already under way only: an idle client holds no body buffer.
      if (
        body !== undefined &&
        this.#bodyReads > 0 &&
        body.buffer.length <= MAX_SPARE_BODY_BYTES &&
        this.#spareBodies.length === 0
      )
        this.#spareBodies.push(body.buffer);
      else if (this.#bodyReads === 0) this.#spareBodies.length = 0;
    }
  }

  /**
   * An error while reading a body: the abort reason when the request was aborted (or timed out),
   * this package's own errors as they are, and anything else (a reset socket) as a
   * {@link KubeTransportError}.
   */
  #bodyFailure(error: unknown, request: KubeRequest, opened: Opened): unknown {
    if (opened.signal.aborted) return abortReason(opened.signal);
    if (isKubeClientError(error)) return error;
    return new KubeTransportError(request.verb, opened.path, error);
  }

  /**
   * Opens a streamed request and yields what `split` makes of its body, until the server ends it or
   * the signal aborts; a failure while reading is mapped by {@link #bodyFailure}, and the response
   * and its connection are let go however the reader stops. Nothing is sent before the first `next()`.
   */
  async *#streamed<T>(
    request: KubeRequest,
    split: (body: AsyncIterable<Uint8Array | string>, maxFrameBytes: number) => AsyncGenerator<T, void, undefined>,
  ): AsyncGenerator<T, void, undefined> {
    const opened = await this.#open(request, 'stream');
    try {
      yield* split(opened.response.body, request.maxFrameBytes ?? this.#maxFrameBytes);
    } catch (error) {
      throw this.#bodyFailure(error, request, opened);
    } finally {
      opened.response.close();
      opened.release();
    }
  }

  /**
   * Opens a streamed request (a WATCH) and yields its body's lines, each one JSON frame. The request
   * deadline covers the wait for the response headers only; after them the stream lasts until the
   * server ends it (`timeoutSeconds`) or the signal aborts.
   */
  stream(request: KubeRequest): AsyncGenerator<string, void, undefined> {
    return this.#streamed(request, splitLines);
  }

  /**
   * {@link stream}, one batch per socket read, without decoding: the bytes of each frame the socket read completes, one
   * `Uint8Array` per frame (a view on the read's buffer when the frame lies inside it), for a reader
   * that parses frames from their UTF-8 bytes (k8s-types' `parseWatchFrame`). A batch's frames are
   * valid until the next batch is asked for (the read buffer is reused): copy a frame to keep it.
   * The same frames, request, deadline, errors and teardown as {@link stream}, batched per read; see
   * `splitFrameBatches`.
   */
  streamFrameBatches(request: KubeRequest): AsyncGenerator<Uint8Array[], void, undefined> {
    return this.#streamed(request, splitFrameBatches);
  }

  #url(request: KubeRequest): { url: URL; path: string } {
    const cluster = this.#auth.getCurrentCluster();
    if (!cluster) throw new OptionsError('KubeClient', 'the KubeConfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + request.path);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    // What errors carry: path and query only, never the host or userinfo.
    return { url, path: url.pathname + url.search };
  }

  /**
   * `mode`: `'stream'` a long body read piece by piece (a watch; the deadline ends with the head),
   * `'whole'` a body read whole by {@link requestBody} (pieces copied as they come), `'plain'` any
   * other request.
   */
  async #open(request: KubeRequest, mode: 'plain' | 'stream' | 'whole'): Promise<Opened> {
    const streaming = mode === 'stream';
    const { verb } = request;
    const { url, path } = this.#url(request);
    const user = request.signal;
    if (user?.aborted) throw abortReason(user);
    const timeoutMs = request.timeoutMs ?? this.#timeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0)
      throw new OptionsError('KubeClient', `timeoutMs must be a finite number >= 0, got ${String(timeoutMs)}`);
    const controller = new AbortController();
    const onUserAbort = (): void => controller.abort(abortReason(user!));
    user?.addEventListener('abort', onUserAbort, { once: true });
    const started = this.#clock.now();
    const timeoutError = (during: string): KubeRequestTimeoutError => new KubeRequestTimeoutError(verb, path, timeoutMs, during);
    let timer: unknown =
      timeoutMs > 0
        ? this.#clock.setTimeout(() => controller.abort(timeoutError('waiting for the server')), timeoutMs)
        : undefined;
    const clearTimer = (): void => {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      timer = undefined;
    };
    const release = (): void => {
      clearTimer();
      user?.removeEventListener('abort', onUserAbort);
    };
    const remaining = (): number => (timeoutMs > 0 ? timeoutMs - (this.#clock.now() - started) : Number.POSITIVE_INFINITY);
    const headers: Record<string, string> = { Accept: request.accept ?? 'application/json' };
    if (this.#userAgent !== undefined) headers['User-Agent'] = this.#userAgent;
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['Content-Type'] = request.contentType ?? 'application/json';
    }
    const limited = this.#limiter !== undefined && (this.#limitReads || !READS.has(verb));
    try {
      for (let attempt = 0; ; attempt++) {
        // Every attempt takes a token, as client-go's retry path throttles before each try.
        if (limited) {
          const waitStarted = this.#clock.now();
          await this.#limiter!.wait(controller.signal, remaining(), () =>
            timeoutError('waiting for the client-side rate limiter'),
          );
          this.#reportWait(this.#clock.now() - waitStarted, verb);
        }
        let response: TransportResponse;
        try {
          response = await this.#transport({
            method: request.method,
            url,
            headers,
            body,
            signal: controller.signal,
            stream: mode !== 'plain',
            readWhole: mode === 'whole',
          });
        } catch (error) {
          if (controller.signal.aborted) throw abortReason(controller.signal);
          // The transport's own configuration errors (a refused scheme) are not transport failures.
          if (error instanceof OptionsError) throw error;
          throw new KubeTransportError(verb, path, error);
        }
        const warning = response.header('warning');
        if (warning !== undefined) this.#onWarning?.(warning, { verb, path });
        if (response.status >= 200 && response.status < 300) {
          if (streaming) clearTimer();
          return { response, signal: controller.signal, path, release };
        }
        const error = await this.#failure(response, verb, path, controller.signal);
        if (!this.#retryable(error, verb) || attempt >= this.#maxRetries) throw error;
        if (error.retryAfterSeconds! * 1000 > remaining()) throw error;
        await sleep(this.#clock, error.retryAfterSeconds! * 1000, controller.signal);
      }
    } catch (error) {
      release();
      throw error;
    }
  }

  #reportWait(waitMs: number, verb: Verb): void {
    try {
      this.#onRateLimitWait?.(waitMs, { verb, lane: this.lane });
    } catch {
      // An observer's failure must not fail the request it observes.
    }
  }

  /**
   * A 429 was not admitted, so any verb may be sent again; a 5xx with `Retry-After` may have been
   * applied, so only a read is retried (client-go retries writes there too).
   */
  #retryable(error: KubeApiError, verb: Verb): boolean {
    if (error.retryAfterSeconds === undefined) return false;
    if (error.statusCode === 429) return true;
    return error.statusCode >= 500 && READS.has(verb);
  }

  async #failure(response: TransportResponse, verb: Verb, path: string, signal: AbortSignal): Promise<KubeApiError> {
    let text = '';
    try {
      text = await readText(response.body, MAX_ERROR_BODY);
    } catch (error) {
      if (signal.aborted) throw abortReason(signal);
      // The status code alone still classifies the failure.
    } finally {
      response.close();
    }
    const status = readStatus(text);
    return new KubeApiError({
      statusCode: response.status,
      status,
      verb,
      path,
      retryAfterSeconds: retryAfterSeconds(response, status),
    });
  }
}
