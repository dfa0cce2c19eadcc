/**
 * Update filters (controller-runtime's predicates, for updates only): decide whether an update of a
 * cached object is worth a reconcile. The store is always updated; only the enqueue is skipped.
 */
import type { ObjectKey, ObjectStore, SourceEvent } from '@reconcile-loop/object-store';
import type { Logger, Key } from '@reconcile-loop/primitives';
import type { StoreWriter } from '@reconcile-loop/stream-driver';

/**
 * `true` when the change from `previous` to `next` (two versions of the same cached object) should
 * reach reconcile. Creates and deletes always do, and so does an update that moves the object to
 * other parents: a filter can skip a no-op, never hide a change of membership. Nor is a filter asked
 * when `next` has another `metadata.uid` than `previous`: that is a delete and a create under one name
 * that a relist shows as one update. A throw counts as `true`.
 */
export type UpdateFilter<U> = (previous: U, next: U) => boolean;

interface MetaView {
  readonly metadata?:
    | {
        readonly uid?: string | undefined;
        readonly resourceVersion?: string | undefined;
        readonly generation?: number | undefined;
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

/** Runs a user filter; a throw is logged and lets the update through (never lose a change). */
export function passes<U>(
  filter: UpdateFilter<U>,
  previous: U,
  next: U,
  key: ObjectKey,
  source: string,
  logger: Logger,
): boolean {
  if (replaced(previous, next)) return true;
  try {
    return filter(previous, next) !== false;
  } catch (error) {
    logger.error({ source, objectKey: key, err: error }, 'update filter threw; the update is not filtered');
    return true;
  }
}

const EMPTY: ReadonlySet<never> = new Set();

/**
 * Wraps the primary `ObjectStore` so filtered updates still land in the cache but affect no parent.
 * A relist is judged object by object: unchanged objects are skipped, new, moved and deleted ones
 * (the store's synthesised deletes) still affect their parents.
 */
export function filteredWriter<T, P extends Key>(
  store: ObjectStore<T, P>,
  filter: UpdateFilter<T>,
  source: string,
  logger: Logger,
): StoreWriter<T, P> {
  return {
    apply(event: SourceEvent<T>): ReadonlySet<P> {
      const type = (event as { type?: unknown } | null)?.type;
      if (type === 'upsert' && event.type === 'upsert') {
        const previous = store.get(event.key);
        const parentBefore = store.parentOf(event.key);
        const affected = store.apply(event);
        const unmoved = parentBefore !== undefined && store.parentOf(event.key) === parentBefore;
        if (previous !== undefined && unmoved && !passes(filter, previous, event.object, event.key, source, logger)) return EMPTY;
        return affected;
      }
      if (type !== 'replace' || event.type !== 'replace') return store.apply(event);
      const before = store.snapshot();
      const parentsBefore = new Map<ObjectKey, P | undefined>();
      for (const key of before.keys()) parentsBefore.set(key, store.parentOf(key));
      const affected = store.apply(event); // throws on a bad event before any write
      const out = new Set<P>();
      const world = event.objects;
      for (const [key, object] of world) {
        const previous = before.get(key);
        const was = parentsBefore.get(key);
        const now = store.parentOf(key);
        if (previous !== undefined && was === now && was !== undefined && !passes(filter, previous, object, key, source, logger))
          continue;
        if (was !== undefined) out.add(was);
        if (now !== undefined) out.add(now);
      }
      for (const [key, parent] of parentsBefore) if (!world.has(key) && parent !== undefined) out.add(parent);
      // Only parents the store itself reported: the filter narrows, it never adds.
      for (const parent of out) if (!affected.has(parent)) out.delete(parent);
      return out;
    },
  };
}
