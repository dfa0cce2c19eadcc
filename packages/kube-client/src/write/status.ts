import type { Status } from '@reconcile-loop/k8s-types';
import type { ResourceClient } from '../resource.js';
import { retryOnConflict, type RetryOptions } from './retry-on-conflict.js';
import type { JsonObject, KubeObject } from '../types.js';

/** Options of the status writes: the retry's, plus the write's field manager. */
export interface StatusWriteOptions extends RetryOptions {
  readonly fieldManager?: string | undefined;
  readonly timeoutMs?: number | undefined;
}

/** What a status write did: `written` is false when the status already was what the mutation asked for. */
export interface StatusWriteResult<T> {
  readonly object: T;
  readonly written: boolean;
  /** How many read-mutate-write attempts it took (conflicts retried). */
  readonly attempts: number;
}

/**
 * Read-modify-write of `status` with conflict retry (client-go's `RetryOnConflict` around
 * `UpdateStatus`). Each attempt GETs the whole object as JSON, hands it to `mutate` to change its
 * `status` in place (or return `false` to skip), and PUTs it to `/status` with the resourceVersion
 * it read: a concurrent write makes that a 409, and the next attempt re-reads and re-applies the
 * mutation to the new state. An unchanged status is not written (controller-runtime's
 * `CreateOrUpdate` skips an unchanged object the same way).
 */
export async function updateStatus<T>(
  handle: ResourceClient<T>,
  name: string,
  mutate: (object: KubeObject) => void | boolean | Promise<void | boolean>,
  options: StatusWriteOptions = {},
): Promise<StatusWriteResult<T>> {
  const raw = handle.raw;
  let attempts = 0;
  return retryOnConflict(
    async (n) => {
      attempts = n;
      const current = await raw.get(name, { signal: options.signal, timeoutMs: options.timeoutMs });
      const before = JSON.stringify(current['status'] ?? null);
      const verdict = await mutate(current);
      if (verdict === false || JSON.stringify(current['status'] ?? null) === before)
        return { object: handle.parse(current), written: false, attempts };
      const updated = await handle.updateStatus(current, {
        signal: options.signal,
        timeoutMs: options.timeoutMs,
        fieldManager: options.fieldManager,
      });
      return { object: updated, written: true, attempts };
    },
    { clock: handle.client.clock, ...options },
  );
}

/**
 * A merge patch of `status` with conflict retry, for a caller holding only a view. Each attempt
 * GETs the object through the view, asks `compute` for the status fields to merge (`undefined`
 * for "nothing to write"), and sends `{ metadata: { resourceVersion }, status }` as a merge patch to
 * `/status`. The resourceVersion makes it an optimistic lock (controller-runtime's
 * `MergeFromWithOptimisticLock`): a concurrent write is a 409 and the next attempt recomputes from
 * the new state, so the patch never overwrites what it did not read.
 */
export async function patchStatus<T extends { readonly metadata: { readonly resourceVersion?: string | undefined } }>(
  handle: ResourceClient<T>,
  name: string,
  compute: (current: T) => JsonObject | undefined | Promise<JsonObject | undefined>,
  options: StatusWriteOptions = {},
): Promise<StatusWriteResult<T>> {
  let attempts = 0;
  return retryOnConflict(
    async (n) => {
      attempts = n;
      const current = await handle.get(name, { signal: options.signal, timeoutMs: options.timeoutMs });
      const status = await compute(current);
      if (status === undefined) return { object: current, written: false, attempts };
      const body = { metadata: { resourceVersion: current.metadata.resourceVersion }, status };
      const patched = await handle.patch(
        name,
        { type: 'merge', body },
        { subresource: 'status', signal: options.signal, timeoutMs: options.timeoutMs, fieldManager: options.fieldManager },
      );
      return { object: patched, written: true, attempts };
    },
    { clock: handle.client.clock, ...options },
  );
}
