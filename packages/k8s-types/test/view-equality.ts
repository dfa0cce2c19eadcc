/**
 * What the byte readers must match: the cache and every consumer see the view itself, so equal
 * means deep-equal with the same key order, array-ness, frozenness and prototypes.
 */

/** The first difference between two views (a path and the two values), or `undefined` when equal. */
export function difference(a: unknown, b: unknown, path = '$'): string | undefined {
  if (Object.is(a, b)) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return `${path}: ${String(a)} vs ${String(b)}`;
  if (Array.isArray(a) !== Array.isArray(b)) return `${path}: array vs object`;
  if (Object.isFrozen(a) !== Object.isFrozen(b)) return `${path}: frozen ${Object.isFrozen(a)} vs ${Object.isFrozen(b)}`;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return `${path}: prototype`;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.join('\u0000') !== keysB.join('\u0000')) return `${path}: keys [${keysA.join(',')}] vs [${keysB.join(',')}]`;
  for (const key of keysA) {
    const found = difference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A read's value, or the error it threw as `{ threw, message }`, so a verdict of either kind compares. */
export function settle(read: () => unknown): unknown {
  try {
    return read();
  } catch (error) {
    return { threw: (error as Error).name, message: (error as Error).message };
  }
}
