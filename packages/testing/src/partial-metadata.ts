/**
 * The metadata-only representation (`meta.k8s.io/v1` `PartialObjectMetadata`) a client asks for
 * with `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (GET, WATCH) or
 * `as=PartialObjectMetadataList` (LIST). kube-apiserver converts on the way out
 * (`apiserver/pkg/endpoints/handlers/response.go`): each object becomes
 * `{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata }`, a list a
 * `PartialObjectMetadataList` whose items carry that type, a watch's frames carry the converted
 * objects (bookmarks too); an ERROR frame's `Status` is sent as it is.
 */
import { negotiateConversion } from './http/accept.js';
import type { ApiServerObject } from './types.js';

const GROUP_VERSION = 'meta.k8s.io/v1';

/** The `as=` kind the Accept header prefers for JSON, or undefined when it asks for plain objects. */
function acceptedAs(accept: string | undefined): string | undefined {
  return negotiateConversion(accept, (c) => (c.g === 'meta.k8s.io' && c.v === 'v1' ? c.as : undefined));
}

/** True when a GET or WATCH asks for `PartialObjectMetadata`. */
export function acceptsPartialObject(accept: string | undefined): boolean {
  return acceptedAs(accept) === 'PartialObjectMetadata';
}

/** True when a LIST asks for `PartialObjectMetadataList`. */
export function acceptsPartialList(accept: string | undefined): boolean {
  return acceptedAs(accept) === 'PartialObjectMetadataList';
}

/** One object as `PartialObjectMetadata`: its whole `metadata`, nothing else. */
export function toPartialObject(o: ApiServerObject): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: GROUP_VERSION, metadata: o.metadata };
}

/** A LIST page as `PartialObjectMetadataList`. */
export function toPartialList(
  items: readonly ApiServerObject[],
  resourceVersion: string,
  cont: string | undefined,
  remaining: number | undefined,
): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion };
  if (cont !== undefined) metadata['continue'] = cont;
  if (remaining !== undefined) metadata['remainingItemCount'] = remaining;
  return { kind: 'PartialObjectMetadataList', apiVersion: GROUP_VERSION, metadata, items: items.map(toPartialObject) };
}

/** A BOOKMARK's object as `PartialObjectMetadata`: the resourceVersion (and annotations) only. */
export function partialBookmark(metadata: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: GROUP_VERSION, metadata };
}
