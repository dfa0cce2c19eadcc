/**
 * The request a resource handle sends, and the narrow view of a client the handle needs. Declared
 * apart from `client.ts` so `resource.ts` depends on this contract, not on `KubeClient` (which
 * builds handles and would otherwise import the file that imports it).
 */
import type { Clock } from '@reconcile-loop/primitives';
import type { Verb } from './errors.js';

/** One request, below the resource handles: what `KubeClient.request` and `KubeClient.stream` take. */
export interface KubeRequest {
  readonly verb: Verb;
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The URL path below the server, e.g. `/api/v1/namespaces/default/pods`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>> | undefined;
  /** Serialised as JSON. */
  readonly body?: unknown | undefined;
  /** Default `application/json` for a body. */
  readonly contentType?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Overrides the client's `requestTimeoutMs` for this request; for a watch it covers the wait for headers. */
  readonly timeoutMs?: number | undefined;
  /** Watch only: overrides the client's `maxFrameBytes`. */
  readonly maxFrameBytes?: number | undefined;
  /**
   * The `Accept` header; default `application/json`. A metadata-only read sends
   * {@link PARTIAL_OBJECT_METADATA_ACCEPT} (GET, WATCH) or {@link PARTIAL_OBJECT_METADATA_LIST_ACCEPT} (LIST).
   */
  readonly accept?: string | undefined;
}

/**
 * The media type that asks the apiserver for an object (GET) or a watch's objects as
 * `meta.k8s.io/v1` `PartialObjectMetadata`: `apiVersion`, `kind` and `metadata` only, converted
 * on the server (kube-rs `JSON_METADATA_MIME`, client-go's metadata client). No fallback type is
 * offered: a server that cannot convert answers 406, which is a clear failure, where a full
 * object read as metadata would silently cost what the option exists to save.
 */
export const PARTIAL_OBJECT_METADATA_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
/** {@link PARTIAL_OBJECT_METADATA_ACCEPT} for a LIST: the answer is a `PartialObjectMetadataList` (kube-rs `JSON_METADATA_LIST_MIME`). */
export const PARTIAL_OBJECT_METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** What a resource handle needs of its client; `KubeClient` is one. */
export interface ResourceHost {
  /** The clock every wait of the client (and of the write helpers) runs on. */
  readonly clock: Clock;
  request(request: KubeRequest): Promise<unknown>;
  requestBytes(request: KubeRequest): Promise<Uint8Array>;
  /**
   * Optional: {@link requestBytes} handing the body to `read` (synchronously, once) in memory the
   * host reuses afterwards; resolves with what `read` returns. `KubeClient` has it; without it a
   * resource handle reads {@link requestBytes}' answer.
   */
  requestBody?<R>(request: KubeRequest, read: (body: Uint8Array) => R): Promise<R>;
  stream(request: KubeRequest): AsyncGenerator<string, void, undefined>;
  streamFrameBatches(request: KubeRequest): AsyncGenerator<Uint8Array[], void, undefined>;
}
