/**
 * `metav1.Status` bodies worded as kube-apiserver words them (apimachinery `api/errors`,
 * apiserver `storage/errors.go`, `etcd3/errors.go`, `cacher/watch_cache.go`), so clients that
 * match on `reason`, `code` or `details.causes[].reason` behave here as against a cluster.
 */

/** One entry of `Status.details.causes`. `reason` is the Go field `Type` (`json:"reason"`). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** `Status.details`. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A `metav1.Status` object as it travels on the wire. */
export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string; resourceVersion?: string };
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** The resource a Status names: `plural` or `plural.group`, as `schema.GroupResource.String()` prints it. */
export interface QualifiedResource {
  group: string;
  plural: string;
}

function qualified(r: QualifiedResource): string {
  return r.group === '' ? r.plural : `${r.plural}.${r.group}`;
}

function detailsFor(r: QualifiedResource, name?: string): StatusDetails {
  const d: StatusDetails = {};
  if (name !== undefined && name !== '') d.name = name;
  if (r.group !== '') d.group = r.group;
  d.kind = r.plural;
  return d;
}

/** Builds a failure Status; omits empty members the way Go's `omitempty` does. */
export function failure(code: number, reason: string, message: string, details?: StatusDetails): KubeStatus {
  const s: KubeStatus = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  if (reason === '') delete s.reason;
  if (details !== undefined && Object.keys(details).length > 0) s.details = details;
  else if (details !== undefined) s.details = {};
  return s;
}

/** `errors.NewNotFound`: `pods "x" not found`. */
export function notFound(r: QualifiedResource, name: string): KubeStatus {
  return failure(404, 'NotFound', `${qualified(r)} "${name}" not found`, detailsFor(r, name));
}

/** `errors.NewAlreadyExists`: `pods "x" already exists`. */
export function alreadyExists(r: QualifiedResource, name: string): KubeStatus {
  return failure(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, detailsFor(r, name));
}

/** The registry's optimistic-lock message (`OptimisticLockErrorMsg`). */
export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

/** `errors.NewConflict`: `Operation cannot be fulfilled on pods "x": <why>`. */
export function conflict(r: QualifiedResource, name: string, why: string = OPTIMISTIC_LOCK_MESSAGE): KubeStatus {
  return failure(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(r)} "${name}": ${why}`, detailsFor(r, name));
}

/** One `field.Error`: `field: Type: detail` in messages, `Type: detail` in causes. */
export interface FieldError {
  field: string;
  /** CauseType, e.g. `FieldValueRequired`. */
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueNotSupported';
  /** Body without the field prefix, e.g. `Required value: name or generateName is required`. */
  body: string;
}

/** `field.Required`. */
export function required(field: string, detail: string): FieldError {
  return { field, type: 'FieldValueRequired', body: detail === '' ? 'Required value' : `Required value: ${detail}` };
}

/** `field.Invalid`. */
export function invalidValue(field: string, value: unknown, detail: string): FieldError {
  return { field, type: 'FieldValueInvalid', body: `Invalid value: ${JSON.stringify(value)}: ${detail}` };
}

/** `field.Forbidden`. */
export function forbidden(field: string, detail: string): FieldError {
  return { field, type: 'FieldValueForbidden', body: `Forbidden: ${detail}` };
}

/** `field.NotSupported`. */
export function notSupported(field: string, value: unknown, allowed: string[]): FieldError {
  const list = allowed.map((a) => JSON.stringify(a)).join(', ');
  return {
    field,
    type: 'FieldValueNotSupported',
    body: `Unsupported value: ${JSON.stringify(value)}: supported values: ${list}`,
  };
}

/** `errors.NewInvalid`: `Pod "x" is invalid: metadata.name: Required value: ...` (aggregated as `[a, b]` when several). */
export function invalid(kind: { group: string; kind: string }, name: string, errs: FieldError[]): KubeStatus {
  const gk = kind.group === '' ? kind.kind : `${kind.kind}.${kind.group}`;
  const texts = errs.map((e) => `${e.field}: ${e.body}`);
  const agg = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  const details: StatusDetails = {};
  if (name !== '') details.name = name;
  if (kind.group !== '') details.group = kind.group;
  details.kind = kind.kind;
  details.causes = errs.map((e) => ({ reason: e.type, message: e.body, field: e.field }));
  return failure(422, 'Invalid', `${gk} "${name}" is invalid: ${agg}`, details);
}

/** `errors.NewBadRequest`. */
export function badRequest(message: string): KubeStatus {
  return failure(400, 'BadRequest', message);
}

/** `errors.NewResourceExpired` (410, reason `Expired`). */
export function expired(message: string): KubeStatus {
  return failure(410, 'Expired', message);
}

/** Cacher wording for a watch from a version older than the retained window. */
export function tooOldWatch(requested: number, oldestMinusOne: number): KubeStatus {
  return expired(`too old resource version: ${requested} (${oldestMinusOne})`);
}

/** etcd3 wording for a watch (without the watch cache) from a compacted revision. */
export const EXPIRED_WATCH_MESSAGE = 'The resourceVersion for the provided watch is too old.';

/** etcd3 wording for an Exact list at a compacted revision. */
export const EXPIRED_LIST_MESSAGE = 'The resourceVersion for the provided list is too old.';

/** etcd3 wording for a continue token whose snapshot was compacted; sent with a fresh, inconsistent token. */
export const INCONSISTENT_CONTINUE_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without ' +
  'the continue parameter, or use the continue token in this response to retrieve the remainder of the results. ' +
  'Continuing with the provided token results in an inconsistent list - objects that were created, modified, or ' +
  'deleted between the time the first chunk was returned and now may show up in the list.';

/**
 * `storage.NewTooLargeResourceVersionError`: a 504 `Timeout` whose only cause has reason
 * `ResourceVersionTooLarge`; clients must look in `details.causes`, never in `reason`.
 */
export function tooLargeResourceVersion(requested: number, current: number, retryAfterSeconds = 1): KubeStatus {
  const details: StatusDetails = {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
  };
  if (retryAfterSeconds > 0) details.retryAfterSeconds = retryAfterSeconds;
  return failure(504, 'Timeout', `Timeout: Too large resource version: ${requested}, current: ${current}`, details);
}

/** `errors.NewInternalError`. */
export function internalError(cause: string): KubeStatus {
  return failure(500, 'InternalError', `Internal error occurred: ${cause}`, { causes: [{ message: cause }] });
}

/** API priority-and-fairness rejection (`Too many requests, please try again later.`), `Retry-After: 1`. */
export function tooManyRequests(retryAfterSeconds = 1): KubeStatus {
  return failure(429, 'TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds });
}

/** 404 for a path no resource serves. */
export function pathNotFound(): KubeStatus {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** 405 for a method the path does not serve. */
export function methodNotAllowed(): KubeStatus {
  return failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

/** 415 for a body in a media type the verb does not accept. */
export function unsupportedMediaType(accepted: string[]): KubeStatus {
  return failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

/** 413 for a body over the apiserver's 3 MiB request limit. */
export function entityTooLarge(limit: number): KubeStatus {
  return failure(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);
}

/** 401 when a token is required and missing or wrong. */
export function unauthorized(): KubeStatus {
  return failure(401, 'Unauthorized', 'Unauthorized');
}

/** The Success Status a DELETE returns for kinds that do not return the deleted object. */
export function deleteSuccess(r: QualifiedResource, name: string, uid: string | undefined): KubeStatus {
  const details = detailsFor(r, name);
  if (uid !== undefined) details.uid = uid;
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details, code: 200 };
}
