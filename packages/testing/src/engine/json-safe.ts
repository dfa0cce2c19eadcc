/**
 * User JSON is data, never code: keys such as `__proto__`, `constructor` and `prototype` are
 * ordinary members. `obj[key] = v` would re-point a prototype for `__proto__`, and `key in obj`
 * sees inherited members; these helpers only ever read and write own data properties.
 */

/** Sets an own, enumerable data property, whatever the key (no setter runs, no prototype changes). */
export function setOwn(obj: object, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The own property `key` of `obj`, or undefined (inherited members are invisible). */
export function getOwn(obj: object, key: string): unknown {
  return Object.hasOwn(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
}

/** The deepest nesting of arrays and objects in a parsed JSON value, counted without recursion. */
export function nestingDepth(value: unknown, stopAbove: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) max = d;
    if (max > stopAbove) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
    }
  }
  return max;
}

/** Bodies nested deeper than this are refused with 400 before any recursive code sees them. */
export const MAX_JSON_DEPTH = 1_000;
