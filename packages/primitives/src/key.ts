/**
 * A key in a work queue, a retry schedule or a parent index: what a reconcile is called with.
 * Compared with `===` (`Map` semantics), so a key must be a primitive; an object would never match
 * itself after a round trip through a store. `'ns/name'` strings are the usual choice.
 */
export type Key = string | number | bigint | boolean;

/** True when `value` can be a {@link Key} (not an object, `undefined`, `null`, a symbol or `NaN`). */
export function isKey(value: unknown): value is Key {
  switch (typeof value) {
    case 'string':
    case 'bigint':
    case 'boolean':
      return true;
    case 'number':
      return !Number.isNaN(value);
    default:
      return false;
  }
}
