import { OptionsError } from '@reconcile-loop/primitives';
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import {} from '../errors.js';
import { HttpFramingError } from './http1-framing.js';
import type { Transport, TransportResponse } from './transport-types.js';
import { BACKLOG_READ_BYTES, bareSocketCan, openWatchStream, ReadBuffers } from './watch-stream.js';

/**
 * client-node's refusal of a plain-http server without `skip-tls-verify` — what an empty KubeConfig
 * (no kubeconfig file at all: client-node falls back to `http://localhost:8080`) answers on every
 * request. No retry can change it, unlike an exec credential plugin failing for a moment.
 */
const HTTP_REFUSED = /HTTP protocol is not allowed/;

/**
 * The part of @kubernetes/client-node's `KubeConfig` this client uses. Both methods exist with the
 * same meaning in client-node 1.4+ and 2.x (2.x dropped `applyToFetchOptions`, which is why it is
 * not used), so a `KubeConfig` from either major satisfies it structurally and client-node is never
 * imported at runtime.
 */
export interface KubeConfigAuth {
  getCurrentCluster(): { readonly server: string } | null;
  /** Fills in headers (bearer token, exec-plugin token, impersonation), basic auth, TLS material and an agent. */
  applyToHTTPSOptions(options: https.RequestOptions): Promise<void>;
}

/** Options of {@link httpTransport}. */
export interface HttpTransportOptions {
  /**
   * Read a streamed GET (a WATCH, or a LIST page the client reads whole: `TransportRequest.readWhole`)
   * straight off its own socket into one reused buffer (see `watch-stream.ts`) instead of through node:http. Default true; used only when the request's
   * options need nothing but headers, basic auth and TLS material (no proxy agent), else node:http.
   */
  readonly watchOnBareSocket?: boolean | undefined;
  /**
   * On the bare socket, the size a watch's reads grow to once one read fills its 128 KiB buffer (a
   * backlog), while reads fill it; a read that does not (the backlog is over) sends the watch's
   * reads back to 128 KiB. Default 1 MiB; 131072 or less
   * keeps every watch at 128 KiB (less memory per watch under a backlog, more CPU per byte).
   */
  readonly watchBacklogReadBytes?: number | undefined;
}

/**
 * A {@link Transport} over `node:http` / `node:https` with auth and TLS from `auth`, asked afresh per
 * request: an exec plugin or a token file may have rotated the credential since the last one. A
 * watch is read off a bare socket (see {@link HttpTransportOptions.watchOnBareSocket}).
 */
export function httpTransport(auth: KubeConfigAuth, transportOptions: HttpTransportOptions = {}): Transport {
  const bareSocket = transportOptions.watchOnBareSocket ?? true;
  const backlogReadBytes = transportOptions.watchBacklogReadBytes ?? BACKLOG_READ_BYTES;
  if (!Number.isSafeInteger(backlogReadBytes) || backlogReadBytes < 1) {
    throw new OptionsError(
      'KubeClient',
      `watchBacklogReadBytes must be a positive integer (bytes), got ${String(backlogReadBytes)}`,
    );
  }
  const wholeReads = new ReadBuffers();
  const send: Transport = async (request) => {
    const options: https.RequestOptions = { headers: {} };
    try {
      await auth.applyToHTTPSOptions(options);
    } catch (error) {
      if (request.url.protocol === 'http:' && error instanceof Error && HTTP_REFUSED.test(error.message)) {
        throw new OptionsError(
          'KubeClient',
          `the KubeConfig's server ${request.url.origin} is plain http, which client-node refuses without skip-tls-verify (is there a kubeconfig at all? client-node falls back to http://localhost:8080)`,
          { cause: error },
        );
      }
      throw error;
    }
    request.signal.throwIfAborted();
    if (
      bareSocket &&
      request.stream === true &&
      request.method === 'GET' &&
      request.body === undefined &&
      bareSocketCan(options)
    ) {
      return openWatchStream(request, options, backlogReadBytes, request.readWhole === true ? wholeReads : undefined);
    }
    const module = request.url.protocol === 'http:' ? http : https;
    const headers: http.OutgoingHttpHeaders = {
      ...(options.headers as http.OutgoingHttpHeaders | undefined),
      ...request.headers,
    };
    if (request.body !== undefined) headers['Content-Length'] = Buffer.byteLength(request.body);
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const outgoing = module.request(request.url, { ...options, method: request.method, headers, signal: request.signal });
      outgoing.once('response', resolve);
      // A 101 comes as 'upgrade'; unheard, node:http ends the request with neither a response nor an error.
      outgoing.once('upgrade', (_response: http.IncomingMessage, socket: Duplex) => {
        socket.destroy();
        reject(new HttpFramingError('HPE_PAUSED_UPGRADE', 'the server switched protocols'));
      });
      // Stays attached after the response: a later socket error must not be an unhandled 'error' event.
      outgoing.on('error', reject);
      outgoing.end(request.body);
    });
    return {
      status: response.statusCode ?? 0,
      header(name) {
        const value = response.headers[name.toLowerCase()];
        return Array.isArray(value) ? value.join(', ') : value;
      },
      body: response as AsyncIterable<Buffer>,
      // A body read to its end has handed its socket back to the agent; destroying it then would
      // only cost the keep-alive connection.
      close: () => {
        if (!response.complete) response.destroy();
      },
    };
  };
  return async (request) => {
    if (request.readWhole !== true || request.stream !== true) return send(request);
    // Counted from here, synchronously in the caller's turn: a LIST's next page is counted before
    // the page that requested it closes its response and gives its read buffer back.
    wholeReads.begin();
    let response: TransportResponse;
    try {
      response = await send(request);
    } catch (error) {
      wholeReads.end();
      throw error;
    }
    let ended = false;
    return {
      ...response,
      close: () => {
        response.close();
        if (!ended) {
          ended = true;
          wholeReads.end();
        }
      },
    };
  };
}

/** A server and a bearer token, without a kubeconfig: tests, scripts, an in-cluster token read by hand. */
export interface StaticAuthOptions {
  /** e.g. `https://127.0.0.1:6443`; a path prefix is kept. */
  readonly server: string;
  readonly token?: string | undefined;
  /** PEM CA bundle to verify the server with. */
  readonly ca?: string | undefined;
  /** Skip TLS verification (loopback test servers only). */
  readonly insecureSkipTlsVerify?: boolean | undefined;
}

/** A {@link KubeConfigAuth} for a fixed server and bearer token. */
export function staticAuth(options: StaticAuthOptions): KubeConfigAuth {
  const cluster = Object.freeze({ server: options.server });
  return {
    getCurrentCluster: () => cluster,
    applyToHTTPSOptions: async (target) => {
      if (options.token !== undefined)
        target.headers = { ...(target.headers as Record<string, string>), Authorization: `Bearer ${options.token}` };
      if (options.ca !== undefined) target.ca = options.ca;
      if (options.insecureSkipTlsVerify) target.rejectUnauthorized = false;
    },
  };
}
