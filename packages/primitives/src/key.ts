import { ReconcileLoopError } from './errors.js';

/**
 * A key in a work queue, a retry schedule or a parent index: what a reconcile is called with.
 * Compared with `===` (`Map` semantics), so a key must be a primitive; an object would never match
 * itself after a round trip through a store. `'ns/name'` strings are the usual choice: build them with
 * {@link objectKey} and read them back with {@link parseKey}.
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

/**
 * An object's namespace and name (apimachinery's `types.NamespacedName`, controller-runtime's
 * `client.ObjectKey`): `namespace` is absent for a cluster-scoped object.
 */
export interface NamespacedName {
  readonly namespace?: string | undefined;
  readonly name: string;
}

/** A string {@link parseKey} cannot read as `namespace/name` or `name`. */
export class InvalidKeyError extends ReconcileLoopError {
  readonly code = 'RL_KEY_INVALID' as const;
  /** The key as given. */
  readonly key: string;
  constructor(key: string, reason: string) {
    super(`not an object key (namespace/name or name): ${JSON.stringify(key)}: ${reason}`);
    this.key = key;
  }
}

/**
 * The object key: `namespace/name`, or `name` for a cluster-scoped object (an empty namespace is
 * none), as client-go's `MetaNamespaceKeyFunc` writes it and a reflector keys its store. Takes a
 * {@link NamespacedName} or any object with `metadata` (a cached view, an object about to be
 * written), so the one spelling serves both.
 */
export function objectKey(object: NamespacedName | { readonly metadata: NamespacedName }): string {
  // One property read decides the shape: the reflector calls this once per watch frame.
  const { namespace, name } = 'metadata' in object ? object.metadata : object;
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Reads an object key back (client-go's `SplitMetaNamespaceKey`): `'ns/name'` is
 * `{ namespace: 'ns', name: 'name' }`, `'name'` (a cluster-scoped object) is `{ name: 'name' }`, so
 * `parseKey(objectKey(o))` names `o` again. Kubernetes names and namespaces never contain `/`.
 *
 * @throws {InvalidKeyError} for more than one `/` or an empty name (no object key has either); an
 * empty namespace (`'/name'`) reads as cluster-scoped, as client-go reads it.
 */
export function parseKey(key: string): NamespacedName {
  if (typeof key !== 'string') throw new InvalidKeyError(String(key), `a key to parse is a string, got ${typeof key}`);
  const slash = key.indexOf('/');
  if (slash === -1) {
    if (key === '') throw new InvalidKeyError(key, 'the name is empty');
    return { name: key };
  }
  if (key.indexOf('/', slash + 1) !== -1) throw new InvalidKeyError(key, 'more than one "/"');
  const name = key.slice(slash + 1);
  if (name === '') throw new InvalidKeyError(key, 'the name is empty');
  return slash === 0 ? { name } : { namespace: key.slice(0, slash), name };
}
