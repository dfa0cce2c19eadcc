import type { KubernetesObjectView } from '../meta.js';
import type { ObjectFrame } from '../watch-frame.js';
import {
  atEnd,
  begin,
  end,
  isNull,
  KeySet,
  nextItem,
  NOT_PROVEN,
  notProven,
  openArray,
  position,
  readSince,
  restart,
  skip,
  str,
} from './cursor.js';
import { members } from './view-reader.js';
import type { ObjectReader } from './readers.js';

/**
 * The envelopes around a view's byte reader: a watch frame (`{"type", "object"}`) and a LIST page
 * (`{"metadata": {"resourceVersion", "continue"}, "items": [...]}`). Each returns what the exact
 * path (decode, `JSON.parse`, the view's zod schema) would, or `undefined` when it cannot prove
 * that, and the caller then takes the exact path for the whole frame or page.
 */

const FRAME_KEYS = new KeySet(['type', 'object']);
const FRAME_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED']);

/**
 * The frame `bytes` holds, its object read by `read`, or `undefined` for the exact path: any
 * `BOOKMARK` or `ERROR` frame, an object the reader cannot prove, bytes that are not one JSON document.
 */
export function readFrame<T extends KubernetesObjectView>(bytes: Uint8Array, read: ObjectReader<T>): ObjectFrame<T> | undefined {
  try {
    begin(bytes);
    const fields: unknown[] = [];
    members(FRAME_KEYS, (index) => (index === 0 ? str() : read()), fields);
    const [type, object] = fields as [unknown, T | undefined];
    if (object === undefined || typeof type !== 'string' || !FRAME_TYPES.has(type) || !atEnd()) return undefined;
    const resourceVersion = object.metadata.resourceVersion;
    if (resourceVersion === undefined) return undefined;
    return { type: type as ObjectFrame<T>['type'], resourceVersion, object };
  } catch (error) {
    if (error === NOT_PROVEN) return undefined;
    throw error;
  } finally {
    end();
  }
}

/** One item of a LIST page read from its bytes: the view, or (for the exact path) the parsed item. */
export type ListItem<T> = { readonly view: T; readonly raw?: undefined } | { readonly view?: undefined; readonly raw: unknown };

/** A LIST page read from its bytes (see {@link readListPage}). */
export interface ListPage<T> {
  /** `metadata.resourceVersion`. */
  readonly resourceVersion: string;
  /** `metadata.continue`, when the page has one (an empty string reads as none, as the apiserver means it). */
  readonly continue: string | undefined;
  /** Every item, in order: read by the view's reader, or parsed for the exact path. */
  readonly items: readonly ListItem<T>[];
}

const LIST_KEYS = new KeySet(['metadata', 'items']);
const LIST_META_KEYS = new KeySet(['resourceVersion', 'continue']);

/**
 * The LIST page `bytes` holds, each item read by `read`, or `undefined` when the page itself is not
 * provably what the exact path reads (not one JSON document, a duplicate member, a cursor that is not
 * a string). An item the reader cannot prove is still valid JSON (the scan checked it): it is parsed
 * and handed over as `raw`, for the exact path to validate (and quarantine, if it must).
 */
export function readListPage<T>(bytes: Uint8Array, read: ObjectReader<T>): ListPage<T> | undefined {
  try {
    begin(bytes);
    const fields: unknown[] = [];
    members(LIST_KEYS, (index) => (index === 0 ? listMeta() : listItems(read)), fields);
    const [resourceVersion, cursor] = (fields[0] as [string | undefined, string | undefined] | undefined) ?? [];
    const items = fields[1] as ListItem<T>[] | undefined;
    // No cursor, or an empty one, is the exact path's to refuse.
    if (resourceVersion === undefined || resourceVersion === '' || items === undefined || !atEnd()) return undefined;
    return { resourceVersion, continue: cursor === '' ? undefined : cursor, items };
  } catch (error) {
    if (error === NOT_PROVEN) return undefined;
    throw error;
  } finally {
    end();
  }
}

function listMeta(): [string | undefined, string | undefined] {
  const fields: unknown[] = [];
  members(LIST_META_KEYS, str, fields);
  return fields as [string | undefined, string | undefined];
}

function listItems<T>(read: ObjectReader<T>): ListItem<T>[] {
  if (isNull()) notProven(); // the exact path decides what a null list means
  const items: ListItem<T>[] = [];
  if (!openArray()) return items;
  do {
    const start = position();
    try {
      items.push({ view: read() });
    } catch (error) {
      if (error !== NOT_PROVEN) throw error;
      // Not provable by the reader: valid JSON or not, the scan decides; parsed for the exact path.
      restart(start);
      skip();
      items.push({ raw: readSince(start) });
    }
  } while (nextItem());
  return items;
}
