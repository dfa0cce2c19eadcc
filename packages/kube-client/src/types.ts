import type { ApiResource } from '@reconcile-loop/k8s-types';

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/** Where a kind lives in the API, plus its `kind`, which lets `apply` fill in `apiVersion` and `kind`. */
export interface ResourceRef extends ApiResource {
  /** e.g. `Pod`, `ConfigMap`, `CellSet`. */
  readonly kind?: string | undefined;
}

/** The metadata of a plain JSON object, as far as this client reads it. */
export interface KubeObjectMeta {
  name?: string | undefined;
  generateName?: string | undefined;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  generation?: number | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  finalizers?: string[] | undefined;
  ownerReferences?: JsonObject[] | undefined;
  deletionTimestamp?: string | undefined;
  [key: string]: unknown;
}

/** A whole object as plain JSON: what a handle without a schema reads, and what every write sends. */
export interface KubeObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata: KubeObjectMeta;
  [key: string]: unknown;
}

/** What a write sends: an object as plain JSON (a view without unknown fields would erase them on update). */
export interface WriteObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata?: KubeObjectMeta | undefined;
  [key: string]: unknown;
}

/** Per-request options every call takes. */
export interface RequestOptions {
  /** Aborts the request (and any rate-limit or `Retry-After` wait). */
  readonly signal?: AbortSignal | undefined;
  /** Overrides the client's request deadline. */
  readonly timeoutMs?: number | undefined;
}

/** Options of a write. */
export interface WriteOptions extends RequestOptions {
  /** Recorded in `managedFields` (server-side field ownership). */
  readonly fieldManager?: string | undefined;
  /** Validate and admit, but persist nothing. */
  readonly dryRun?: boolean | undefined;
  /** How the server treats unknown or duplicate fields. */
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore' | undefined;
}

/** How a read's objects come back. */
export interface MetadataOnlyOption {
  /**
   * `true` asks the apiserver for `meta.k8s.io/v1` `PartialObjectMetadata` instead of the whole
   * object (a LIST answers a `PartialObjectMetadataList`; a WATCH's frames carry
   * `PartialObjectMetadata`): `apiVersion`, `kind` and `metadata` only. Read it with a
   * metadata view (k8s-types' `partialObjectMetadataSchema`). Default `false`.
   */
  readonly metadataOnly?: boolean | undefined;
}

/** Which objects a LIST, WATCH or DELETECOLLECTION covers. */
export interface SelectorOptions {
  /** e.g. `app=web,tier!=cache`. */
  readonly labelSelector?: string | undefined;
  /** e.g. `status.phase=Running`. */
  readonly fieldSelector?: string | undefined;
  /**
   * Sharded LIST/WATCH (KEP-5866, gate `ShardedListAndWatch`, alpha since 1.36), e.g.
   * `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`: build it with
   * primitives' `shardSelector`. A server without the gate ignores it (every object comes back and
   * the list has no `shardInfo`), so a caller checks {@link ObjectList.shardInfo}.
   */
  readonly shardSelector?: string | undefined;
}

/** Options of one LIST call. */
export interface ListOptions extends RequestOptions, SelectorOptions, MetadataOnlyOption {
  /** Page size; the answer carries `continue` when more remain. */
  readonly limit?: number | undefined;
  /** The `continue` token of the previous page. */
  readonly continue?: string | undefined;
  /** Omit for a consistent read of the newest state. */
  readonly resourceVersion?: string | undefined;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact' | undefined;
}

/** One page (or a whole unpaged listing). */
export interface ObjectList<T> {
  readonly items: T[];
  /** The list's `metadata.resourceVersion`: where a following WATCH starts. */
  readonly resourceVersion: string;
  /** Set when more pages remain. */
  readonly continue: string | undefined;
  readonly remainingItemCount: number | undefined;
  /**
   * The list's `metadata.shardInfo`: the shard selector the server applied, echoed; undefined when
   * it applied none (none was sent, or the server ignored it).
   */
  readonly shardInfo: { readonly selector: string } | undefined;
}

/** Options of a WATCH. */
export interface WatchOptions extends RequestOptions, SelectorOptions, MetadataOnlyOption {
  /** The cursor to resume from. Omit (or `"0"`) to start with synthetic ADDED events for the current state. */
  readonly resourceVersion?: string | undefined;
  /** Server-side lifetime of the watch, in seconds; the stream ends cleanly after it. */
  readonly timeoutSeconds?: number | undefined;
  /** Ask for BOOKMARK frames that advance an idle cursor. Default `true`. */
  readonly allowWatchBookmarks?: boolean | undefined;
  /** Watch-list: initial state as ADDED events, ended by a bookmark annotated `k8s.io/initial-events-end`. */
  readonly sendInitialEvents?: boolean | undefined;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact' | undefined;
  /** Cap on one frame, in bytes (default the client's). */
  readonly maxFrameBytes?: number | undefined;
}

/** One JSON Patch (RFC 6902) operation. */
export type JsonPatchOperation =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string };

/** A patch and its type (the `Content-Type` sent). Server-side apply is {@link ResourceClient.apply}. */
export type Patch =
  | { readonly type: 'merge'; readonly body: JsonObject }
  | { readonly type: 'json'; readonly body: readonly JsonPatchOperation[] }
  | { readonly type: 'strategic'; readonly body: JsonObject };

/** Options of a PATCH. */
export interface PatchOptions extends WriteOptions {
  /** e.g. `status`; omit for the object itself. */
  readonly subresource?: string | undefined;
}

/** Options of a server-side apply: a field manager is required, and `force` is an explicit choice. */
export interface ApplyOptions extends RequestOptions {
  readonly fieldManager: string;
  /** `true` takes ownership of fields another manager owns instead of failing with a 409 conflict. */
  readonly force: boolean;
  readonly dryRun?: boolean | undefined;
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore' | undefined;
  /** e.g. `status`; omit for the object itself. */
  readonly subresource?: string | undefined;
}

/** Preconditions of a delete: it fails with a 409 Conflict unless the object still has these. */
export interface Preconditions {
  readonly uid?: string | undefined;
  readonly resourceVersion?: string | undefined;
}

/** Options of a DELETE (sent as a `DeleteOptions` body). */
export interface DeleteOptions extends RequestOptions {
  readonly preconditions?: Preconditions | undefined;
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground' | undefined;
  readonly gracePeriodSeconds?: number | undefined;
  readonly dryRun?: boolean | undefined;
}

/** Options of a DELETECOLLECTION. */
export interface DeleteCollectionOptions extends DeleteOptions, SelectorOptions {}

/**
 * What a DELETE answered: the object (still present while finalizers or a grace period hold it,
 * `metadata.deletionTimestamp` set; some kinds return the deleted object too) or a `Status`.
 */
export type DeleteResult<T> =
  | { readonly kind: 'object'; readonly object: T }
  | { readonly kind: 'status'; readonly status: import('@reconcile-loop/k8s-types').Status };
