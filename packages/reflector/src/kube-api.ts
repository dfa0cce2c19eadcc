import http from 'node:http';
import https from 'node:https';
import { statusSchema, type ApiResource, type ApiStatus } from '@reconcile-loop/k8s-types';
import type { ListRequest, ListResult, ListWatchClient, ListWatchScope, WatchRequest } from './client.js';
import { ApiStatusError, KubeApiProtocolError, KubeClientConfigError, ReflectorOptionsError, WatchFrameTooLargeError, type ApiRequestInfo } from './errors.js';

/**
 * The only module that talks to the apiserver. It speaks HTTP itself (raw JSON for LIST, a streamed
 * body split into lines for WATCH) and borrows everything about auth and TLS from the client's
 * `KubeConfig`, so tokens, exec plugins, client certificates, CA bundles and proxies stay the
 * client's business.
 */

/**
 * The part of @kubernetes/client-node's `KubeConfig` this module uses. Both methods exist with the
 * same meaning in client-node 1.x and 2.x (2.x dropped `applyToFetchOptions`, which is why it is not
 * used), so a `KubeConfig` from either major satisfies it structurally.
 */
export interface KubeConfigAuth {
  getCurrentCluster(): { readonly server: string } | null;
  /** Fills in headers (bearer token, exec-plugin token, impersonation), basic auth, TLS material and an agent. */
  applyToHTTPSOptions(options: https.RequestOptions): Promise<void>;
}

/** Most a non-2xx body is read for its `Status`. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * Default cap on one watch frame, in characters of the decoded line: 16 Mi. client-go's streaming
 * decoder capped a frame at 1 MiB, later 16 MiB; etcd refuses an object over 1.5 MiB by default, so
 * no real frame comes near it, and a line past it is a broken peer, not an object.
 */
export const DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024;

/** Options for {@link KubeApiClient}. */
export interface KubeApiClientOptions {
  /** Longest watch frame accepted, in characters of the decoded line (bytes, for ASCII JSON). Default {@link DEFAULT_MAX_FRAME_SIZE}. */
  maxFrameSize?: number | undefined;
}

/**
 * The collection URL path of `resource`: `/api/v1/namespaces/{ns}/pods` or `/api/v1/pods` for the
 * core group, `/apis/{group}/{version}/namespaces/{ns}/{plural}` (or without the namespace) otherwise.
 */
export function resourcePath(resource: ApiResource, namespace?: string): string {
  const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource.plural}` : `${base}/${resource.plural}`;
}

function parseStatus(body: string): ApiStatus | undefined {
  try {
    const result = statusSchema.safeParse(JSON.parse(body));
    return result.success ? result.data : undefined;
  } catch {
    return undefined;
  }
}

async function readBody(response: http.IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    if (size < limit) chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `Retry-After` as whole seconds; the HTTP-date form is not used by the apiserver and reads as absent. */
function retryAfterHeader(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined;
  return Number(text);
}

/** The URL as logged and carried by errors: user info stripped (credentials travel in headers, never here). */
function printable(url: URL): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

async function failure(response: http.IncomingMessage, request: ApiRequestInfo): Promise<ApiStatusError> {
  const statusCode = response.statusCode ?? 0;
  let body = '';
  try {
    body = await readBody(response, MAX_ERROR_BODY);
  } catch {
    // The status code alone still classifies the failure.
  }
  return new ApiStatusError(statusCode, parseStatus(body), undefined, { request, retryAfterSeconds: retryAfterHeader(response.headers['retry-after']) });
}

/**
 * Splits a decoded watch body into its lines (one JSON frame each), whatever the chunking: a frame
 * split across chunks is joined, blank lines are dropped. A body that ends in the middle of a frame
 * throws {@link KubeApiProtocolError}: the apiserver ends every frame with a newline, so a remainder
 * means the connection was cut, and the frame will be replayed from the cursor.
 *
 * A line longer than `maxFrameSize` characters throws {@link WatchFrameTooLargeError} as soon as the
 * unfinished part passes the cap: memory held for one frame never exceeds the cap plus one chunk.
 */
export async function* splitWatchLines(chunks: AsyncIterable<string>, maxFrameSize = DEFAULT_MAX_FRAME_SIZE): AsyncGenerator<string, void, undefined> {
  let partial = '';
  for await (const chunk of chunks) {
    let start = 0;
    let end = chunk.indexOf('\n');
    while (end !== -1) {
      if (partial.length + end - start > maxFrameSize) throw new WatchFrameTooLargeError(maxFrameSize);
      const line = partial === '' ? chunk.slice(start, end) : partial + chunk.slice(start, end);
      partial = '';
      if (line.length > 0 && line !== '\r') yield line;
      start = end + 1;
      end = chunk.indexOf('\n', start);
    }
    if (start < chunk.length) {
      if (partial.length + chunk.length - start > maxFrameSize) throw new WatchFrameTooLargeError(maxFrameSize);
      partial += chunk.slice(start);
    }
  }
  if (partial.trim() !== '') throw new KubeApiProtocolError('watch stream ended in the middle of a frame');
}

/**
 * A {@link ListWatchClient} for one kind, over HTTP(S) with auth and TLS from a `KubeConfig`.
 *
 * ```ts
 * const kc = new KubeConfig();
 * kc.loadFromDefault();
 * const client = new KubeApiClient(kc, podResource);
 * ```
 */
export class KubeApiClient implements ListWatchClient {
  readonly #kubeConfig: KubeConfigAuth;
  readonly #resource: ApiResource;
  readonly #maxFrameSize: number;

  constructor(kubeConfig: KubeConfigAuth, resource: ApiResource, options: KubeApiClientOptions = {}) {
    this.#kubeConfig = kubeConfig;
    this.#resource = resource;
    const maxFrameSize = options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
    if (!Number.isSafeInteger(maxFrameSize) || maxFrameSize < 1) {
      throw new ReflectorOptionsError(`maxFrameSize must be a positive integer, got ${String(maxFrameSize)}`);
    }
    this.#maxFrameSize = maxFrameSize;
  }

  /** LIST without `resourceVersion`: a consistent read of the newest state, never one from the past. */
  async list(request: ListRequest): Promise<ListResult> {
    const response = await this.#get(this.#url(request, {}), 'list', request.signal);
    let body: unknown;
    try {
      body = JSON.parse(await readBody(response, Number.POSITIVE_INFINITY));
    } catch (error) {
      if (request.signal.aborted) throw error;
      throw new KubeApiProtocolError(`LIST body is not JSON: ${(error as Error).message}`);
    }
    const { items, metadata } = (body ?? {}) as { items?: unknown; metadata?: { resourceVersion?: unknown } };
    if (items != null && !Array.isArray(items)) throw new KubeApiProtocolError('LIST body has a non-array items');
    const resourceVersion = metadata?.resourceVersion;
    if (typeof resourceVersion !== 'string' || resourceVersion === '') throw new KubeApiProtocolError('LIST body has no metadata.resourceVersion');
    return { items: (items as unknown[] | null | undefined) ?? [], resourceVersion };
  }

  /** WATCH from `request.resourceVersion`, yielding one JSON line per frame. */
  watch(request: WatchRequest): AsyncIterable<string> {
    const query = {
      watch: 'true',
      resourceVersion: request.resourceVersion,
      timeoutSeconds: String(request.timeoutSeconds),
      allowWatchBookmarks: String(request.allowWatchBookmarks),
    };
    return this.#lines(this.#url(request, query), request.signal);
  }

  async *#lines(url: URL, signal: AbortSignal): AsyncGenerator<string, void, undefined> {
    const response = await this.#get(url, 'watch', signal);
    try {
      response.setEncoding('utf8'); // decodes a character split across chunks correctly
      yield* splitWatchLines(response as AsyncIterable<string>, this.#maxFrameSize);
    } finally {
      response.destroy();
    }
  }

  /** Throws {@link KubeClientConfigError} (permanent) when the KubeConfig cannot address a server. */
  #url(scope: ListWatchScope, query: Record<string, string>): URL {
    const cluster = this.#kubeConfig.getCurrentCluster();
    if (!cluster) throw new KubeClientConfigError('the KubeConfig has no current cluster (no current-context, or it names no cluster): nothing to connect to');
    let url: URL;
    try {
      url = new URL(String(cluster.server ?? '').replace(/\/+$/, '') + resourcePath(this.#resource, scope.namespace));
    } catch {
      throw new KubeClientConfigError(`the KubeConfig's current cluster has no usable server URL (${JSON.stringify(String(cluster.server ?? ''))})`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new KubeClientConfigError(`the KubeConfig's server URL scheme ${url.protocol} is not supported (http: or https: only)`);
    }
    if (scope.labelSelector) url.searchParams.set('labelSelector', scope.labelSelector);
    if (scope.fieldSelector) url.searchParams.set('fieldSelector', scope.fieldSelector);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    return url;
  }

  /** Sends a GET with the KubeConfig's auth; resolves with a 2xx response, rejects with {@link ApiStatusError} otherwise. */
  async #get(url: URL, verb: ApiRequestInfo['verb'], signal: AbortSignal): Promise<http.IncomingMessage> {
    signal.throwIfAborted();
    // Asked afresh per request: an exec plugin or token file may have rotated the credential.
    const options: https.RequestOptions = { headers: {} };
    await this.#kubeConfig.applyToHTTPSOptions(options);
    signal.throwIfAborted();
    const transport = url.protocol === 'http:' ? http : https;
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = transport.request(url, {
        ...options,
        method: 'GET',
        headers: { ...(options.headers as http.OutgoingHttpHeaders | undefined), Accept: 'application/json' },
        signal,
      });
      request.once('response', resolve);
      // Stays attached after the response: a later socket error must not be an unhandled 'error' event.
      request.on('error', reject);
      request.end();
    });
    const statusCode = response.statusCode ?? 0;
    if (statusCode >= 200 && statusCode < 300) return response;
    throw await failure(response, { verb, url: printable(url) });
  }
}
