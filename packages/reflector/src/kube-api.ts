import type { ApiResource, ObjectSchema } from '@reconcile-loop/k8s-types';
import { DEFAULT_MAX_FRAME_BYTES, KubeClient, type KubeConfigAuth, type ResourceClient } from '@reconcile-loop/kube-client';
import { OptionsError } from '@reconcile-loop/primitives';
import type { ListPageResult, ListRequest, ListResult, ListWatchClient, ListWatchScope, WatchRequest } from './client.js';
import { KubeClientConfigError } from './errors.js';

/**
 * The reflector's adapter onto @reconcile-loop/kube-client, the one module of the repository that
 * talks HTTP to the apiserver. Nothing here opens a socket: LIST and WATCH go through a
 * `KubeClient`, and this module only maps its answers onto the {@link ListWatchClient} contract and
 * lets its errors through as they are (a `KubeApiError` with its `Status`, a `KubeProtocolError`,
 * a `WatchFrameTooLargeError`, ...), except a refused client configuration, which becomes the
 * permanent {@link KubeClientConfigError} (kube-client's error as `cause`).
 */

/** Options for {@link KubeApiClient}. */
export interface KubeApiClientOptions {
  /**
   * Longest watch frame accepted, in bytes of the UTF-8 line (characters, for the ASCII JSON the
   * apiserver writes). Sent with every WATCH, so it holds over a shared `KubeClient` too. Default
   * kube-client's `DEFAULT_MAX_FRAME_BYTES` (16 MiB: client-go's streaming decoder's cap; etcd refuses an object over 1.5 MiB by default, so no real frame comes near it).
   */
  maxFrameBytes?: number | undefined;
  /**
   * `true`: every LIST and WATCH asks for `PartialObjectMetadata` (kube-client's `metadataOnly`):
   * the apiserver sends `apiVersion`, `kind` and `metadata` only. Read the answers with k8s-types'
   * `partialObjectMetadataSchema` ({@link metadataReflector} sets both). Default `false`.
   */
  metadataOnly?: boolean | undefined;
}

/**
 * Items pass through unvalidated: the reflector validates each one itself, so a poison item is
 * quarantined (or, without a readable name, skipped) instead of failing the whole LIST, which
 * kube-client's schema-less handle would do for an item without a `metadata` object.
 */
const passThrough = {
  safeParse: (value: unknown) => ({ success: true as const, data: value }),
} as unknown as ObjectSchema<unknown>;

function isKubeClient(value: unknown): value is KubeClient {
  // Duck-typed: a dual ESM/CJS install can load two copies of the class and defeat `instanceof`.
  return (
    typeof (value as KubeClient | null)?.resource === 'function' && typeof (value as KubeClient).currentServer === 'function'
  );
}

/** kube-client's errors pass through; a configuration kube-client refused is permanent for a reflector. */
function reflectorError(error: unknown): unknown {
  if (error instanceof OptionsError) return new KubeClientConfigError(error.message, { cause: error });
  return error;
}

/**
 * Checks that the config addresses a server before each request. Throws {@link KubeClientConfigError}
 * (permanent) when the config cannot address a server: no retry changes a config object.
 */
function checkServer(server: string | undefined): void {
  if (server === undefined)
    throw new KubeClientConfigError(
      'the KubeConfig has no current cluster (no current-context, or it names no cluster): nothing to connect to',
    );
  let url: URL;
  try {
    url = new URL(String(server));
  } catch {
    throw new KubeClientConfigError(
      `the KubeConfig's current cluster has no usable server URL (${JSON.stringify(String(server))})`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new KubeClientConfigError(`the KubeConfig's server URL scheme ${url.protocol} is not supported (http: or https: only)`);
  }
}

/**
 * The `KubeClient` a reflector builds for itself from a `KubeConfig`: no `Retry-After` retries
 * inside the client (`maxRetries: 0`), so a 429 reaches the reflector, which waits it out in its
 * backoff (capped by `retry.maxMs`) and reports it in `health()`; reads are not rate limited
 * (kube-client's default limits writes only, and the reflector only reads).
 */
export function reflectorKubeClient(kubeConfig: KubeConfigAuth, options: KubeApiClientOptions = {}): KubeClient {
  return new KubeClient({ kubeConfig, maxRetries: 0, maxFrameBytes: options.maxFrameBytes });
}

/**
 * A {@link ListWatchClient} for one kind over a kube-client `KubeClient`: given one (shared with
 * the reconciler's writes), or built from a `KubeConfig` (1.x or 2.x, structurally).
 *
 * ```ts
 * const kc = new KubeConfig();
 * kc.loadFromDefault();
 * const client = new KubeApiClient(kc, podResource); // or new KubeApiClient(new KubeClient({ kubeConfig: kc }), podResource)
 * ```
 */
export class KubeApiClient implements ListWatchClient {
  /** The client every request goes through. */
  readonly kubeClient: KubeClient;
  readonly #handle: ResourceClient<unknown>;
  readonly #maxFrameBytes: number;
  readonly #metadataOnly: boolean;
  /** kube-client sends `sendInitialEvents` and `resourceVersionMatch` on a WATCH: watch-list is available. */
  readonly supportsWatchList = true;

  constructor(source: KubeConfigAuth | KubeClient, resource: ApiResource, options: KubeApiClientOptions = {}) {
    const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (!Number.isSafeInteger(maxFrameBytes) || maxFrameBytes < 1) {
      throw new OptionsError('KubeApiClient', `maxFrameBytes must be a positive integer, got ${String(maxFrameBytes)}`);
    }
    this.#maxFrameBytes = maxFrameBytes;
    this.#metadataOnly = options.metadataOnly === true;
    this.kubeClient = isKubeClient(source) ? source : reflectorKubeClient(source, { maxFrameBytes });
    this.#handle = this.kubeClient.resource(resource, passThrough);
  }

  #scoped(scope: ListWatchScope): ResourceClient<unknown> {
    return scope.namespace ? this.#handle.inNamespace(scope.namespace) : this.#handle;
  }

  /**
   * LIST without `resourceVersion`: a consistent read of the newest state, never one from the
   * past (one page of it with `limit`, the next with `continue`). Sent without kube-client's
   * request deadline (`timeoutMs: 0`): the reflector's `listTimeoutMs` governs the LIST through
   * `request.signal`.
   */
  async list(request: ListRequest): Promise<ListResult> {
    checkServer(this.kubeClient.currentServer());
    try {
      const listing = await this.#scoped(request).list(this.#listOptions(request));
      return {
        items: listing.items,
        resourceVersion: listing.resourceVersion,
        continue: listing.continue,
        shardInfo: listing.shardInfo,
      };
    } catch (error) {
      throw reflectorError(error);
    }
  }

  /**
   * {@link list} with the page's bytes handed to `read` (kube-client's `listBytes`): the same
   * request, deadline (none of kube-client's: `listTimeoutMs` governs) and errors. When `read`
   * returns `undefined` the same bytes are read by kube-client's `readList`, exactly what
   * {@link list} does with them, so a body the reader cannot prove is neither refetched nor read
   * differently. The bytes are valid only while `read` runs (kube-client's `readListBytes`: the
   * LIST's next page is read into the same memory), so `read` must copy what it keeps.
   */
  async listPage<P>(request: ListRequest, read: (body: Uint8Array) => P | undefined): Promise<ListPageResult<P>> {
    checkServer(this.kubeClient.currentServer());
    try {
      const handle = this.#scoped(request);
      // The body is valid only inside this callback (kube-client reads the LIST's next page into the
      // same memory): `read`, `listShardInfo` and `readList` each copy what they keep.
      return await handle.readListBytes(this.#listOptions(request), (body): ListPageResult<P> => {
        const page = read(body);
        if (page !== undefined)
          return request.shardSelector === undefined
            ? { kind: 'read', page }
            : { kind: 'read', page, shardInfo: listShardInfo(body) };
        const listing = handle.readList(body);
        return {
          kind: 'exact',
          list: {
            items: listing.items,
            resourceVersion: listing.resourceVersion,
            continue: listing.continue,
            shardInfo: listing.shardInfo,
          },
        };
      });
    } catch (error) {
      throw reflectorError(error);
    }
  }

  #listOptions(request: ListRequest) {
    return {
      labelSelector: request.labelSelector,
      fieldSelector: request.fieldSelector,
      shardSelector: request.shardSelector,
      limit: request.limit,
      continue: request.continue,
      signal: request.signal,
      timeoutMs: 0,
      metadataOnly: this.#metadataOnly,
    };
  }

  /**
   * WATCH from `request.resourceVersion`, yielding one JSON line per frame. kube-client's request
   * deadline covers the wait for the response headers only; the reflector's idle timeout covers
   * the rest. Throws {@link KubeClientConfigError} at once (not on the first `next()`) when the
   * config cannot address a server.
   */
  watch(request: WatchRequest): AsyncIterable<string> {
    checkServer(this.kubeClient.currentServer());
    return mapped(this.#scoped(request).watchLines(this.#watchOptions(request)));
  }

  /**
   * {@link watch}, one array per socket read of each frame's bytes (its UTF-8 line, never decoded
   * to a string): what the reflector uses, so the frames of one read are handled without a promise
   * hop between them and each is read from its bytes (k8s-types' `parseWatchFrame`). kube-client's
   * `watchFrameBatches`: the same frames, caps, errors, deadline and teardown as {@link watch}.
   */
  watchBatches(request: WatchRequest): AsyncIterable<readonly Uint8Array[]> {
    checkServer(this.kubeClient.currentServer());
    return mapped(this.#scoped(request).watchFrameBatches(this.#watchOptions(request)));
  }

  #watchOptions(request: WatchRequest) {
    return {
      resourceVersion: request.resourceVersion,
      timeoutSeconds: request.timeoutSeconds,
      allowWatchBookmarks: request.allowWatchBookmarks,
      sendInitialEvents: request.sendInitialEvents,
      resourceVersionMatch: request.resourceVersionMatch,
      labelSelector: request.labelSelector,
      fieldSelector: request.fieldSelector,
      shardSelector: request.shardSelector,
      signal: request.signal,
      maxFrameBytes: this.#maxFrameBytes,
      metadataOnly: this.#metadataOnly,
    };
  }
}

const SHARD_INFO = /"shardInfo"\s*:\s*\{\s*"selector"\s*:\s*("(?:[^"\\]|\\.)*")/;
const ITEMS = Buffer.from('"items"', 'utf8');

/**
 * A LIST page's `metadata.shardInfo.selector`, read from the body's head (the bytes before
 * `"items"`): the apiserver writes `metadata` before `items` (the Go struct's order), and nothing in
 * a list's metadata contains `"items"`. A body laid out otherwise reads as absent, which only makes
 * the reflector filter an already filtered list again: safe either way.
 */
export function listShardInfo(body: Uint8Array): { readonly selector: string } | undefined {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const end = bytes.indexOf(ITEMS);
  const head = bytes.toString('utf8', 0, end < 0 ? bytes.length : end);
  const match = SHARD_INFO.exec(head);
  if (match === null) return undefined;
  try {
    return { selector: JSON.parse(match[1]!) as string };
  } catch {
    return undefined;
  }
}

async function* mapped<T>(lines: AsyncGenerator<T, void, undefined>): AsyncGenerator<T, void, undefined> {
  try {
    yield* lines;
  } catch (error) {
    throw reflectorError(error);
  }
}
