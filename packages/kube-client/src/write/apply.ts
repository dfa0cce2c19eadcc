import { OptionsError } from '@reconcile-loop/primitives';
import {} from '../errors.js';
import type { ResourceClient } from '../resource.js';
import type { ApplyOptions, JsonObject, WriteObject } from '../types.js';

/** Options of {@link apply} and {@link applyStatus}: a field manager, and `force` as an explicit choice. */
export type ApplyWith = Omit<ApplyOptions, 'subresource'>;

/**
 * Server-side apply of `body` as `fieldManager` (controller-runtime's `client.Apply` with
 * `FieldOwner`). The body is the caller's intent, not a read-back object: `metadata.managedFields`
 * (which the server refuses in an apply) is dropped, and so are `resourceVersion` and `uid`
 * unless `lock` is set, because in an apply they are preconditions a stale copy would fail.
 * Fields this manager applied before and leaves out now are removed by the server.
 */
export async function apply<T>(
  handle: ResourceClient<T>,
  body: WriteObject,
  options: ApplyWith & { readonly lock?: boolean | undefined },
): Promise<T> {
  const { lock, ...rest } = options;
  const metadata = { ...(body.metadata ?? {}) };
  delete metadata['managedFields'];
  if (!lock) {
    delete metadata.resourceVersion;
    delete metadata.uid;
  }
  return handle.apply({ ...body, metadata }, rest);
}

/**
 * Server-side apply of `status` alone to the `status` subresource of `name`: the body is
 * `{ apiVersion, kind, metadata: { name }, status }`, so no read is needed and the manager owns
 * exactly the status fields it sets. A controller owning its status usually passes `force: true`.
 */
export async function applyStatus<T>(
  handle: ResourceClient<T>,
  name: string,
  status: JsonObject,
  options: ApplyWith,
): Promise<T> {
  if (typeof name !== 'string' || name === '') throw new OptionsError('KubeClient', 'applyStatus needs a name');
  return handle.apply({ metadata: { name }, status }, { ...options, subresource: 'status' });
}
