import { expect } from 'vitest';
import type { KeyMap, ObjectKey, ObjectStoreReader, ParentKey } from '../src/index.js';

/** A pod-like object: its parent comes from a label. */
export interface Cell {
  readonly labels: Readonly<Record<string, string>>;
  readonly version: number;
}

export function cell(pool: string | undefined, version = 1): Cell {
  return { labels: pool === undefined ? {} : { pool }, version };
}

/** The key map most tests use: the `pool` label, or "cannot map" when it is absent. */
export const byPool: KeyMap<Cell, string> = (object) => object.labels['pool'];

/**
 * Recomputes the parent index from the cached objects alone and checks the store agrees with it:
 * every object is mappable, sits under the parent the (pure) key map gives, appears in exactly that
 * parent's members, and no parent is listed without members.
 */
export function checkInvariants<T, P extends ParentKey>(
  store: ObjectStoreReader<T, P>,
  keyMap: (object: T, key: ObjectKey) => unknown,
): void {
  const objects = store.snapshot();
  expect(store.size).toBe(objects.size);
  expect(new Set(store.keys())).toEqual(new Set(objects.keys()));

  const expected = new Map<P, Map<ObjectKey, T>>();
  for (const [key, object] of objects) {
    expect(store.has(key)).toBe(true);
    expect(store.get(key)).toBe(object);
    const parent = keyMap(object, key) as P;
    expect(parent, `cached object ${key} must be mappable`).not.toBeUndefined();
    expect(store.parentOf(key)).toBe(parent);
    let members = expected.get(parent);
    if (!members) expected.set(parent, (members = new Map()));
    members.set(key, object);
  }

  const parents = store.parents();
  expect(new Set(parents).size).toBe(parents.length);
  expect(new Set(parents)).toEqual(new Set(expected.keys()));
  for (const [parent, members] of expected) {
    expect(store.hasMembers(parent)).toBe(true);
    const actual = store.members(parent);
    expect(actual.size).toBe(members.size);
    for (const [key, object] of members) expect(actual.get(key)).toBe(object);
  }
}
