import { expect, vi } from 'vitest';
import type { KeyMap, ObjectKey, StoreReader } from '../src/index.js';
import type { Logger, Key } from '@reconcile-loop/primitives';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** One logger call, as {@link spyLogger} reports it. */
export interface LoggedCall {
  readonly level: keyof Logger;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/**
 * A {@link Logger} whose levels are `vi.fn()` spies (so one can be given a throwing implementation);
 * `entries()` lists the calls of every level merged in call order.
 */
export function spyLogger() {
  const spies = {
    debug: vi.fn<Logger['debug']>(),
    info: vi.fn<Logger['info']>(),
    warn: vi.fn<Logger['warn']>(),
    error: vi.fn<Logger['error']>(),
  };
  const entries = (): LoggedCall[] =>
    LEVELS.flatMap((level) =>
      spies[level].mock.calls.map(([fields, message], i) => ({
        order: spies[level].mock.invocationCallOrder[i] ?? 0,
        call: { level, fields, message },
      })),
    )
      .sort((a, b) => a.order - b.order)
      .map(({ call }) => call);
  return { ...spies, entries };
}

/** Real macrotask turns, so Node can run callbacks and report unhandled rejections; no clock moves. */
export async function macrotaskTurns(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

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
export function checkInvariants<T, P extends Key>(
  store: StoreReader<T, P>,
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
    expect(store.parentsOf(key)).toEqual([parent]);
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
