import type { ApiServerObject } from '../types.js';

/**
 * The UTF-8 JSON of stored objects, encoded once per object and shared by every watcher and every
 * LIST (the watch cache's `cachingObject` idea). Safe because the store deep-freezes an object at
 * commit and never changes it afterwards: its bytes cannot go stale. Objects that are not frozen
 * (built for one answer) are encoded each time and never cached. Entries are weak: an object's
 * bytes live exactly as long as the store, its history or an open answer holds the object.
 * Bytes rather than strings: a socket takes them without re-encoding, and a write copies them once.
 */
const whole = new WeakMap<ApiServerObject, Buffer>();
const withoutType = new WeakMap<ApiServerObject, Buffer>();

function cached(cache: WeakMap<ApiServerObject, Buffer>, o: ApiServerObject, encode: () => string): Buffer {
  if (!Object.isFrozen(o)) return Buffer.from(encode());
  let bytes = cache.get(o);
  if (bytes === undefined) {
    bytes = Buffer.from(encode());
    cache.set(o, bytes);
  }
  return bytes;
}

/** `JSON.stringify(o)` as UTF-8, cached for stored (frozen) objects. */
export function objectJson(o: ApiServerObject): Buffer {
  return cached(whole, o, () => JSON.stringify(o));
}

/** The object as a built-in kind's LIST carries it: without `kind` and `apiVersion` (cached like {@link objectJson}). */
export function listItemJson(o: ApiServerObject, carryType: boolean): Buffer {
  if (carryType) return objectJson(o);
  return cached(withoutType, o, () => {
    const { kind: _k, apiVersion: _a, ...rest } = o;
    return JSON.stringify(rest);
  });
}

const FRAME_HEAD = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
} as const;
const FRAME_TAIL = Buffer.from('}\n');

/**
 * One watch frame and its newline, byte for byte `JSON.stringify({ type, object }) + '\n'`, as
 * three pieces around the object's cached bytes (nothing is copied until the frame is written).
 */
export function watchFrameBytes(type: 'ADDED' | 'MODIFIED' | 'DELETED', o: ApiServerObject): readonly Buffer[] {
  return [FRAME_HEAD[type], objectJson(o), FRAME_TAIL];
}
