import { OptionsError } from '@reconcile-loop/primitives';
import type { ObjectSchema, WatchFrame } from '@reconcile-loop/k8s-types';
import { parseObject, readWatchFrame } from '@reconcile-loop/k8s-types/internal';
import { decodeJsonBody, readListBody } from './http/body.js';
import {
  PARTIAL_OBJECT_METADATA_ACCEPT,
  PARTIAL_OBJECT_METADATA_LIST_ACCEPT,
  type KubeRequest,
  type ResourceHost,
} from './request.js';
import { isExpired, KubeProtocolError } from './errors.js';
import { apiVersionOf, collectionPath, objectPath } from './paths.js';
import { toStatus } from './http/status-body.js';
import type {
  ApplyOptions,
  DeleteCollectionOptions,
  DeleteOptions,
  DeleteResult,
  KubeObject,
  ListOptions,
  MetadataOnlyOption,
  ObjectList,
  Patch,
  PatchOptions,
  RequestOptions,
  ResourceRef,
  WatchOptions,
  WriteObject,
  WriteOptions,
} from './types.js';

export type { KubeObject, ResourceRef } from './types.js';

const PATCH_CONTENT_TYPES = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

/** Page size of {@link ResourceClient.listPages} when none is given: client-go's pager default. */
export const DEFAULT_PAGE_SIZE = 500;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The schema of a handle without a view: any object with a `metadata` object passes through as
 * plain JSON. Duck-typed to the one method k8s-types' readers call, so no runtime zod is needed here.
 */
const rawObjectSchema = {
  safeParse(value: unknown) {
    if (isRecord(value) && isRecord(value['metadata'])) return { success: true as const, data: value as KubeObject };
    return {
      success: false as const,
      error: { issues: [{ path: ['metadata'], message: 'expected an object with a metadata object' }] },
    };
  },
} as unknown as ObjectSchema<KubeObject>;

function writeQuery(options: WriteOptions | ApplyOptions | undefined): Record<string, string | undefined> {
  return {
    fieldManager: options?.fieldManager,
    dryRun: options?.dryRun ? 'All' : undefined,
    fieldValidation: options?.fieldValidation,
  };
}

function deleteBody(options: DeleteOptions | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
  if (options?.preconditions) body['preconditions'] = { ...options.preconditions };
  if (options?.propagationPolicy) body['propagationPolicy'] = options.propagationPolicy;
  if (options?.gracePeriodSeconds !== undefined) body['gracePeriodSeconds'] = options.gracePeriodSeconds;
  if (options?.dryRun) body['dryRun'] = ['All'];
  return body;
}

/**
 * A handle on one resource (and, through {@link ResourceClient.inNamespace}, one namespace), typed
 * by its view `T`. Reads validate every object against the view; writes send whole JSON objects.
 * Every non-2xx answer rejects with a `KubeApiError`; see the `is*` helpers.
 */
export class ResourceClient<T> {
  /** Where the kind lives. */
  readonly resource: ResourceRef;
  /** The namespace this handle is scoped to; `undefined` for cluster-scoped kinds or all namespaces. */
  readonly namespace: string | undefined;
  readonly #client: ResourceHost;
  readonly #schema: ObjectSchema<T>;

  /** Use {@link KubeClient.resource}. */
  constructor(client: ResourceHost, resource: ResourceRef, schema: ObjectSchema<T> | undefined, namespace: string | undefined) {
    if (
      !resource ||
      typeof resource.plural !== 'string' ||
      resource.plural === '' ||
      typeof resource.version !== 'string' ||
      typeof resource.group !== 'string'
    ) {
      throw new OptionsError('KubeClient', 'a resource needs group, version and plural');
    }
    this.#client = client;
    this.resource = resource;
    this.#schema = schema ?? (rawObjectSchema as unknown as ObjectSchema<T>);
    this.namespace = namespace;
  }

  /** The same handle scoped to `namespace`. */
  inNamespace(namespace: string): ResourceClient<T> {
    if (typeof namespace !== 'string' || namespace === '')
      throw new OptionsError('KubeClient', 'namespace must be a non-empty string');
    return new ResourceClient<T>(this.#client, this.resource, this.#schema, namespace);
  }

  /** The same handle without a view: objects as plain JSON, for read-modify-write of whole objects. */
  get raw(): ResourceClient<KubeObject> {
    return new ResourceClient<KubeObject>(this.#client, this.resource, rawObjectSchema, this.namespace);
  }

  /** The client this handle sends through. */
  get client(): ResourceHost {
    return this.#client;
  }

  /** Validates one object read back from the server against the view. */
  parse(raw: unknown, context = 'object'): T {
    return parseObject(this.#schema, raw, context);
  }

  #ns(body?: WriteObject): string | undefined {
    return this.namespace ?? body?.metadata?.namespace;
  }

  #name(body: WriteObject, verb: string): string {
    const name = body.metadata?.name;
    if (typeof name !== 'string' || name === '') throw new OptionsError('KubeClient', `${verb} needs metadata.name`);
    return name;
  }

  /**
   * `body` with `apiVersion` and `kind` filled in from the resource when absent: the apiserver
   * decodes a custom resource's body without a type from the URL and refuses it (400, "Object
   * 'Kind' is missing"), where a built-in kind defaults it.
   */
  #typed(body: WriteObject): WriteObject {
    if (this.resource.kind === undefined || (body.apiVersion !== undefined && body.kind !== undefined)) return body;
    return { ...body, apiVersion: body.apiVersion ?? apiVersionOf(this.resource), kind: body.kind ?? this.resource.kind };
  }

  async #object(request: KubeRequest): Promise<T> {
    return this.parse(await this.#client.request(request), request.verb.toUpperCase());
  }

  /** GET one object (its `PartialObjectMetadata` with `metadataOnly`). */
  async get(name: string, options?: RequestOptions & MetadataOnlyOption): Promise<T> {
    return this.#object({
      verb: 'get',
      method: 'GET',
      path: objectPath(this.resource, name, this.namespace),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
      accept: options?.metadataOnly === true ? PARTIAL_OBJECT_METADATA_ACCEPT : undefined,
    });
  }

  #listRequest(options: ListOptions | undefined): KubeRequest {
    return {
      verb: 'list',
      method: 'GET',
      path: collectionPath(this.resource, this.namespace),
      query: {
        labelSelector: options?.labelSelector,
        fieldSelector: options?.fieldSelector,
        shardSelector: options?.shardSelector,
        limit: options?.limit,
        continue: options?.continue,
        resourceVersion: options?.resourceVersion,
        resourceVersionMatch: options?.resourceVersionMatch,
      },
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
      accept: options?.metadataOnly === true ? PARTIAL_OBJECT_METADATA_LIST_ACCEPT : undefined,
    };
  }

  /** One LIST call (one page when `limit` is set): {@link listBytes} read by {@link readList}. */
  async list(options?: ListOptions): Promise<ObjectList<T>> {
    return this.readList(await this.listBytes(options));
  }

  /**
   * {@link list} without reading the answer: the LIST page's raw body bytes (see
   * `KubeClient.requestBytes`), for a reader that parses a page from its bytes (k8s-types'
   * `parseListPage`). The same request, deadline, abort and errors as {@link list}; a body the
   * reader cannot prove goes to {@link readList}, so no second request is needed.
   */
  listBytes(options?: ListOptions): Promise<Uint8Array> {
    return this.#client.requestBytes(this.#listRequest(options));
  }

  /**
   * {@link listBytes} for a reader that is done with the page before it returns: `read` is called
   * once, synchronously, with the page's body, and the call resolves with what it returns. The body
   * is valid only during `read` (`KubeClient` reads the next page of the LIST into the same memory:
   * see `KubeClient.requestBody`); copy what must outlive it. The same request, deadline, abort and
   * errors as {@link listBytes}; a throw from `read` rejects the call.
   */
  readListBytes<R>(options: ListOptions | undefined, read: (body: Uint8Array) => R): Promise<R> {
    const request = this.#listRequest(options);
    const host = this.#client;
    return host.requestBody === undefined ? host.requestBytes(request).then(read) : host.requestBody(request, read);
  }

  /**
   * Reads a LIST page's body bytes exactly as {@link list} does: decoded as `KubeClient.request`
   * decodes (`decodeJsonBody`), checked by `readListBody`, every item validated against the view.
   * Throws `KubeProtocolError` for a body that is not a LIST page, `InvalidObjectError` for an item
   * the view rejects.
   */
  readList(body: Uint8Array): ObjectList<T> {
    const decoded = decodeJsonBody(body, `list ${collectionPath(this.resource, this.namespace)}`);
    return readListBody(decoded, (item) => this.parse(item, 'LIST'));
  }

  /**
   * Every page of a paged LIST (`limit` default 500), following `continue` tokens. Pages after the
   * first are consistent with it; an expired token (410 `Expired`) is thrown, see {@link listAll}.
   */
  async *listPages(options?: Omit<ListOptions, 'continue'>): AsyncGenerator<ObjectList<T>, void, undefined> {
    let token: string | undefined;
    do {
      const page = await this.list({ ...options, limit: options?.limit ?? DEFAULT_PAGE_SIZE, continue: token });
      yield page;
      token = page.continue;
    } while (token !== undefined);
  }

  /**
   * The whole collection, paged. Like client-go's `ListPager` with `FullListIfExpired`: when a
   * continue token expires mid-way, the pages read so far are dropped and one unpaged LIST is done,
   * so the result is always one consistent snapshot.
   */
  async listAll(options?: Omit<ListOptions, 'continue'>): Promise<{ items: T[]; resourceVersion: string }> {
    const items: T[] = [];
    let resourceVersion: string | undefined;
    try {
      for await (const page of this.listPages(options)) {
        resourceVersion ??= page.resourceVersion;
        items.push(...page.items);
      }
    } catch (error) {
      if (resourceVersion === undefined || !isExpired(error)) throw error;
      const full = await this.list({ ...options, limit: undefined });
      return { items: full.items, resourceVersion: full.resourceVersion };
    }
    return { items, resourceVersion: resourceVersion! };
  }

  #watchRequest(options: WatchOptions): KubeRequest {
    return {
      verb: 'watch',
      method: 'GET',
      path: collectionPath(this.resource, this.namespace),
      query: {
        watch: 'true',
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        shardSelector: options.shardSelector,
        resourceVersion: options.resourceVersion,
        resourceVersionMatch: options.resourceVersionMatch,
        timeoutSeconds: options.timeoutSeconds,
        allowWatchBookmarks: String(options.allowWatchBookmarks ?? true),
        sendInitialEvents: options.sendInitialEvents === undefined ? undefined : String(options.sendInitialEvents),
      },
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      maxFrameBytes: options.maxFrameBytes,
      accept: options.metadataOnly === true ? PARTIAL_OBJECT_METADATA_ACCEPT : undefined,
    };
  }

  /** WATCH, yielding each frame's JSON line unparsed (for a reader that validates frames itself). */
  watchLines(options: WatchOptions = {}): AsyncGenerator<string, void, undefined> {
    return this.#client.stream(this.#watchRequest(options));
  }

  /**
   * {@link watchLines}, one array per socket read, without decoding: each frame's bytes (its
   * UTF-8 line without the `\n`), for a reader that parses frames from bytes, such as k8s-types'
   * `parseWatchFrame`. A batch's frames are valid until the next batch is asked for (see
   * `KubeClient.streamFrameBatches`).
   */
  watchFrameBatches(options: WatchOptions = {}): AsyncGenerator<Uint8Array[], void, undefined> {
    return this.#client.streamFrameBatches(this.#watchRequest(options));
  }

  /**
   * WATCH, yielding typed frames: ADDED / MODIFIED / DELETED with the object validated against the
   * view, BOOKMARK with the cursor, and ERROR with the in-band `Status` (a 410 `Expired` arrives
   * this way: the caller relists; `statusError` turns it into a `KubeApiError`). A frame whose
   * envelope cannot be read throws `MalformedWatchFrameError`, an object that does not validate
   * `InvalidObjectError` (from k8s-types).
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchFrame<T>, void, undefined> {
    for await (const line of this.watchLines(options)) {
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch (error) {
        throw new KubeProtocolError(`watch line is not JSON: ${(error as Error).message}`);
      }
      yield readWatchFrame(raw, this.#schema);
    }
  }

  /** POST a new object (`metadata.name` or `generateName`); `apiVersion`/`kind` come from the resource when absent. */
  async create(body: WriteObject, options?: WriteOptions): Promise<T> {
    return this.#object({
      verb: 'create',
      method: 'POST',
      path: collectionPath(this.resource, this.#ns(body)),
      query: writeQuery(options),
      body: this.#typed(body),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
  }

  /** PUT the whole object; with `metadata.resourceVersion` set, a stale one is a 409 Conflict. */
  async update(body: WriteObject, options?: WriteOptions): Promise<T> {
    const path = objectPath(this.resource, this.#name(body, 'update'), this.#ns(body));
    return this.#object({
      verb: 'update',
      method: 'PUT',
      path,
      query: writeQuery(options),
      body: this.#typed(body),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
  }

  /** PUT the object to its `status` subresource: only `status` changes. */
  async updateStatus(body: WriteObject, options?: WriteOptions): Promise<T> {
    const path = objectPath(this.resource, this.#name(body, 'updateStatus'), this.#ns(body), 'status');
    return this.#object({
      verb: 'update',
      method: 'PUT',
      path,
      query: writeQuery(options),
      body: this.#typed(body),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
  }

  /** PATCH with a merge, JSON or strategic merge patch (strategic merge exists for built-in kinds only). */
  async patch(name: string, patch: Patch, options?: PatchOptions): Promise<T> {
    const contentType = PATCH_CONTENT_TYPES[patch.type];
    if (contentType === undefined)
      throw new OptionsError('KubeClient', `unknown patch type ${String((patch as { type?: unknown }).type)}`);
    return this.#object({
      verb: 'patch',
      method: 'PATCH',
      path: objectPath(this.resource, name, this.namespace, options?.subresource),
      query: writeQuery(options),
      body: patch.body,
      contentType,
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
  }

  /**
   * Server-side apply: sends `body` (JSON is YAML) as `application/apply-patch+yaml`, owned by
   * `fieldManager`. `apiVersion` and `kind` are filled in from the resource when absent. Without
   * `force`, a field another manager owns is a 409 Conflict naming it.
   */
  async apply(body: WriteObject, options: ApplyOptions): Promise<T> {
    if (typeof options?.fieldManager !== 'string' || options.fieldManager === '')
      throw new OptionsError('KubeClient', 'apply needs a fieldManager');
    if (typeof options.force !== 'boolean') throw new OptionsError('KubeClient', 'apply needs an explicit force: true or false');
    const kind = body.kind ?? this.resource.kind;
    if (kind === undefined) throw new OptionsError('KubeClient', 'apply needs kind: set it on the body or on the resource');
    const document = { ...body, apiVersion: body.apiVersion ?? apiVersionOf(this.resource), kind };
    return this.#object({
      verb: 'patch',
      method: 'PATCH',
      path: objectPath(this.resource, this.#name(body, 'apply'), this.#ns(body), options.subresource),
      query: { ...writeQuery(options), force: String(options.force) },
      body: document,
      contentType: 'application/apply-patch+yaml',
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
  }

  /** DELETE one object, with optional preconditions, propagation policy and grace period. */
  async delete(name: string, options?: DeleteOptions): Promise<DeleteResult<T>> {
    const body = await this.#client.request({
      verb: 'delete',
      method: 'DELETE',
      path: objectPath(this.resource, name, this.namespace),
      body: deleteBody(options),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
    const status = isRecord(body) && body['kind'] === 'Status' ? toStatus(body) : undefined;
    return status ? { kind: 'status', status } : { kind: 'object', object: this.parse(body, 'DELETE') };
  }

  /** DELETECOLLECTION: every object matching the selectors. Resolves with what the server returned (a list or a `Status`). */
  async deleteCollection(
    options?: DeleteCollectionOptions,
  ): Promise<{ readonly items: T[] } | { readonly status: import('@reconcile-loop/k8s-types').Status }> {
    const body = await this.#client.request({
      verb: 'deletecollection',
      method: 'DELETE',
      path: collectionPath(this.resource, this.namespace),
      query: { labelSelector: options?.labelSelector, fieldSelector: options?.fieldSelector },
      body: deleteBody(options),
      signal: options?.signal,
      timeoutMs: options?.timeoutMs,
    });
    if (isRecord(body) && Array.isArray(body['items']))
      return { items: (body['items'] as unknown[]).map((item) => this.parse(item, 'DELETECOLLECTION')) };
    const status = toStatus(body);
    if (!status) throw new KubeProtocolError('DELETECOLLECTION body is neither a list nor a Status');
    return { status };
  }

  /**
   * A generic subresource (`scale`, `eviction`, `binding`, `ephemeralcontainers`...), its bodies and
   * answers as plain JSON.
   */
  subresource(subresource: string): SubresourceClient {
    if (typeof subresource !== 'string' || !/^[a-z][a-z0-9]*$/.test(subresource))
      throw new OptionsError('KubeClient', `not a subresource name: ${String(subresource)}`);
    const client = this.#client;
    const path = (name: string): string => objectPath(this.resource, name, this.namespace, subresource);
    const call = (request: KubeRequest): Promise<unknown> => client.request(request);
    return {
      get: (name, options) =>
        call({ verb: 'get', method: 'GET', path: path(name), signal: options?.signal, timeoutMs: options?.timeoutMs }),
      create: (name, body, options) =>
        call({
          verb: 'create',
          method: 'POST',
          path: path(name),
          query: writeQuery(options),
          body,
          signal: options?.signal,
          timeoutMs: options?.timeoutMs,
        }),
      update: (name, body, options) =>
        call({
          verb: 'update',
          method: 'PUT',
          path: path(name),
          query: writeQuery(options),
          body,
          signal: options?.signal,
          timeoutMs: options?.timeoutMs,
        }),
      patch: (name, patch, options) =>
        call({
          verb: 'patch',
          method: 'PATCH',
          path: path(name),
          query: writeQuery(options),
          body: patch.body,
          contentType: PATCH_CONTENT_TYPES[patch.type],
          signal: options?.signal,
          timeoutMs: options?.timeoutMs,
        }),
    };
  }
}

/** Calls on one subresource of an object; bodies and answers are plain JSON. */
export interface SubresourceClient {
  get(name: string, options?: RequestOptions): Promise<unknown>;
  /** POST, e.g. a pod `eviction` or `binding`. */
  create(name: string, body: WriteObject, options?: WriteOptions): Promise<unknown>;
  update(name: string, body: WriteObject, options?: WriteOptions): Promise<unknown>;
  patch(name: string, patch: Patch, options?: WriteOptions): Promise<unknown>;
}
