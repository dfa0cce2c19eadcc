import { isNotFound } from '../errors.js';
import type { ResourceClient } from '../resource.js';
import { retryOnConflict, type RetryOptions } from './retry-on-conflict.js';
import type { KubeObject } from '../types.js';

/** What a finalizer change did. `object` is `undefined` when the object is gone. */
export interface FinalizerResult<T> {
  readonly object: T | undefined;
  /** False when the finalizer already was (add) or already was not (remove) there: nothing was written. */
  readonly changed: boolean;
  /** How many read-mutate-write attempts it took (conflicts retried). */
  readonly attempts: number;
}

/** Options of the finalizer helpers. */
export interface FinalizerOptions extends RetryOptions {
  readonly fieldManager?: string | undefined;
  readonly timeoutMs?: number | undefined;
}

/** The finalizers of a whole JSON object. */
export function finalizersOf(object: KubeObject): readonly string[] {
  return Array.isArray(object.metadata.finalizers) ? object.metadata.finalizers : [];
}

async function change<T>(
  handle: ResourceClient<T>,
  name: string,
  finalizer: string,
  add: boolean,
  options: FinalizerOptions,
): Promise<FinalizerResult<T>> {
  const raw = handle.raw;
  return retryOnConflict(
    async (attempts) => {
      const current = await raw.get(name, { signal: options.signal, timeoutMs: options.timeoutMs });
      const finalizers = finalizersOf(current);
      const present = finalizers.includes(finalizer);
      if (present === add) return { object: handle.parse(current), changed: false, attempts };
      const next = add ? [...finalizers, finalizer] : finalizers.filter((f) => f !== finalizer);
      // The list is replaced whole, which is safe only because the resourceVersion pins it to the
      // list just read: a concurrent change to it is a 409, and the retry starts from the new list.
      const body = { metadata: { resourceVersion: current.metadata.resourceVersion, finalizers: next } };
      try {
        const patched = await handle.patch(
          name,
          { type: 'merge', body },
          { signal: options.signal, timeoutMs: options.timeoutMs, fieldManager: options.fieldManager },
        );
        return { object: patched, changed: true, attempts };
      } catch (error) {
        // Removing the last finalizer of a deleting object: the server may answer with the object
        // gone before our response is read; a 404 on the write here means someone finished it.
        if (!add && isNotFound(error)) return { object: undefined, changed: false, attempts };
        throw error;
      }
    },
    { clock: handle.client.clock, ...options },
  );
}

/**
 * Adds `finalizer` to the object unless it is there (controller-runtime's
 * `controllerutil.AddFinalizer` plus the write): idempotent, and conflict-safe through an
 * optimistic-lock merge patch retried on 409. A missing object is a `KubeApiError` NotFound; the
 * server refuses a new finalizer on an object already being deleted (422).
 */
export function addFinalizer<T>(
  handle: ResourceClient<T>,
  name: string,
  finalizer: string,
  options: FinalizerOptions = {},
): Promise<FinalizerResult<T>> {
  return change(handle, name, finalizer, true, options);
}

/**
 * Removes `finalizer` if it is there (`controllerutil.RemoveFinalizer` plus the write): idempotent,
 * conflict-safe like {@link addFinalizer}; an object that is already gone is success
 * (`object: undefined`), since nothing is left to hold.
 */
export async function removeFinalizer<T>(
  handle: ResourceClient<T>,
  name: string,
  finalizer: string,
  options: FinalizerOptions = {},
): Promise<FinalizerResult<T>> {
  try {
    return await change(handle, name, finalizer, false, options);
  } catch (error) {
    // The GET found nothing: gone before this call.
    if (isNotFound(error)) return { object: undefined, changed: false, attempts: 1 };
    throw error;
  }
}
