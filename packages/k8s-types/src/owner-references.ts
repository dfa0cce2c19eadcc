/**
 * Controller references (controller-runtime's `controllerutil.SetControllerReference`, apimachinery's
 * `metav1.GetControllerOf` / `IsControlledBy`): mark an object as controlled by its owner, so the
 * garbage collector deletes it with the owner and an owner-mapped source (`ownerKeyMap` in the loop)
 * reconciles the owner when it changes. Read and written structurally: any view, any plain object.
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** An owner reference as read from an object: every field checked at run time, so any view or plain JSON fits. */
interface OwnerReferenceLike {
  readonly apiVersion?: unknown;
  readonly kind?: unknown;
  readonly name?: unknown;
  readonly uid?: unknown;
  readonly controller?: unknown;
}

/** What the owner must carry: `metadata.name` and `metadata.uid`; `apiVersion` and `kind` unless given in the options. */
interface OwnerObject {
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly metadata: { readonly name: string; readonly namespace?: string | undefined; readonly uid?: string | undefined };
}

/**
 * The metadata read here; any other field may be there (the index signature lets a metadata with
 * none of these fields yet, `{}`, pass as well).
 */
interface OwnedMeta {
  readonly name?: string | undefined;
  readonly namespace?: string | undefined;
  readonly ownerReferences?: readonly OwnerReferenceLike[] | null | undefined;
  readonly [field: string]: unknown;
}

/** The object to be controlled: a view, a plain object about to be created or applied. */
interface ControlledObject {
  readonly metadata?: OwnedMeta | undefined;
}

/** The element type of `T`'s owner references. */
type OwnerReferenceOf<T> = T extends {
  readonly metadata?: { readonly ownerReferences?: readonly (infer R)[] | null | undefined } | undefined;
}
  ? R
  : never;

/** `T` with its owner references set: every field of `T` kept, `metadata.ownerReferences` holding the controller reference. */
type WithControllerReference<T extends ControlledObject> = Omit<T, 'metadata'> & {
  readonly metadata: Omit<NonNullable<T['metadata']>, 'ownerReferences'> & {
    // A fresh array of plain objects: it goes straight into a write body (kube-client's `apply`).
    readonly ownerReferences: (OwnerReferenceOf<T> | ControllerReference)[];
  };
};

/** A controller reference as {@link setControllerReference} writes it (a type, not an interface, so it is a JSON object to a write body). */
type ControllerReference = {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller: true;
  readonly blockOwnerDeletion: boolean;
};

/** Options of {@link setControllerReference}. */
interface ControllerReferenceOptions {
  /**
   * The owner's `apiVersion` (`v1`, `apps/v1`, `cells.example.dev/v1`) and `kind`: required when the
   * owner does not carry them, as the items of a LIST of a built-in kind do not (controller-runtime
   * reads them from its scheme; a view has none).
   */
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  /** `blockOwnerDeletion` of the reference. Default `true`, as controller-runtime writes it (foreground deletion waits for the object). */
  readonly blockOwnerDeletion?: boolean | undefined;
}

/**
 * The object already has a controller, another one than the owner being set (controller-runtime's
 * `AlreadyOwnedError`): two controllers must never fight over one object.
 */
export class AlreadyOwnedError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_ALREADY_OWNED' as const;
  /** The object's `namespace/name` (or `name`), as far as it has one. */
  readonly object: string;
  /** The reference of the controller it already has. */
  readonly owner: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly uid: string };
  constructor(object: string, owner: AlreadyOwnedError['owner']) {
    super(`object ${object} is already owned by another ${owner.kind} controller ${owner.name} (uid ${owner.uid})`);
    this.object = object;
    this.owner = owner;
  }
}

/**
 * An owner reference Kubernetes would refuse or never honour (controller-runtime's `validateOwner`):
 * a namespaced owner of a cluster-scoped object, an owner in another namespace, or an owner whose
 * uid, apiVersion or kind is unknown.
 */
export class InvalidOwnerError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_OWNER_INVALID' as const;
}

const groupOf = (apiVersion: string): string | undefined => {
  const slash = apiVersion.indexOf('/');
  if (slash === -1) return apiVersion === '' ? undefined : ''; // 'v1': the core group
  // 'a/b/c' is no group/version (apimachinery's ParseGroupVersion fails): it refers to nothing.
  return apiVersion.indexOf('/', slash + 1) === -1 ? apiVersion.slice(0, slash) : undefined;
};

/**
 * Whether two references name the same object: same API group, kind and name (controller-runtime's
 * `referSameObject`). Not the uid, and not the version: a reference written at `apps/v1beta1` and one
 * at `apps/v1` name one Deployment, and a re-created owner of the same name takes over its reference.
 */
function sameObject(a: OwnerReferenceLike, b: ControllerReference): boolean {
  if (typeof a.apiVersion !== 'string') return false;
  const group = groupOf(a.apiVersion);
  return group !== undefined && group === groupOf(b.apiVersion) && a.kind === b.kind && a.name === b.name;
}

const keyOf = (meta: ControlledObject['metadata']): string =>
  meta?.namespace ? `${meta.namespace}/${meta.name ?? ''}` : (meta?.name ?? '<unnamed>');

/**
 * The object's controller reference: the first owner reference with `controller: true`
 * (apimachinery's `metav1.GetControllerOf`), or `undefined`. The apiserver admits at most one.
 */
export function controllerOf<R extends OwnerReferenceLike>(object: {
  readonly metadata?:
    | { readonly ownerReferences?: readonly R[] | null | undefined; readonly [field: string]: unknown }
    | undefined;
}): R | undefined {
  const refs = object?.metadata?.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  for (const ref of refs as readonly R[]) if (ref?.controller === true) return ref;
  return undefined;
}

/**
 * Whether `owner` is `object`'s controller: the controller reference's `uid` is the owner's
 * (apimachinery's `metav1.IsControlledBy`). By uid, so an owner deleted and re-created under the
 * same name does not control what its predecessor did.
 */
export function isControlledBy(
  object: ControlledObject,
  owner: { readonly metadata: { readonly uid?: string | undefined } },
): boolean {
  const uid = owner?.metadata?.uid;
  return uid !== undefined && uid !== '' && controllerOf(object)?.uid === uid;
}

/**
 * Returns a copy of `object` whose `metadata.ownerReferences` name `owner` as its controller
 * (controller-runtime's `SetControllerReference`): `controller: true`, `blockOwnerDeletion: true`
 * (unless `options.blockOwnerDeletion` says otherwise). A reference to the same owner (same group,
 * kind and name) is replaced in place, every other reference kept; `object` itself is never mutated
 * (cached views are shared and frozen).
 *
 * A reference copied from a cached view holds only what the view reads (not `blockOwnerDeletion`); with
 * server-side apply send only your own reference (the list is merged by `uid`), with an update the
 * whole object as read.
 *
 * @throws {InvalidOwnerError} when `owner` is namespaced and `object` is cluster-scoped or in another
 * namespace (Kubernetes allows an owner in the same namespace or cluster-scoped only), or when the
 * owner's uid, apiVersion or kind is unknown.
 * @throws {AlreadyOwnedError} when `object` already has a controller that is not `owner`.
 */
export function setControllerReference<T extends ControlledObject>(
  owner: OwnerObject,
  object: T,
  options: ControllerReferenceOptions = {},
): WithControllerReference<T> {
  const meta = object?.metadata;
  const ownerNamespace = owner?.metadata?.namespace;
  if (ownerNamespace) {
    if (!meta?.namespace) {
      throw new InvalidOwnerError(
        `cluster-scoped object ${keyOf(meta)} must not have a namespace-scoped owner (owner's namespace ${ownerNamespace})`,
      );
    }
    if (meta.namespace !== ownerNamespace) {
      throw new InvalidOwnerError(
        `cross-namespace owner references are disallowed: owner's namespace ${ownerNamespace}, object ${keyOf(meta)}`,
      );
    }
  }
  const apiVersion = options.apiVersion ?? owner?.apiVersion;
  const kind = options.kind ?? owner?.kind;
  const { name, uid } = owner?.metadata ?? {};
  if (!apiVersion || groupOf(apiVersion) === undefined || !kind) {
    throw new InvalidOwnerError(
      `owner ${String(name)} needs apiVersion and kind (a view of a built-in kind has neither: pass { apiVersion, kind })`,
    );
  }
  if (!name || !uid) throw new InvalidOwnerError(`owner ${kind} ${String(name)} needs metadata.name and metadata.uid`);
  const ref: ControllerReference = {
    apiVersion,
    kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: options.blockOwnerDeletion ?? true,
  };
  const existing = controllerOf(object);
  if (existing !== undefined && !sameObject(existing, ref)) {
    throw new AlreadyOwnedError(keyOf(meta), {
      apiVersion: String(existing.apiVersion),
      kind: String(existing.kind),
      name: String(existing.name),
      uid: String(existing.uid),
    });
  }
  const refs: OwnerReferenceLike[] = Array.isArray(meta?.ownerReferences) ? [...meta.ownerReferences] : [];
  const at = refs.findIndex((r) => sameObject(r, ref));
  if (at === -1) refs.push(ref);
  else refs[at] = ref;
  return { ...object, metadata: { ...meta, ownerReferences: refs } } as unknown as WithControllerReference<T>;
}
