import { KubeProtocolError } from '../errors.js';
import type { ObjectList } from '../types.js';

/**
 * How a response body is read the exact way: the body's bytes decoded as UTF-8 (a malformed
 * sequence reads as U+FFFD), then `JSON.parse`d. What `KubeClient.request` resolves with, so a
 * caller holding a body's bytes (from `KubeClient.requestBytes`) reads them exactly as `request`
 * would have.
 *
 * @param body the whole body, as `KubeClient.requestBytes` resolves it.
 * @param what names the request in the error, e.g. `list /api/v1/pods`.
 * @returns the decoded JSON, or `undefined` for an empty (whitespace only) body.
 * @throws {KubeProtocolError} when the body is not JSON.
 */
export function decodeJsonBody(body: Uint8Array, what: string): unknown {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new KubeProtocolError(`${what}: the body is not JSON: ${(error as Error).message}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a decoded LIST body into an {@link ObjectList}: the one definition of what a LIST page is,
 * shared by `ResourceClient.list` and `ResourceClient.readList` (the exact-path fallback of a reader
 * of the page's bytes), so both accept and refuse the same bodies. The body must be an object;
 * `items` an array, `null` or absent (both: no items); `metadata.resourceVersion` a non-empty
 * string; `metadata.continue` is kept only as a non-empty string and `metadata.remainingItemCount`
 * only as a number, `metadata.shardInfo` only with a string `selector` (anything else reads as
 * absent, as the apiserver means an empty token).
 *
 * @param body the decoded JSON body ({@link decodeJsonBody}).
 * @param parse validates one item (a view's `parseObject`, or a pass-through).
 * @throws {KubeProtocolError} for a body that is not a LIST; whatever `parse` throws for an item.
 */
export function readListBody<T>(body: unknown, parse: (item: unknown) => T): ObjectList<T> {
  if (!isRecord(body)) throw new KubeProtocolError('LIST body is not an object');
  const { items, metadata } = body as { items?: unknown; metadata?: Record<string, unknown> };
  if (items != null && !Array.isArray(items)) throw new KubeProtocolError('LIST body has a non-array items');
  const resourceVersion = metadata?.['resourceVersion'];
  if (typeof resourceVersion !== 'string' || resourceVersion === '')
    throw new KubeProtocolError('LIST body has no metadata.resourceVersion');
  const next = metadata?.['continue'];
  const remaining = metadata?.['remainingItemCount'];
  const shardInfo = metadata?.['shardInfo'];
  const selector = isRecord(shardInfo) ? shardInfo['selector'] : undefined;
  return {
    items: ((items as unknown[] | null | undefined) ?? []).map(parse),
    resourceVersion,
    continue: typeof next === 'string' && next !== '' ? next : undefined,
    remainingItemCount: typeof remaining === 'number' ? remaining : undefined,
    shardInfo: typeof selector === 'string' ? { selector } : undefined,
  };
}
