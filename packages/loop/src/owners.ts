/**
 * Owner-reference mapping (controller-runtime's `EnqueueRequestForOwner`), read structurally from
 * `metadata.ownerReferences` and `metadata.namespace`, so no Kubernetes client is imported.
 */
import type { KeyMap, ObjectKey } from '@reconcile-loop/object-store';
import type { Key } from '@reconcile-loop/primitives';

/** Which owner references of an owned object name its parent. */
export interface OwnerSelector {
  /** The owner's kind, e.g. `CocoonSet`. Compared exactly. */
  kind: string;
  /**
   * The owner's `apiVersion` (`group/version`, or `v1` for the core group). Only the group is
   * compared, as controller-runtime does: an owner reference written at another version of the same
   * group still names the same object. Omitted: any group.
   */
  apiVersion?: string | undefined;
  /**
   * `true` (the default, `OnlyControllerOwner()`): only the reference with `controller: true` counts,
   * so an object maps to at most one parent. `false`: every reference of this kind counts, so an
   * object shared by several owners maps to all of them.
   */
  controllerOnly?: boolean | undefined;
  /**
   * `true`: the owner's kind is cluster-scoped (a `ClusterPool`, a tenant, a `ClusterIssuer`), so its
   * key is its bare `name` even when the owned object is namespaced. Default `false`: the owner lives
   * in the owned object's namespace. An owner reference carries no namespace, and Kubernetes allows
   * both ("an owning object must be in the same namespace as the dependent, or be cluster-scoped");
   * controller-runtime's `EnqueueRequestForOwner` reads the scope from its REST mapping, which a
   * structural selector does not have, so it is stated here.
   */
  clusterScoped?: boolean | undefined;
}

/** The least an owned object must carry to be mapped by its owner references. */
export interface OwnedObjectView {
  readonly metadata?:
    | {
        readonly namespace?: string | undefined;
        readonly ownerReferences?:
          | ReadonlyArray<{
              readonly apiVersion?: string | undefined;
              readonly kind?: string | undefined;
              readonly name?: string | undefined;
              readonly controller?: boolean | undefined;
            }>
          | null
          | undefined;
      }
    | undefined;
}

/**
 * Maps an object of a secondary source to the parent keys it concerns (none, one, or several):
 * controller-runtime's `EnqueueRequestsFromMapFunc`. It is object-store's {@link KeyMap} with a
 * third argument, `caches` (the loop's `MapCaches`: every source's store, read-only, as of the
 * event), which the loop binds before handing it to the source's store: so it may read other caches
 * — e.g. the Services whose selector matches a pod — and the store runs it at event time on the new
 * and on the old (cached) object of an update, and on the last known object of a delete (the store's
 * `remap`). It must not mutate anything.
 */
export type SecondaryKeyMap<U, P extends Key, C = unknown> = (object: U, key: ObjectKey, caches: C) => ReturnType<KeyMap<U, P>>;

const groupOf = (apiVersion: string): string => {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
};

/**
 * Builds the key map of an owned kind: the parent key of each selected owner reference is the
 * owner's object key as a reflector writes it — `namespace/name` for a namespaced owner (which must
 * be in the owned object's namespace, so that namespace is the owner's) and the bare `name` for a
 * cluster-scoped owner (`clusterScoped: true`) or a cluster-scoped owned object. An object without a
 * matching reference maps to nothing and is still cached.
 */
export function ownerKeyMap(selector: OwnerSelector): (object: OwnedObjectView, key?: ObjectKey) => string[] | undefined {
  const controllerOnly = selector.controllerOnly ?? true;
  const group = selector.apiVersion === undefined ? undefined : groupOf(selector.apiVersion);
  const clusterScoped = selector.clusterScoped === true;
  return (object) => {
    const refs = object?.metadata?.ownerReferences;
    if (!Array.isArray(refs) || refs.length === 0) return undefined;
    const namespace = clusterScoped ? undefined : object.metadata?.namespace;
    const keys: string[] = [];
    for (const ref of refs as NonNullable<OwnedObjectView['metadata']>['ownerReferences'] & object) {
      if (ref?.kind !== selector.kind || typeof ref.name !== 'string' || ref.name === '') continue;
      if (group !== undefined && groupOf(ref.apiVersion ?? '') !== group) continue;
      if (controllerOnly && ref.controller !== true) continue;
      const key = namespace ? `${namespace}/${ref.name}` : ref.name;
      if (!keys.includes(key)) keys.push(key);
    }
    return keys;
  };
}
