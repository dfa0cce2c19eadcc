/**
 * @reconcile-loop/kube-client: one Kubernetes HTTP client. The front door holds the client, the
 * writes a reconciler needs, the event recorder and the error classes. apimachinery's `Is*` guards
 * (`isNotFound`, `isConflict`, ...) are in `@reconcile-loop/kube-client/errors`; what only this
 * repository's reflector needs is in `./internal` (not part of the stable API).
 */

// The client: connection, auth, transport, rate limiting, and a handle per resource.
export { KubeClient, type KubeClientOptions, type RateLimitOptions, type RateLimitWait } from './client.js';
export {
  PARTIAL_OBJECT_METADATA_ACCEPT,
  PARTIAL_OBJECT_METADATA_LIST_ACCEPT,
  type KubeRequest,
  type ResourceHost,
} from './request.js';
export { ResourceClient, type SubresourceClient } from './resource.js';
export {
  httpTransport,
  staticAuth,
  type HttpTransportOptions,
  type KubeConfigAuth,
  type StaticAuthOptions,
} from './http/transport.js';
export type { Transport, TransportRequest, TransportResponse } from './http/transport-types.js';
export type { RateLimiter } from './rate-limiter.js';
export { DEFAULT_MAX_FRAME_BYTES } from './http/lines.js';

// Objects and request options.
export type {
  ApplyOptions,
  DeleteCollectionOptions,
  DeleteOptions,
  DeleteResult,
  JsonObject,
  JsonPatchOperation,
  KubeObject,
  KubeObjectMeta,
  ListOptions,
  MetadataOnlyOption,
  ObjectList,
  Patch,
  PatchOptions,
  Preconditions,
  RequestOptions,
  ResourceRef,
  SelectorOptions,
  WatchOptions,
  WriteObject,
  WriteOptions,
} from './types.js';

// The writes a reconciler needs: apply, status, create/delete idempotently, finalizers, conflict retry.
export { apply, applyStatus, type ApplyWith } from './write/apply.js';
export { updateStatus, patchStatus, type StatusWriteOptions, type StatusWriteResult } from './write/status.js';
export { createIfAbsent, deleteIfPresent, type CreateIfAbsentResult, type DeleteIfPresentResult } from './write/create-delete.js';
export { addFinalizer, removeFinalizer, finalizersOf, type FinalizerOptions, type FinalizerResult } from './write/finalizers.js';
export {
  retryOnConflict,
  DEFAULT_RETRY,
  DEFAULT_BACKOFF,
  type ConflictRetry,
  type RetryOptions,
} from './write/retry-on-conflict.js';

// Events (events.k8s.io/v1), aggregated and rate limited as client-go's recorder does.
export {
  EventRecorder,
  DEFAULT_CLOSE_TIMEOUT_MS,
  defaultReportingInstance,
  type EventCloseOptions,
  type EventRecorderOptions,
  type EventRecorderStats,
} from './events/recorder.js';
export type { EventInput, ObjectReference } from './events/event.js';

// Errors: every one extends primitives' ReconcileLoopError (codes RL_KUBE_*).
export {
  KubeApiError,
  KubeProtocolError,
  KubeRequestTimeoutError,
  KubeTransportError,
  WatchFrameTooLargeError,
  isKubeApiError,
  type Verb,
} from './errors.js';
