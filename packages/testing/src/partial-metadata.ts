/**
 * The metadata-only representation (`meta.k8s.io/v1` `PartialObjectMetadata`) a client asks for
 * with `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (GET, WATCH) or
 * `as=PartialObjectMetadataList` (LIST). kube-apiserver converts on the way out
 * (`apiserver/pkg/endpoints/handlers/response.go`): each object becomes
 * `{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata }`, a list a
 * `PartialObjectMetadataList` whose items carry that type, a watch's frames carry the converted
 * objects (bookmarks too); an ERROR frame's `Status` is sent as it is.
 */
import type { ApiServerObject } from './types.js';

const GROUP_VERSION = 'meta.k8s.io/v1';

/** The `as=` kind the Accept header prefers for JSON, or undefined when it asks for plain objects. */
function acceptedAs(accept: string | undefined): string | undefined {
  if (accept === undefined) return undefined;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    if (type !== 'application/json' && type !== '*/*') continue;
    const p: Record<string, string> = {};
    for (const kv of params) {
      const i = kv.indexOf('=');
      if (i > 0) p[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
    }
    if (p['as'] === undefined) return undefined;
    if (p['g'] === 'meta.k8s.io' && p['v'] === 'v1') return p['as'];
  }
  return undefined;
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
