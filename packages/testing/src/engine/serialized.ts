import type { KubeObject } from '../types.js';

/**
 * JSON of stored objects, computed once per object and shared by every watcher and every LIST
 * (the watch cache's `cachingObject` idea). Safe because the store deep-freezes an object at
 * commit and never changes it afterwards: its JSON cannot go stale. Objects that are not frozen
 * (built for one answer) are serialized each time and never cached. Entries are weak: an object's
 * JSON lives exactly as long as the store, its history or an open answer holds the object.
 */
const whole = new WeakMap<KubeObject, string>();
const withoutType = new WeakMap<KubeObject, string>();

/** `JSON.stringify(o)`, cached for stored (frozen) objects. */
export function objectJson(o: KubeObject): string {
  if (!Object.isFrozen(o)) return JSON.stringify(o);
  let json = whole.get(o);
  if (json === undefined) {
    json = JSON.stringify(o);
    whole.set(o, json);
  }
  return json;
}

/** The object as a built-in kind's LIST carries it: without `kind` and `apiVersion` (cached like {@link objectJson}). */
export function listItemJson(o: KubeObject, carryType: boolean): string {
  if (carryType) return objectJson(o);
  const strip = (): string => {
    const { kind: _k, apiVersion: _a, ...rest } = o;
    return JSON.stringify(rest);
  };
  if (!Object.isFrozen(o)) return strip();
  let json = withoutType.get(o);
  if (json === undefined) {
    json = strip();
    withoutType.set(o, json);
  }
  return json;
}

/**
 * One watch frame, byte for byte `JSON.stringify({ type, object })`, built around the object's
 * cached JSON: the concatenation is a rope, flattened once when the frame is written.
 */
export function watchFrameJson(type: 'ADDED' | 'MODIFIED' | 'DELETED', o: KubeObject): string {
  return `{"type":"${type}","object":${objectJson(o)}}`;
}
