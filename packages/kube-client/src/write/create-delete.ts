import { OptionsError } from '@reconcile-loop/primitives';
import { isAlreadyExists, isConflict, isNotFound, type KubeApiError } from '../errors.js';
import type { Status } from '@reconcile-loop/k8s-types';
import type { ResourceClient } from '../resource.js';
import type { DeleteOptions, WriteObject, WriteOptions } from '../types.js';

/** What {@link createIfAbsent} did. */
export interface CreateIfAbsentResult<T> {
  /** The object now on the server: the one created, or the one that already existed. */
  readonly object: T;
  readonly created: boolean;
}

/** Attempts before {@link createIfAbsent} gives up on an object that keeps vanishing between create and get. */
const CREATE_ATTEMPTS = 3;

/**
 * Creates `body` unless an object of that name exists; a 409 AlreadyExists is success and returns
 * the existing object (an anchor object a controller must create exactly once, whoever creates it first). The existing
 * object is returned as it is: check its `deletionTimestamp`, labels or owner before relying on it.
 * If it vanishes between the 409 and the GET, the create is tried again (3 attempts in all).
 */
export async function createIfAbsent<T>(
  handle: ResourceClient<T>,
  body: WriteObject,
  options?: WriteOptions,
): Promise<CreateIfAbsentResult<T>> {
  const name = body.metadata?.name;
  if (typeof name !== 'string' || name === '')
    throw new OptionsError('KubeClient', 'createIfAbsent needs metadata.name (a generateName object is never "present")');
  const scoped =
    handle.namespace === undefined && body.metadata?.namespace ? handle.inNamespace(body.metadata.namespace) : handle;
  for (let attempt = 1; ; attempt++) {
    try {
      return { object: await scoped.create(body, options), created: true };
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    try {
      return { object: await scoped.get(name, { signal: options?.signal, timeoutMs: options?.timeoutMs }), created: false };
    } catch (error) {
      if (!isNotFound(error) || attempt >= CREATE_ATTEMPTS) throw error;
    }
  }
}

/** What {@link deleteIfPresent} found. */
export type DeleteIfPresentResult<T> =
  /** The server accepted the delete. `object` (when the server returned one) still exists while its `deletionTimestamp` is set and finalizers or a grace period hold it. */
  | { readonly outcome: 'deleted'; readonly object: T | undefined; readonly status: Status | undefined }
  /** There was nothing to delete (404). */
  | { readonly outcome: 'absent' }
  /** The object exists but is not the one the preconditions named (another UID: a newer attempt's pod; another resourceVersion). Nothing was deleted. */
  | { readonly outcome: 'precondition-failed'; readonly error: KubeApiError };

/**
 * Deletes `name` if it is there: a 404 is the outcome `absent`, not an error. With
 * `preconditions` (pinning an attempt: delete exactly the pod of this attempt, by UID),
 * the server's 409 for a mismatch is the distinct outcome `precondition-failed`, so a newer
 * object of the same name is never deleted by mistake and the caller can tell it from a deletion.
 */
export async function deleteIfPresent<T>(
  handle: ResourceClient<T>,
  name: string,
  options?: DeleteOptions,
): Promise<DeleteIfPresentResult<T>> {
  try {
    const result = await handle.delete(name, options);
    return result.kind === 'object'
      ? { outcome: 'deleted', object: result.object, status: undefined }
      : { outcome: 'deleted', object: undefined, status: result.status };
  } catch (error) {
    if (isNotFound(error)) return { outcome: 'absent' };
    if (options?.preconditions && isConflict(error)) return { outcome: 'precondition-failed', error: error as KubeApiError };
    throw error;
  }
}
