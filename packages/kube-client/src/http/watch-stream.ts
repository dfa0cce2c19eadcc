import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import {
  bodyFramer,
  headEnd,
  HttpFramingError,
  MAX_HEAD_BYTES,
  parseHead,
  type BodyFramer,
  type ResponseHead,
} from './http1-framing.js';
import type { TransportRequest, TransportResponse } from './transport-types.js';

/**
 * A watch's response read straight off its socket into one reused buffer: what
 * {@link httpTransport} uses for a streamed GET.
 *
 * Why not node:http: its parser copies every piece of body into a fresh `Buffer` (a 250 MB watch
 * allocates and frees 250 MB, and the reads into them fault fresh pages in), then the pieces pass
 * through a `Readable`. Measured reading a 252 MB watch from a loopback replay: node:http
 * 330–480 ms of the reading thread's CPU, this 65–75 ms (BENCHMARKS.md (15d)).
 *
 * Invariant: the socket reads into one buffer, which is written again only after every piece of
 * body found in it has been handed out and the reader has asked for the next one; until then the
 * socket is paused. So a body piece is valid until the next `next()` (`TransportRequest.stream`),
 * and memory per watch stays one buffer however fast the server writes: TCP's window holds the rest.
 */

/** Bytes read per socket read on a plain connection (TLS hands over one record, up to 16 KiB, at a time). */
export const READ_BUFFER_BYTES = 128 * 1024;

/**
 * Bytes read per socket read, by default, once a read has filled {@link READ_BUFFER_BYTES}: the
 * server has a backlog (a watch from an old cursor, a burst), and larger reads take it with fewer
 * turns of the event loop and fewer waits on the sender (BENCHMARKS.md (15e)). Used while reads fill
 * it: a read that leaves it part empty took everything the socket had, so the next read goes to the
 * {@link READ_BUFFER_BYTES} buffer again, and a full one of those back to this.
 *
 * Why not keep it: the socket holds the buffer of its next read for as long as no data comes, a
 * watch stays open for minutes to hours, and a controller holds one per kind (and per shard range),
 * so 1 MiB kept per watch after one burst was most of the heap a sharded replica held beyond its
 * share of the store (BENCHMARKS.md (27)). Let go means its memory moved out of every view of it
 * (`ArrayBuffer.prototype.transfer`) once the reader is done with its pieces, and then held only
 * weakly: a suspended generator or async function keeps the values of its dead locals (V8 saves its
 * registers whole), so the last chunk, batch and frame of a burst stay referenced by the readers'
 * frames for as long as the watch is quiet, and each would keep the whole buffer alive. A backlog
 * that comes back before a collection reads into the same memory: reads that alternate between the
 * sizes allocate nothing.
 */
export const BACKLOG_READ_BYTES = 1024 * 1024;

/** The TLS options of `https.RequestOptions` passed on to `tls.connect`: what client-node's `applyToHTTPSOptions` sets, and the version bounds. */
const TLS_KEYS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
  'ciphers',
  'honorCipherOrder',
  'ecdhCurve',
  'crl',
  'dhparam',
  'secureOptions',
  'secureProtocol',
  'sessionIdContext',
  'minVersion',
  'maxVersion',
  'checkServerIdentity',
] as const;
/** Options node:http would also honour that change nothing here: headers are sent, `auth` becomes a header, `timeout` is the client's own deadline. */
const PLAIN_KEYS = new Set<string>(['headers', 'agent', 'auth', 'timeout', ...TLS_KEYS]);

/**
 * True when `options` (as `applyToHTTPSOptions` filled them) can be honoured on a bare socket: no
 * option this module does not know (a socket path, a lookup, a local address…), an agent that is
 * node's own `http.Agent` / `https.Agent` (client-node makes one per request) rather than a proxy
 * agent, which must open the connection itself, and no proxy from the environment (`env`, `execArgv`).
 */
export function bareSocketCan(
  options: https.RequestOptions,
  env: NodeJS.ProcessEnv = process.env,
  execArgv: readonly string[] = process.execArgv,
): boolean {
  if (envProxyOn(env, execArgv)) return false;
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && !PLAIN_KEYS.has(key)) return false;
  }
  const agent: unknown = options.agent;
  if (agent === undefined || agent === null || agent === false) return true;
  const prototype: unknown = Object.getPrototypeOf(agent);
  return prototype === http.Agent.prototype || prototype === https.Agent.prototype;
}

/**
 * True when node:http would route through a proxy from the environment: Node 24+ does with
 * `NODE_USE_ENV_PROXY=1` (or `--use-env-proxy`) and an `HTTP(S)_PROXY` variable. The bare socket
 * then stays out of the way rather than connect directly where node:http would not.
 */
function envProxyOn(env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  const enabled =
    (env.NODE_USE_ENV_PROXY !== undefined && env.NODE_USE_ENV_PROXY !== '' && env.NODE_USE_ENV_PROXY !== '0') ||
    execArgv.includes('--use-env-proxy');
  return enabled && ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => (env[name] ?? '') !== '');
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), {
    name: 'AbortError',
    code: 'ABORT_ERR',
  });
}

function hangUp(): Error {
  // What node:http reports when the connection ends before a response.
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

/** The request head: every header validated as node:http validates it, so a CR or LF in a value is refused, never sent. */
function requestHead(request: TransportRequest, options: https.RequestOptions): string {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    ...(options.headers as Record<string, unknown> | undefined),
    ...request.headers,
  })) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    http.validateHeaderName(name);
    http.validateHeaderValue(name, text);
    headers[name] = text;
  }
  if (
    options.auth !== undefined &&
    options.auth !== null &&
    !Object.keys(headers).some((n) => n.toLowerCase() === 'authorization')
  ) {
    headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
  }
  const { url } = request;
  let head = `${request.method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'host' && name.toLowerCase() !== 'connection') head += `${name}: ${value}\r\n`;
  }
  // One response per connection: a watch holds its connection until it ends.
  return `${head}Connection: close\r\n\r\n`;
}

/**
 * Read buffers of {@link READ_BUFFER_BYTES} shared by the whole-body reads of one transport
 * (`TransportRequest.readWhole`: LIST pages). A read is counted from the transport's call
 * ({@link begin}) until the client closes its response ({@link end}); on a bare socket it takes a
 * buffer when its connection opens and gives it back on close, by which time every piece of it has
 * been copied. The buffer given back is kept only while another whole read is counted (a LIST's next
 * page, requested before this one's response is closed), so a LIST's pages share one read buffer and
 * an idle transport holds none.
 */
export class ReadBuffers {
  #spare: Buffer | undefined;
  #open = 0;

  begin(): void {
    this.#open++;
  }

  /** One whole read is over (its response closed, or it failed before one). */
  end(): void {
    this.#open = Math.max(0, this.#open - 1);
    if (this.#open === 0) this.#spare = undefined;
  }

  take(): Buffer {
    const buffer = this.#spare ?? Buffer.allocUnsafe(READ_BUFFER_BYTES);
    this.#spare = undefined;
    return buffer;
  }

  give(buffer: Buffer): void {
    // Called before the giver's own end(): kept for another read only.
    if (buffer.length === READ_BUFFER_BYTES && this.#open > 1) this.#spare = buffer;
  }

  /** Whether a buffer is kept (tests). */
  get holding(): boolean {
    return this.#spare !== undefined;
  }
}

/**
 * Sends `request` (a GET without a body) on a connection of its own and resolves with the response
 * once its head has arrived; the body is read as the {@link TransportResponse.body} is iterated.
 * `options` must satisfy {@link bareSocketCan}. Reads grow from {@link READ_BUFFER_BYTES} to
 * `backlogReadBytes` once one fills its buffer ({@link READ_BUFFER_BYTES} or less: they never grow).
 */
export function openWatchStream(
  request: TransportRequest,
  options: https.RequestOptions,
  backlogReadBytes = BACKLOG_READ_BYTES,
  reads?: ReadBuffers,
): Promise<TransportResponse> {
  return new Promise((resolve, reject) => new WatchStream(request, options, backlogReadBytes, reads, resolve, reject));
}

/** One connection, one response: the reader of the head, then of the body. */
class WatchStream {
  readonly #socket: net.Socket;
  /** Where the next socket read goes: {@link #small}, or a grown buffer during a backlog (see {@link BACKLOG_READ_BYTES}). */
  #buffer: Buffer;
  readonly #backlogReadBytes: number;
  /** The {@link READ_BUFFER_BYTES} buffer (or the whole-body read's): where reads go outside a backlog. */
  readonly #small: Buffer;
  /** The grown buffer's memory, let go ({@link BACKLOG_READ_BYTES}): until a collection or the next backlog. */
  #grown: WeakRef<ArrayBuffer> | undefined;
  /** The grown buffer after a part-empty read into it: let go once the reader is done with that read's pieces. */
  #retiring: Buffer | undefined;
  /** Where {@link #buffer} came from and goes back to on close (a whole-body read); reads then never grow. */
  readonly #reads: ReadBuffers | undefined;
  #resolve: ((response: TransportResponse) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  /** The head's bytes so far (copied: the read buffer is reused). */
  #head: Buffer = Buffer.alloc(0);
  #framer: BodyFramer | undefined;
  /** Body pieces found in the current read, not yet handed out. */
  readonly #pieces: Uint8Array[] = [];
  #complete = false;
  /** The reader closed the response. */
  #closed = false;
  #failure: unknown;
  /** The reader waiting for a piece. */
  #waiter: { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: unknown) => void } | undefined;
  readonly #signal: AbortSignal;
  readonly #onAbort = (): void => this.#fail(abortError(this.#signal));
  readonly #sink = (piece: Uint8Array): void => {
    this.#pieces.push(piece);
  };

  constructor(
    request: TransportRequest,
    options: https.RequestOptions,
    backlogReadBytes: number,
    reads: ReadBuffers | undefined,
    resolve: (response: TransportResponse) => void,
    reject: (error: unknown) => void,
  ) {
    this.#reads = reads;
    this.#small = reads === undefined ? Buffer.allocUnsafe(READ_BUFFER_BYTES) : reads.take();
    this.#buffer = this.#small;
    this.#backlogReadBytes = reads === undefined ? backlogReadBytes : READ_BUFFER_BYTES;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = request.signal;
    const { url } = request;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const secure = url.protocol === 'https:';
    const port = Number(url.port) || (secure ? 443 : 80);
    const head = requestHead(request, options);
    // A function: the socket asks it for the buffer of each next read.
    const onread = { buffer: () => this.#buffer, callback: (bytes: number, into: Buffer): boolean => this.#read(bytes, into) };
    if (secure) {
      const tlsOptions: tls.ConnectionOptions = { host, port, onread } as tls.ConnectionOptions;
      for (const key of TLS_KEYS) {
        if (options[key] !== undefined) (tlsOptions as Record<string, unknown>)[key] = options[key];
      }
      // SNI as node:https sends it: the host name, never an IP address.
      if (tlsOptions.servername === undefined && net.isIP(host) === 0) tlsOptions.servername = host;
      this.#socket = tls.connect(tlsOptions);
    } else {
      this.#socket = net.connect({ host, port, onread } as net.NetConnectOpts);
    }
    this.#socket.on('error', (error) => this.#fail(error));
    this.#socket.on('end', () => this.#ended());
    this.#socket.on('close', () => this.#ended());
    this.#socket.write(head);
    if (this.#signal.aborted) this.#onAbort();
    else this.#signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** One socket read of `count` bytes into `into`. Returns false to pause the socket. */
  #read(count: number, into: Buffer): boolean {
    // A read comes only once every piece of the reads before it was handed out and asked past, so a
    // retiring buffer may go now.
    this.#retire();
    // A full read: the server has more ready than a read takes, so the next read grows. A part-empty
    // read into the grown buffer: the socket had no more, the backlog is over, so the next read goes
    // to the small buffer and the grown one retires once this read's pieces are done. Either way the
    // pieces of this read keep `into`; only the next read goes elsewhere.
    if (count === into.length && into.length < this.#backlogReadBytes) {
      const memory = this.#grown?.deref();
      this.#grown = undefined;
      this.#buffer = memory === undefined ? Buffer.allocUnsafe(this.#backlogReadBytes) : Buffer.from(memory);
    } else if (count < into.length && into !== this.#small) {
      this.#buffer = this.#small;
      this.#retiring = into;
    }
    try {
      let from = 0;
      if (this.#framer === undefined) {
        from = this.#readHead(count, into);
        if (this.#framer === undefined) return true;
      }
      if (!this.#complete && this.#framer.feed(into, from, count, this.#sink)) {
        this.#complete = true;
        this.#stopReading();
      }
    } catch (error) {
      this.#fail(error);
      return false;
    }
    if (this.#pieces.length === 0 && !this.#complete) return true;
    this.#wake();
    return false;
  }

  /** Adds a read to the head; once the head is whole, answers it and returns where its body starts in the buffer. */
  #readHead(count: number, into: Buffer): number {
    const before = this.#head.length;
    this.#head = Buffer.concat([this.#head, into.subarray(0, count)]);
    let end = headEnd(this.#head, Math.max(0, before - 3));
    // 1xx heads (100 Continue, 103 Early Hints) precede the response: dropped.
    let head: ResponseHead;
    for (;;) {
      // The head so far, or the whole head once it has arrived, must fit node:http's cap.
      if ((end === -1 ? this.#head.length : end) > MAX_HEAD_BYTES)
        throw new HttpFramingError('HPE_HEADER_OVERFLOW', `response head over ${MAX_HEAD_BYTES} bytes`);
      if (end === -1) return count;
      head = parseHead(this.#head.subarray(0, end));
      if (head.status >= 200) break;
      // llhttp pauses at a 101 (HPE_PAUSED_UPGRADE); node:http, with no 'upgrade' listener, then
      // closes the request without a response or an error: a watch must fail instead.
      if (head.status === 101) throw new HttpFramingError('HPE_PAUSED_UPGRADE', 'the server switched protocols on a watch');
      this.#head = this.#head.subarray(end);
      end = headEnd(this.#head, 0);
    }
    const framer = bodyFramer(head);
    // The body's first bytes are the read's last ones.
    const bodyFrom = count - (this.#head.length - end);
    this.#head = Buffer.alloc(0);
    this.#framer = framer;
    const resolve = this.#resolve!;
    this.#resolve = undefined;
    this.#reject = undefined;
    resolve(this.#response(head));
    return bodyFrom;
  }

  #response(head: ResponseHead): TransportResponse {
    const next = (): Promise<IteratorResult<Uint8Array>> =>
      new Promise((resolve, reject) => {
        this.#waiter = { resolve, reject };
        this.#wake();
        // Nothing left to hand out: the reader is done with every piece of the last read, so the buffer may be written again.
        if (this.#waiter !== undefined) {
          this.#retire();
          this.#socket.resume();
        }
      });
    const close = (): void => this.#close();
    const iterator: AsyncIterator<Uint8Array> = {
      next,
      return: () => {
        close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
    return {
      status: head.status,
      header: (name) => head.headers.get(name.toLowerCase()),
      body: { [Symbol.asyncIterator]: () => iterator },
      close,
    };
  }

  /** Answers the waiting reader, if any and if there is an answer: a piece, the failure, or the end. */
  #wake(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    const piece = this.#pieces.shift();
    if (piece !== undefined) waiter.resolve({ done: false, value: piece });
    else if (this.#failure !== undefined) waiter.reject(this.#failure);
    else if (this.#complete) waiter.resolve({ done: true, value: undefined });
    else this.#waiter = waiter;
  }

  /** The connection ended: the body is complete when its framing says so (or it runs to the end); else the response was cut. */
  #ended(): void {
    if (this.#complete || this.#failure !== undefined) return;
    if (this.#framer === undefined) {
      this.#fail(hangUp());
      return;
    }
    try {
      this.#framer.end();
      this.#complete = true;
      this.#stopReading();
      this.#wake();
    } catch (error) {
      this.#fail(error);
    }
  }

  #fail(error: unknown): void {
    if (this.#complete || this.#failure !== undefined) return;
    this.#failure = error;
    this.#stopReading();
    if (this.#reject !== undefined) {
      const reject = this.#reject;
      this.#resolve = undefined;
      this.#reject = undefined;
      reject(error);
    }
    this.#wake();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#complete = true;
    this.#pieces.length = 0;
    this.#stopReading();
    // The reader is done with every piece (it closes once it has copied them) and the socket, destroyed, reads no more.
    this.#reads?.give(this.#buffer);
  }

  /**
   * Lets the retiring grown buffer go: its memory moves to an `ArrayBuffer` held only weakly, and
   * every view of it left anywhere (a reader's suspended frame) reads as empty. Called only when the
   * reader is done with every piece of that buffer; the socket reads into the small buffer by then.
   */
  #retire(): void {
    const retiring = this.#retiring;
    if (retiring === undefined) return;
    this.#retiring = undefined;
    this.#grown = new WeakRef((retiring.buffer as ArrayBuffer & { transfer(): ArrayBuffer }).transfer());
  }

  #stopReading(): void {
    this.#signal.removeEventListener('abort', this.#onAbort);
    this.#socket.destroy();
  }
}
