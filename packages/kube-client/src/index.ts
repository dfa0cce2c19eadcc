/**
 * @reconcile-loop/kube-client: one Kubernetes HTTP client. The front door holds the client, the
 * writes a reconciler needs, the event recorder and the error classes. apimachinery's `Is*` guards
 * (`isNotFound`, `isConflict`, ...) are in `@reconcile-loop/kube-client/errors`; what only this
 * repository's reflector needs is in `./internal` (not part of the stable API).
 */

// The client: connection, auth, transport, rate limiting, and a handle per resource.
export { KubeClient, type KubeClientOptions, type RateLimitOptions } from './client.js';
export { ResourceClient } from './resource.js';
export { httpTransport, staticAuth, type KubeConfigAuth, type StaticAuthOptions } from './http/transport.js';
export type { Transport, TransportRequest, TransportResponse } from './http/transport-types.js';
export type { RateLimiter } from './rate-limiter.js';
export { DEFAULT_MAX_FRAME_BYTES } from './http/lines.js';

// Objects and request options.
export type {
  ApplyOptions,
  DeleteCollectionOptions,
  DeleteOptions,
  JsonObject,
  KubeObject,
  ListOptions,
  ObjectList,
  Patch,
  PatchOptions,
  RequestOptions,
  ResourceRef,
  WatchOptions,
  WriteObject,
  WriteOptions,
} from './types.js';

// The writes a reconciler needs: apply, status, create/delete idempotently, finalizers, conflict retry.
// Their option bags and results are not exported: a call spells them inline and reads them by field.
export { apply, applyStatus } from './write/apply.js';
export { updateStatus, patchStatus } from './write/status.js';
export { createIfAbsent, deleteIfPresent } from './write/create-delete.js';
export { addFinalizer, removeFinalizer, finalizersOf } from './write/finalizers.js';
export { retryOnConflict, DEFAULT_BACKOFF } from './write/retry-on-conflict.js';

// Events (events.k8s.io/v1), aggregated and rate limited as client-go's recorder does.
export { EventRecorder, defaultReportingInstance, type EventRecorderOptions } from './events/recorder.js';
export type { EventInput, ObjectReference } from './events/event.js';

// Errors: every one extends primitives' ReconcileLoopError (codes RL_KUBE_*).
export {
  KubeApiError,
  KubeProtocolError,
  KubeRequestTimeoutError,
  KubeTransportError,
  WatchFrameTooLargeError,
  isKubeApiError,
} from './errors.js';
