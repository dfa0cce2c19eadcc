/**
 * Event filters (controller-runtime's predicates): decide whether a create, an update or a delete of
 * a source's object is worth a reconcile. The store always applies the event; only the enqueue is
 * skipped: a source's filters become its store's `admit` ({@link admission}). There is no generic filter: every event a source yields is a create, an update or a
 * delete (a relist's too), and resync re-drives parents, not objects.
 */
import type { ObjectKey, ObjectStoreOptions } from '@reconcile-loop/object-store';
import type { Logger } from '@reconcile-loop/primitives';

/**
 * `true` when the change from `previous` to `next` (two versions of the same cached object) should
 * reach reconcile. Creates and deletes always do, and so does an update that moves the object to
 * other parents: a filter can skip a no-op, never hide a change of membership. Nor is a filter asked
 * when `next` has another `metadata.uid` than `previous`: that is a delete and a create under one name
 * that a relist shows as one update. A throw counts as `true`.
 */
export type UpdateFilter<U> = (previous: U, next: U) => boolean;

/**
 * `true` when a create or a delete of `object` should reach reconcile (controller-runtime's
 * `CreateFunc` / `DeleteFunc`): the `createFilter` and `deleteFilter` of a source. A create is an
 * object the store did not hold (a relist's new objects too); a delete is one it held (a relist's
 * synthesised deletions too), judged on the last known object. A throw counts as `true`.
 */
export type ObjectFilter<U> = (object: U) => boolean;

/** A source's filters, as the options give them. */
export interface EventFilters<U> {
  readonly create?: ObjectFilter<U> | undefined;
  readonly update?: UpdateFilter<U> | undefined;
  readonly delete?: ObjectFilter<U> | undefined;
}

type StringMap = Readonly<Record<string, string>> | null | undefined;

interface MetaView {
  readonly metadata?:
    | {
        readonly uid?: string | undefined;
        readonly resourceVersion?: string | undefined;
        readonly generation?: number | undefined;
        readonly labels?: StringMap;
        readonly annotations?: StringMap;
      }
    | undefined;
}

/**
 * Whether `next` replaced `previous` under the same name (both carry a uid, and they differ). A live
 * watch shows this as a delete then a create, which no update filter sees (controller-runtime's
 * predicates filter updates only); a relist after a watch gap shows it as one update. Treating it as
 * a create in both cases keeps what reaches reconcile independent of watch gaps: a parent deleted
 * and re-created at generation 1 while the watch was down is reconciled (and a dead-lettered one
 * released, its fingerprint holding the uid) at the relist, not at the next resync.
 */
function replaced(previous: unknown, next: unknown): boolean {
  const before = (previous as MetaView | undefined)?.metadata?.uid;
  const after = (next as MetaView | undefined)?.metadata?.uid;
  return before !== undefined && after !== undefined && before !== after;
}

/**
 * Skips updates whose `metadata.resourceVersion` did not change: a relist or a repeated frame that
 * brings back an object the cache already holds. controller-runtime's `ResourceVersionChangedPredicate`.
 * An object without a resourceVersion (an in-process source) always passes.
 */
export const resourceVersionChanged: UpdateFilter<MetaView> = (previous, next) => {
  const before = previous?.metadata?.resourceVersion;
  const after = next?.metadata?.resourceVersion;
  return before === undefined || after === undefined || before !== after;
};

/**
 * Passes only updates that change `metadata.generation`, i.e. the spec: status, label and annotation
 * writes are skipped. controller-runtime's `GenerationChangedPredicate`, with its caveat: a kind that
 * has no generation (undefined on both sides) never passes an update, so use it on parents with a
 * spec, not on pods whose status the reconcile reads.
 */
export const generationChanged: UpdateFilter<MetaView> = (previous, next) =>
  previous?.metadata?.generation !== next?.metadata?.generation;

/** Same keys, same values; absent reads as empty, as the views read it. */
function sameMap(a: StringMap, b: StringMap): boolean {
  if (a === b) return true;
  const before = Object.keys(a ?? {});
  if (before.length !== Object.keys(b ?? {}).length) return false;
  for (const key of before) if (!Object.hasOwn(b ?? {}, key) || b![key] !== a![key]) return false;
  return true;
}

/**
 * Passes only updates that change `metadata.labels` (any key added, removed or given another value).
 * controller-runtime's `LabelChangedPredicate`; absent and empty labels are one (the views read both as
 * `{}`). For a source whose key map reads labels (pods selected by a Service) beside a
 * status-ignoring reconcile.
 */
export const labelsChanged: UpdateFilter<MetaView> = (previous, next) =>
  !sameMap(previous?.metadata?.labels, next?.metadata?.labels);

/** Passes only updates that change `metadata.annotations`. controller-runtime's `AnnotationChangedPredicate`; see {@link labelsChanged}. */
export const annotationsChanged: UpdateFilter<MetaView> = (previous, next) =>
  !sameMap(previous?.metadata?.annotations, next?.metadata?.annotations);

/** Runs one user filter; a throw is logged and lets the event through (never lose a change). */
function run(what: 'create' | 'update' | 'delete', call: () => boolean, key: ObjectKey, source: string, logger: Logger): boolean {
  try {
    return call() !== false;
  } catch (error) {
    logger.error({ source, objectKey: key, err: error }, `${what} filter threw; the ${what} is not filtered`);
    return true;
  }
}

/**
 * Whether an event passes the source's filters: a create (`previous` undefined) asks `create`, a
 * delete (`next` undefined) asks `delete`, an update `update`, and an update that is a replacement
 * under one name (another uid) asks `delete` on the old object and `create` on the new one and
 * passes if either does, as a live watch would show it. An absent filter passes.
 */
export function admits<U>(
  filters: EventFilters<U>,
  previous: U | undefined,
  next: U | undefined,
  key: ObjectKey,
  source: string,
  logger: Logger,
): boolean {
  const { create, update, delete: del } = filters;
  const created = (object: U): boolean => create === undefined || run('create', () => create(object), key, source, logger);
  const deleted = (object: U): boolean => del === undefined || run('delete', () => del(object), key, source, logger);
  if (previous === undefined) return next === undefined || created(next);
  if (next === undefined) return deleted(previous);
  if (replaced(previous, next)) return deleted(previous) || created(next);
  return update === undefined || run('update', () => update(previous, next), key, source, logger);
}

/**
 * A source's filters as its store's `admit` (object-store asks it for every create and delete, and
 * for an update that keeps the object's parents: the same rule as {@link admits}, applied where the
 * store knows the parents before and after); `undefined` when no filter is set, so an unfiltered
 * store judges nothing.
 */
export function admission<U>(filters: EventFilters<U>, source: string, logger: Logger): ObjectStoreOptions<U, never>['admit'] {
  if (filters.create === undefined && filters.update === undefined && filters.delete === undefined) return undefined;
  return (previous, next, key) => admits(filters, previous, next, key, source, logger);
}
