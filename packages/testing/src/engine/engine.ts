import { randomUUID } from 'node:crypto';
import { ApiServerStatusError } from '../errors.js';
import { NAMESPACE_RESOURCE, admitCreateIn, namespaceState } from '../kinds/namespace.js';
import type { ResourceType } from '../kinds/resource.js';
import { JsonPatchError, jsonPatch, mergePatch, type Json } from '../patch.js';
import { managedFieldsOf, updateManagedFields } from '../patch/apply.js';
import { StrategicPatchError, strategicMerge } from '../patch/strategic.js';
import { labelKeyError, labelValueError } from '../selectors.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  failure,
  invalid,
  invalidValue,
  notFound,
  required,
  type FieldError,
  type KubeStatus,
} from '../status.js';
import type { ApiServerObject, ObjectMeta } from '../types.js';
import { isRecord, nameErrors, rfc3339, shape, stable } from './meta.js';
import type { MvccStore } from './store.js';

/** How a PATCH body is interpreted. */
export type PatchType = 'merge' | 'json' | 'strategic';

/** Who writes, for `metadata.managedFields`: the `fieldManager` query parameter or the client's user agent. */
export interface WriteOptions {
  dryRun?: boolean;
  /** The manager an Update is recorded under. Recorded when named explicitly or once the object has managed fields. */
  fieldManager?: string;
  /** True when `fieldManager` came from the request (not derived from the user agent). */
  fieldManagerExplicit?: boolean;
}

/** Options for a DELETE, from the query string or a `DeleteOptions` body. */
export interface ApiServerDeleteOptions {
  gracePeriodSeconds?: number | undefined;
  /** `dryRun=All`: everything is checked and the answer computed, nothing is written. */
  dryRun?: boolean | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
}

/** The outcome of a DELETE: the object as it now stands and whether it left the store. */
export interface DeleteResult {
  object: ApiServerObject;
  deleted: boolean;
}

function fail(s: KubeStatus): never {
  throw new ApiServerStatusError(s);
}

const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** The storage key of an object: `namespace/name`, or `/name` for cluster-scoped kinds. */
export function storageKey(ns: string, name: string): string {
  return `${ns}/${name}`;
}

/**
 * The one write path every kind goes through — HTTP verbs and typed controls alike: body checks,
 * metadata validation, the kind's defaulting and validation, optimistic concurrency, `generation`,
 * the status subresource, graceful deletion and finalizers. Every refusal is an
 * {@link ApiServerStatusError} carrying the Status the HTTP API sends, and a refused write commits nothing.
 */
export class ResourceEngine {
  readonly #legacyDeletion: boolean;
  readonly #implicitNamespaces: boolean;

  readonly #now: () => Date;

  /**
   * `legacyDeletion` (`deletionEvents: 'immediate'`): a pod whose grace is 0 (unbound, terminal, or
   * a 0-grace delete) leaves with a DELETED alone; the real registry always sends the terminating
   * MODIFIED first. `implicitNamespaces`: an HTTP create into a missing namespace creates it
   * (typed-control creates always do) instead of the real 404.
   */
  constructor(
    readonly store: MvccStore,
    now: () => Date,
    opts: { legacyDeletion?: boolean; implicitNamespaces?: boolean } = {},
  ) {
    this.#now = now;
    this.#legacyDeletion = opts.legacyDeletion === true;
    this.#implicitNamespaces = opts.implicitNamespaces === true;
  }

  /** A namespaced create's admission: the namespace must exist, or is made for direct and implicit creates. */
  #admitNamespace(ns: string, direct: boolean): void {
    if (
      (direct || this.#implicitNamespaces) &&
      namespaceState(this.store, ns) === 'missing' &&
      nameErrors(ns, 'label').length === 0
    ) {
      this.create(NAMESPACE_RESOURCE, '', { metadata: { name: ns } }, { direct: true });
      return;
    }
    admitCreateIn(this.store, ns);
  }

  /** The clock writes are stamped with. */
  clock(): Date {
    return this.#now();
  }

  /** The 404 Status for `name` of `r`. */
  notFoundStatus(r: ResourceType, name: string): KubeStatus {
    return notFound(r, name);
  }

  /** The current object, or a 404 Status. */
  get(r: ResourceType, ns: string, name: string): ApiServerObject {
    const o = this.store.get(r, storageKey(ns, name));
    if (o === undefined) fail(notFound(r, name));
    return o;
  }

  #checkBody(r: ResourceType, body: unknown): Record<string, unknown> {
    if (!isRecord(body)) fail(badRequest(`the object provided is unrecognized (must be of type ${r.kind})`));
    if (body['kind'] !== undefined && body['kind'] !== r.kind) {
      fail(badRequest(`the object provided is unrecognized (must be of type ${r.kind}): kind ${JSON.stringify(body['kind'])}`));
    }
    if (body['apiVersion'] !== undefined && body['apiVersion'] !== r.apiVersion) {
      fail(
        badRequest(
          `the API version in the data (${String(body['apiVersion'])}) does not match the expected API version (${r.apiVersion})`,
        ),
      );
    }
    if (body['metadata'] !== undefined && !isRecord(body['metadata'])) {
      fail(badRequest('metadata must be an object'));
    }
    return body;
  }

  /** Metadata rules every kind shares (`ValidateObjectMeta`) plus the kind's own validation. */
  #validate(r: ResourceType, o: ApiServerObject, isCreate: boolean, old: ApiServerObject | undefined): void {
    const errs: FieldError[] = [];
    const name = o.metadata.name ?? '';
    if (isCreate) {
      for (const m of nameErrors(name, r.nameRule)) errs.push(invalidValue('metadata.name', name, m));
      const ns = o.metadata.namespace ?? '';
      if (r.namespaced) for (const m of nameErrors(ns, 'label')) errs.push(invalidValue('metadata.namespace', ns, m));
    }
    const labels = o.metadata.labels;
    if (labels !== undefined) {
      if (!isRecord(labels)) errs.push(invalidValue('metadata.labels', labels, 'must be a map of string to string'));
      else {
        for (const [k, v] of Object.entries(labels)) {
          const ke = labelKeyError(k);
          if (ke !== undefined) errs.push(invalidValue('metadata.labels', k, ke));
          if (typeof v !== 'string') errs.push(invalidValue(`metadata.labels`, v, 'must be a string'));
          else {
            const ve = labelValueError(v);
            if (ve !== undefined) errs.push(invalidValue('metadata.labels', v, ve));
          }
        }
      }
    }
    const annotations = o.metadata.annotations;
    if (annotations !== undefined && (!isRecord(annotations) || Object.values(annotations).some((v) => typeof v !== 'string'))) {
      errs.push(invalidValue('metadata.annotations', '', 'must be a map of string to string'));
    }
    const finalizers = o.metadata.finalizers;
    if (finalizers !== undefined && (!Array.isArray(finalizers) || finalizers.some((f) => typeof f !== 'string'))) {
      errs.push(invalidValue('metadata.finalizers', finalizers, 'must be a list of strings'));
    }
    errs.push(...r.validate(o));
    if (old !== undefined) errs.push(...r.validateUpdate(o, old));
    if (errs.length > 0) fail(invalid({ group: r.group, kind: r.kind }, name, errs));
  }

  /**
   * POST: assigns uid, creationTimestamp, generation 1 and the next revision, after the kind's
   * create defaulting. `direct` (typed controls) keeps a caller-provided status.
   */
  create(r: ResourceType, ns: string, body: unknown, opts: { direct?: boolean } & WriteOptions = {}): ApiServerObject {
    const b = structuredClone(this.#checkBody(r, body));
    const meta: ObjectMeta = isRecord(b['metadata']) ? { ...(b['metadata'] as ObjectMeta) } : {};
    // etcd3's Create refuses a set resourceVersion with a plain error, which the apiserver answers 500.
    if (
      opts.direct !== true &&
      typeof meta.resourceVersion === 'string' &&
      /^\d+$/.test(meta.resourceVersion) &&
      Number(meta.resourceVersion) !== 0
    ) {
      fail(failure(500, '', 'resourceVersion should not be set on objects to be created'));
    }
    if (r.namespaced) this.#admitNamespace(ns, opts.direct === true);
    if (r.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== ns) {
        fail(badRequest('the namespace of the provided object does not match the namespace sent on the request'));
      }
      meta.namespace = ns;
    } else delete meta.namespace;
    if ((meta.name === undefined || meta.name === '') && typeof meta.generateName === 'string' && meta.generateName !== '') {
      for (let attempt = 0; attempt < 8; attempt++) {
        let suffix = '';
        for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
        meta.name = `${meta.generateName}${suffix}`;
        if (this.store.get(r, storageKey(ns, meta.name)) === undefined) break;
      }
    }
    if (meta.name === undefined || meta.name === '' || typeof meta.name !== 'string') {
      fail(invalid({ group: r.group, kind: r.kind }, '', [required('metadata.name', 'name or generateName is required')]));
    }
    const name = meta.name;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    meta.uid = randomUUID();
    meta.creationTimestamp = rfc3339(this.#now());
    if (r.tracksGeneration) meta.generation = 1;
    else delete meta.generation;
    let obj = shape(r, b, meta);
    r.prepareForCreate(obj, opts.direct === true);
    obj = shape(r, obj, obj.metadata);
    this.#validate(r, obj, true, undefined);
    if (this.store.get(r, storageKey(ns, name)) !== undefined) fail(alreadyExists(r, name));
    if (opts.fieldManagerExplicit === true && opts.fieldManager !== undefined && obj.metadata.managedFields === undefined) {
      obj = updateManagedFields(
        { ...obj, metadata: { ...obj.metadata } },
        obj,
        opts.fieldManager,
        r.apiVersion,
        r.strategicMergeKeys ?? {},
        this.#now(),
      );
      obj = shape(r, obj, obj.metadata);
    }
    // A dry-run create answers what would be stored, without a resourceVersion (nothing was).
    if (opts.dryRun === true) return obj;
    return this.store.commit(r, storageKey(ns, name), 'ADDED', obj).object;
  }

  /**
   * PUT (main resource or `/status`). A non-empty `metadata.resourceVersion` must match (409
   * otherwise); kinds that allow unconditional updates accept an empty one, others refuse it (422).
   * A write that changes nothing commits nothing, as etcd3's GuaranteedUpdate skips equal bytes.
   */
  update(
    r: ResourceType,
    ns: string,
    name: string,
    body: unknown,
    opts: {
      subresource?: 'status';
      direct?: boolean;
      fromPatch?: boolean;
      keepGeneration?: boolean;
      applied?: boolean;
    } & WriteOptions = {},
  ): ApiServerObject {
    const old = this.get(r, ns, name);
    const b = structuredClone(this.#checkBody(r, body));
    const bodyMeta: ObjectMeta = isRecord(b['metadata']) ? (b['metadata'] as ObjectMeta) : {};
    if ((bodyMeta.name ?? '') !== name) {
      fail(badRequest(`the name of the object (${String(bodyMeta.name ?? '')}) does not match the name on the URL (${name})`));
    }
    if (r.namespaced && bodyMeta.namespace !== undefined && bodyMeta.namespace !== '' && bodyMeta.namespace !== ns) {
      fail(badRequest('the namespace of the provided object does not match the namespace sent on the request'));
    }
    const rv = bodyMeta.resourceVersion ?? '';
    if (rv === '' && !r.allowUnconditionalUpdate && opts.direct !== true && opts.fromPatch !== true) {
      fail(
        invalid({ group: r.group, kind: r.kind }, name, [
          invalidValue('metadata.resourceVersion', 0, 'must be specified for an update'),
        ]),
      );
    }
    if (rv !== '' && rv !== old.metadata.resourceVersion) fail(conflict(r, name));
    if (bodyMeta.uid !== undefined && bodyMeta.uid !== '' && bodyMeta.uid !== old.metadata.uid) {
      // The storage layer's precondition error, passed through with its StorageError wording.
      const key = `/registry/${r.group === '' ? '' : `${r.group}/`}${r.plural}/${r.namespaced ? `${ns}/` : ''}${name}`;
      fail(
        conflict(
          r,
          name,
          `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${String(bodyMeta.uid)}, UID in object meta: ${old.metadata.uid ?? ''}`,
        ),
      );
    }

    let next: ApiServerObject;
    if (opts.subresource === 'status') {
      next = { ...old, metadata: old.metadata };
      if (b['status'] === undefined) delete next['status'];
      else next['status'] = b['status'];
      next = shape(r, next, r.prepareStatusMetadata(old.metadata, bodyMeta));
    } else {
      const meta: ObjectMeta = { ...bodyMeta };
      for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
        if (old.metadata[k] === undefined) delete meta[k];
        else meta[k] = old.metadata[k] as never;
      }
      if (r.namespaced) meta.namespace = ns;
      else delete meta.namespace;
      meta.name = name;
      // An update that omits managedFields keeps them, as the real field manager does.
      if (meta.managedFields === undefined && old.metadata.managedFields !== undefined)
        meta.managedFields = old.metadata.managedFields;
      next = shape(r, b, meta);
      r.prepareForUpdate(next, old);
      if (r.statusSubresource && opts.direct !== true) {
        if (old['status'] === undefined) delete next['status'];
        else next['status'] = old['status'];
      }
      // Direct writes skip the immutability rules only: the kubelet may change what a client may not.
      this.#validate(r, next, false, opts.direct === true ? undefined : old);
      next = shape(r, next, next.metadata);
    }
    if (r.tracksGeneration && opts.keepGeneration !== true && stable(r.generationPart(next)) !== stable(r.generationPart(old))) {
      next.metadata = { ...next.metadata, generation: (old.metadata.generation ?? 0) + 1 };
    }
    const manager = opts.fieldManager;
    if (
      opts.applied !== true &&
      opts.direct !== true &&
      manager !== undefined &&
      (opts.fieldManagerExplicit === true || managedFieldsOf(old).length > 0)
    ) {
      next = updateManagedFields(old, next, manager, r.apiVersion, r.strategicMergeKeys ?? {}, this.#now());
      next = shape(r, next, next.metadata);
    }
    const comparableOld = stable({ ...old, metadata: { ...old.metadata, resourceVersion: undefined } });
    const comparableNext = stable({ ...next, metadata: { ...next.metadata, resourceVersion: undefined } });
    if (comparableOld === comparableNext) return old;
    if (opts.dryRun === true)
      return { ...next, metadata: { ...next.metadata, resourceVersion: old.metadata.resourceVersion ?? '' } };
    const finalizersDone =
      next.metadata.deletionTimestamp !== undefined &&
      (next.metadata.finalizers ?? []).length === 0 &&
      (next.metadata.deletionGracePeriodSeconds ?? 0) === 0 &&
      !r.holdsDeletion(next);
    return this.store.commit(r, storageKey(ns, name), finalizersDone ? 'DELETED' : 'MODIFIED', next).object;
  }

  /** PATCH: applies the patch to the current object and writes the result as an update would. */
  patch(
    r: ResourceType,
    ns: string,
    name: string,
    type: PatchType,
    patchBody: unknown,
    opts: { subresource?: 'status' } & WriteOptions = {},
  ): ApiServerObject {
    const old = this.get(r, ns, name);
    let patched: Json;
    if (type === 'json') {
      try {
        patched = jsonPatch(old as unknown as Json, patchBody);
      } catch (e) {
        if (e instanceof JsonPatchError) {
          if (e.code === 'RL_APISERVER_JSON_PATCH_DECODE') fail(badRequest(e.message));
          fail(
            failure(422, 'Invalid', 'the server rejected our request due to an error in our request', {
              causes: [{ reason: 'UnexpectedServerResponse', message: e.message }],
            }),
          );
        }
        throw e;
      }
    } else if (type === 'strategic') {
      if (!isRecord(patchBody)) fail(badRequest('json: cannot unmarshal into Go value of type map[string]interface {}'));
      try {
        patched = strategicMerge(old as unknown as Record<string, unknown>, patchBody, r.strategicMergeKeys ?? {}) as Json;
      } catch (e) {
        if (e instanceof StrategicPatchError) fail(badRequest(e.message));
        throw e;
      }
    } else {
      if (!isRecord(patchBody)) fail(badRequest('json: cannot unmarshal into Go value of type map[string]interface {}'));
      patched = mergePatch(old as unknown as Json, patchBody as Json);
    }
    if (!isRecord(patched)) fail(badRequest('the patched object is not a JSON object'));
    const meta = isRecord(patched['metadata']) ? (patched['metadata'] as ObjectMeta) : {};
    if ((meta.resourceVersion === undefined || meta.resourceVersion === '') && old.metadata.resourceVersion !== undefined) {
      patched['metadata'] = { ...(meta as Record<string, Json>), resourceVersion: old.metadata.resourceVersion };
    }
    return this.update(r, ns, name, patched, { ...opts, fromPatch: true });
  }

  /**
   * DELETE, as the registry's graceful deletion does it. Kinds with graceful deletion (pods) always
   * get a MODIFIED first, carrying `deletionTimestamp` (now + grace) and
   * `deletionGracePeriodSeconds` — also for an unbound pod or a 0-grace delete — and then, when
   * the grace is 0 and no finalizer holds it, the DELETED; every shortening of the grace is its
   * own MODIFIED, and a delete that would not shorten it changes nothing. Other kinds go at once
   * (DELETED) unless finalizers hold them (MODIFIED with grace 0). The result is the object as the
   * response carries it: the terminating or the last state.
   */
  delete(r: ResourceType, ns: string, name: string, opts: ApiServerDeleteOptions = {}): DeleteResult {
    const old = this.get(r, ns, name);
    const pre = opts.preconditions;
    // The registry's delete preconditions name the Kind, not the resource (errors.NewConflict with a GroupResource of the kind).
    const byKind = { group: r.group, plural: r.kind };
    if (pre?.uid !== undefined && pre.uid !== old.metadata.uid) {
      fail(
        conflict(
          byKind,
          name,
          `the UID in the precondition (${pre.uid}) does not match the UID in record (${old.metadata.uid ?? ''}). The object might have been deleted and then recreated`,
        ),
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== old.metadata.resourceVersion) {
      fail(
        conflict(
          byKind,
          name,
          `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${old.metadata.resourceVersion ?? ''}). The object might have been modified`,
        ),
      );
    }
    const key = storageKey(ns, name);
    const held = (old.metadata.finalizers ?? []).length > 0 || r.holdsDeletion(old);
    const graceful = r.gracefulDelete;
    const grace = graceful ? r.gracePeriod(old, opts.gracePeriodSeconds) : 0;
    const current = old.metadata.deletionGracePeriodSeconds;
    if (old.metadata.deletionTimestamp !== undefined && (current === undefined || grace >= current)) {
      return { object: old, deleted: false };
    }
    if ((!graceful || (this.#legacyDeletion && grace === 0)) && !held) {
      return { object: opts.dryRun === true ? old : this.store.commit(r, key, 'DELETED', old).object, deleted: true };
    }
    const meta: ObjectMeta = {
      ...old.metadata,
      deletionTimestamp: rfc3339(new Date(this.#now().getTime() + grace * 1000)),
      deletionGracePeriodSeconds: grace,
    };
    // The first graceful deletion bumps generation: controllers must stop acting on the object.
    if (old.metadata.deletionTimestamp === undefined && (old.metadata.generation ?? 0) > 0)
      meta.generation = (old.metadata.generation ?? 0) + 1;
    const next: ApiServerObject = structuredClone({ ...old, metadata: meta });
    r.prepareForDelete(next);
    if (opts.dryRun === true) return { object: next, deleted: grace === 0 && !held };
    const terminating = this.store.commit(r, key, 'MODIFIED', next).object;
    if (grace > 0 || held) return { object: terminating, deleted: false };
    return { object: this.store.commit(r, key, 'DELETED', terminating).object, deleted: true };
  }

  /** Removes an object whose deletion nothing holds any more (a namespace once its content is gone): one DELETED. */
  remove(r: ResourceType, ns: string, name: string): ApiServerObject {
    const old = this.get(r, ns, name);
    return this.store.commit(r, storageKey(ns, name), 'DELETED', old).object;
  }

  /** A direct write for the typed controls and kubelet emulation: no validation, no preconditions. */
  mutate(
    r: ResourceType,
    ns: string,
    name: string,
    fn: (o: ApiServerObject) => ApiServerObject,
    opts: { keepGeneration?: boolean } = {},
  ): ApiServerObject {
    const old = this.get(r, ns, name);
    const next = fn(structuredClone(old) as ApiServerObject);
    next.metadata = { ...next.metadata, name };
    if (r.namespaced) next.metadata.namespace = ns;
    if (old.metadata.resourceVersion !== undefined) next.metadata.resourceVersion = old.metadata.resourceVersion;
    return this.update(r, ns, name, next, { direct: true, ...opts });
  }
}
