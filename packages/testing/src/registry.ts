import { randomUUID } from 'node:crypto';
import { ApiStatusError } from './errors.js';
import { JsonPatchError, jsonPatch, mergePatch, type Json } from './patch.js';
import type { ResourceType } from './resources.js';
import { labelKeyError, labelValueError } from './selectors.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  failure,
  forbidden,
  invalid,
  invalidValue,
  notFound,
  required,
  type FieldError,
  type KubeStatus,
} from './status.js';
import type { MvccStore } from './store.js';
import type { KubeObject, ObjectMeta, Pod } from './types.js';

/** How a PATCH body is interpreted. Strategic merge is served as a JSON merge patch. */
export type PatchType = 'merge' | 'json' | 'strategic';

/** Options for a DELETE, from the query string or a `DeleteOptions` body. */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** The outcome of a DELETE: the object as it now stands and whether it left the store. */
export interface DeleteResult {
  object: KubeObject;
  deleted: boolean;
}

function fail(s: KubeStatus): never {
  throw new ApiStatusError(s);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 3339 with whole seconds, as `metav1.Time` serializes. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

const META_ORDER = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
];

function orderMeta(m: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = {};
  for (const k of META_ORDER) if (m[k] !== undefined) out[k] = m[k];
  for (const [k, v] of Object.entries(m)) if (!(k in out) && v !== undefined) out[k] = v;
  return out;
}

/** kind, apiVersion, metadata, then the rest in the client's order, as the real server prints objects. */
function shape(r: ResourceType, o: Record<string, unknown>, meta: ObjectMeta): KubeObject {
  const out: KubeObject = { kind: r.kind, apiVersion: r.apiVersion, metadata: orderMeta(meta) };
  for (const [k, v] of Object.entries(o)) {
    if (k === 'kind' || k === 'apiVersion' || k === 'metadata' || v === undefined) continue;
    out[k] = v;
  }
  return out;
}

function stable(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) => {
    if (isRecord(val)) {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(val).sort()) o[k] = val[k];
      return o;
    }
    return val;
  });
}

/** The part of an object whose change bumps `metadata.generation`. */
function generationPart(r: ResourceType, o: KubeObject): string {
  if (r.isPod) return stable(o['spec'] ?? null);
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'metadata' || k === 'kind' || k === 'apiVersion') continue;
    if (k === 'status' && r.statusSubresource) continue;
    rest[k] = v;
  }
  return stable(rest);
}

function qosClass(p: Pod): string {
  const containers = p.spec?.containers ?? [];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = isRecord(c['resources']) ? c['resources'] : {};
    const req = isRecord(res['requests']) ? res['requests'] : {};
    const lim = isRecord(res['limits']) ? res['limits'] : {};
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) any = true;
    for (const k of ['cpu', 'memory']) {
      if (lim[k] === undefined || (req[k] !== undefined && req[k] !== lim[k])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The subset of the apiserver's pod defaulting this server applies (spec and containers). */
function defaultPodSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const s: Record<string, unknown> = { ...spec };
  s['restartPolicy'] ??= 'Always';
  s['terminationGracePeriodSeconds'] ??= 30;
  s['dnsPolicy'] ??= 'ClusterFirst';
  s['schedulerName'] ??= 'default-scheduler';
  s['securityContext'] ??= {};
  s['enableServiceLinks'] ??= true;
  for (const list of ['containers', 'initContainers']) {
    const cs = s[list];
    if (!Array.isArray(cs)) continue;
    s[list] = cs.map((c: unknown) => {
      if (!isRecord(c)) return c;
      const d: Record<string, unknown> = { ...c };
      d['resources'] ??= {};
      d['terminationMessagePath'] ??= '/dev/termination-log';
      d['terminationMessagePolicy'] ??= 'File';
      if (d['imagePullPolicy'] === undefined && typeof d['image'] === 'string') {
        const img = d['image'];
        const tag = img.includes('@') ? 'digest' : (img.split('/').pop() ?? '').split(':')[1];
        d['imagePullPolicy'] = tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
      }
      return d;
    });
  }
  return s;
}

/** Spec members a pod update may change; everything else is immutable after create. */
function mutablePodSpecView(spec: unknown): string {
  if (!isRecord(spec)) return stable(spec ?? null);
  const s: Record<string, unknown> = { ...spec };
  delete s['activeDeadlineSeconds'];
  delete s['tolerations'];
  delete s['terminationGracePeriodSeconds'];
  for (const list of ['containers', 'initContainers']) {
    const cs = s[list];
    if (Array.isArray(cs)) s[list] = cs.map((c: unknown) => (isRecord(c) ? { ...c, image: undefined } : c));
  }
  return stable(s);
}

const POD_UPDATE_FORBIDDEN =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,' +
  '`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),' +
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/**
 * Write semantics shared by the HTTP API and the typed controls: validation, defaulting,
 * optimistic concurrency, `generation`, the status subresource, graceful deletion and
 * finalizers. Every refusal is an {@link ApiStatusError} carrying the Status the HTTP API sends.
 */
export class Registry {
  constructor(
    readonly store: MvccStore,
    private readonly now: () => Date,
  ) {}

  private key(ns: string, name: string): string {
    return `${ns}/${name}`;
  }

  /** The current object, or a 404 Status. */
  get(r: ResourceType, ns: string, name: string): KubeObject {
    const o = this.store.get(r, this.key(ns, name));
    if (o === undefined) fail(notFound(r, name));
    return o;
  }

  private checkBody(r: ResourceType, body: unknown): Record<string, unknown> {
    if (!isRecord(body)) fail(badRequest(`the object provided is unrecognized (must be of type ${r.kind})`));
    if (body['kind'] !== undefined && body['kind'] !== r.kind) {
      fail(badRequest(`the object provided is unrecognized (must be of type ${r.kind}): kind ${JSON.stringify(body['kind'])}`));
    }
    if (body['apiVersion'] !== undefined && body['apiVersion'] !== r.apiVersion) {
      fail(badRequest(`the API version in the data (${String(body['apiVersion'])}) does not match the expected API version (${r.apiVersion})`));
    }
    if (body['metadata'] !== undefined && !isRecord(body['metadata'])) {
      fail(badRequest('metadata must be an object'));
    }
    return body;
  }

  private validate(r: ResourceType, o: KubeObject, isCreate: boolean): void {
    const errs: FieldError[] = [];
    const name = o.metadata.name ?? '';
    if (isCreate) {
      if (r.isPod) {
        if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) errs.push(invalidValue('metadata.name', name, DNS1123_MESSAGE));
      } else if (name === '.' || name === '..' || name.includes('/') || name.includes('%')) {
        errs.push(invalidValue('metadata.name', name, `may not be '.' or '..' and may not contain '/' or '%'`));
      }
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
    if (o.metadata.finalizers !== undefined && !Array.isArray(o.metadata.finalizers)) {
      errs.push(invalidValue('metadata.finalizers', o.metadata.finalizers, 'must be a list of strings'));
    }
    if (r.isPod) {
      const spec = (o as Pod).spec;
      const containers = spec?.containers;
      if (!Array.isArray(containers) || containers.length === 0) errs.push(required('spec.containers', ''));
      else {
        containers.forEach((c, i) => {
          if (!isRecord(c) || typeof c['name'] !== 'string' || c['name'] === '') errs.push(required(`spec.containers[${i}].name`, ''));
          if (!isRecord(c) || typeof c['image'] !== 'string' || c['image'] === '') errs.push(required(`spec.containers[${i}].image`, ''));
        });
      }
    }
    if (errs.length > 0) fail(invalid({ group: r.group, kind: r.kind }, name, errs));
  }

  /**
   * POST: assigns uid, creationTimestamp, generation 1 and the next revision; pods get defaults and
   * a Pending status. `direct` (typed controls) keeps a caller-provided status.
   */
  create(r: ResourceType, ns: string, body: unknown, opts: { direct?: boolean } = {}): KubeObject {
    const b = structuredClone(this.checkBody(r, body));
    const meta: ObjectMeta = isRecord(b['metadata']) ? { ...(b['metadata'] as ObjectMeta) } : {};
    if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== ns) {
      fail(badRequest('the namespace of the provided object does not match the namespace sent on the request'));
    }
    meta.namespace = ns;
    if ((meta.name === undefined || meta.name === '') && typeof meta.generateName === 'string' && meta.generateName !== '') {
      for (let attempt = 0; attempt < 8; attempt++) {
        let suffix = '';
        for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
        meta.name = `${meta.generateName}${suffix}`;
        if (this.store.get(r, this.key(ns, meta.name)) === undefined) break;
      }
    }
    if (meta.name === undefined || meta.name === '') {
      fail(invalid({ group: r.group, kind: r.kind }, '', [required('metadata.name', 'name or generateName is required')]));
    }
    const name = meta.name;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    meta.uid = randomUUID();
    meta.creationTimestamp = rfc3339(this.now());
    meta.generation = 1;
    let obj = shape(r, b, meta);
    if (r.isPod) {
      const p = obj as Pod;
      p.spec = defaultPodSpec(isRecord(p.spec) ? p.spec : {}) as NonNullable<Pod['spec']>;
      if (opts.direct !== true || !isRecord(p.status)) p.status = { phase: 'Pending', qosClass: qosClass(p) };
      obj = shape(r, p, meta);
    } else if (r.statusSubresource && opts.direct !== true) {
      delete obj['status'];
    }
    this.validate(r, obj, true);
    if (this.store.get(r, this.key(ns, name)) !== undefined) fail(alreadyExists(r, name));
    return this.store.commit(r, this.key(ns, name), 'ADDED', obj).object;
  }

  /**
   * PUT (main resource or `/status`). A non-empty `metadata.resourceVersion` must match (409
   * otherwise); pods accept an empty one as unconditional, custom resources refuse it (422).
   * A write that changes nothing commits nothing, as etcd3's GuaranteedUpdate skips equal bytes.
   */
  update(
    r: ResourceType,
    ns: string,
    name: string,
    body: unknown,
    opts: { subresource?: 'status'; direct?: boolean; fromPatch?: boolean } = {},
  ): KubeObject {
    const old = this.get(r, ns, name);
    const b = structuredClone(this.checkBody(r, body));
    const bodyMeta: ObjectMeta = isRecord(b['metadata']) ? (b['metadata'] as ObjectMeta) : {};
    if ((bodyMeta.name ?? '') !== name) {
      fail(badRequest(`the name of the object (${bodyMeta.name ?? ''}) does not match the name on the URL (${name})`));
    }
    if (bodyMeta.namespace !== undefined && bodyMeta.namespace !== '' && bodyMeta.namespace !== ns) {
      fail(badRequest('the namespace of the provided object does not match the namespace sent on the request'));
    }
    const rv = bodyMeta.resourceVersion ?? '';
    if (rv === '' && !r.isPod && opts.direct !== true && opts.fromPatch !== true) {
      fail(invalid({ group: r.group, kind: r.kind }, name, [invalidValue('metadata.resourceVersion', 0, 'must be specified for an update')]));
    }
    if (rv !== '' && rv !== old.metadata.resourceVersion) fail(conflict(r, name));
    if (bodyMeta.uid !== undefined && bodyMeta.uid !== '' && bodyMeta.uid !== old.metadata.uid) {
      fail(conflict(r, name, `Precondition failed: UID in precondition: ${bodyMeta.uid}, UID in object meta: ${old.metadata.uid ?? ''}`));
    }

    let next: KubeObject;
    if (opts.subresource === 'status') {
      next = { ...old, metadata: old.metadata };
      if (b['status'] === undefined) delete next['status'];
      else next['status'] = b['status'];
      next = shape(r, next, { ...old.metadata });
    } else {
      const meta: ObjectMeta = { ...bodyMeta };
      for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
        if (old.metadata[k] === undefined) delete meta[k];
        else meta[k] = old.metadata[k] as never;
      }
      meta.namespace = ns;
      meta.name = name;
      next = shape(r, b, meta);
      if (r.isPod) {
        const p = next as Pod;
        p.spec = defaultPodSpec(isRecord(p.spec) ? p.spec : {}) as NonNullable<Pod['spec']>;
      }
      if ((r.isPod || r.statusSubresource) && opts.direct !== true) {
        if (old['status'] === undefined) delete next['status'];
        else next['status'] = old['status'];
      }
      if (r.isPod && opts.direct !== true && mutablePodSpecView(next['spec']) !== mutablePodSpecView(old['spec'])) {
        fail(invalid({ group: '', kind: 'Pod' }, name, [forbidden('spec', POD_UPDATE_FORBIDDEN)]));
      }
      this.validate(r, next, false);
      next = shape(r, next, next.metadata);
    }
    if (generationPart(r, next) !== generationPart(r, old)) {
      next.metadata = { ...next.metadata, generation: (old.metadata.generation ?? 0) + 1 };
    }
    const comparableOld = stable({ ...old, metadata: { ...old.metadata, resourceVersion: undefined } });
    const comparableNext = stable({ ...next, metadata: { ...next.metadata, resourceVersion: undefined } });
    if (comparableOld === comparableNext) return old;
    const finalizersDone =
      next.metadata.deletionTimestamp !== undefined &&
      (next.metadata.finalizers ?? []).length === 0 &&
      (next.metadata.deletionGracePeriodSeconds ?? 0) === 0;
    return this.store.commit(r, this.key(ns, name), finalizersDone ? 'DELETED' : 'MODIFIED', next).object;
  }

  /** PATCH: applies the patch to the current object and writes the result as an update would. */
  patch(r: ResourceType, ns: string, name: string, type: PatchType, patchBody: unknown, opts: { subresource?: 'status' } = {}): KubeObject {
    const old = this.get(r, ns, name);
    let patched: Json;
    if (type === 'json') {
      try {
        patched = jsonPatch(old as unknown as Json, patchBody);
      } catch (e) {
        if (e instanceof JsonPatchError) {
          if (e.code === 'ERR_JSON_PATCH_DECODE') fail(badRequest(e.message));
          fail(failure(422, 'Invalid', 'the server rejected our request due to an error in our request', {
            causes: [{ reason: 'UnexpectedServerResponse', message: e.message }],
          }));
        }
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
    const upd: { subresource?: 'status'; fromPatch: boolean } = { fromPatch: true };
    if (opts.subresource !== undefined) upd.subresource = opts.subresource;
    return this.update(r, ns, name, patched, upd);
  }

  /**
   * DELETE. Pods bound to a node get a grace period (from the request, else
   * `terminationGracePeriodSeconds`): `deletionTimestamp` is set and watchers see MODIFIED; a later
   * delete with a shorter period shortens it, and period 0 removes the pod. Unbound or terminated
   * pods go at once. Finalizers hold any object until an update empties them.
   */
  delete(r: ResourceType, ns: string, name: string, opts: DeleteOptions = {}): DeleteResult {
    const old = this.get(r, ns, name);
    const pre = opts.preconditions;
    if (pre?.uid !== undefined && pre.uid !== old.metadata.uid) {
      fail(conflict(r, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid ?? ''}`));
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== old.metadata.resourceVersion) {
      fail(
        conflict(
          r,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion ?? ''}`,
        ),
      );
    }
    let grace = 0;
    if (r.isPod) {
      const p = old as Pod;
      grace = opts.gracePeriodSeconds ?? p.spec?.terminationGracePeriodSeconds ?? 0;
      if ((p.spec?.nodeName ?? '') === '') grace = 0;
      if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') grace = 0;
      if (grace < 0) grace = 1;
    }
    const finalizers = old.metadata.finalizers ?? [];
    const current = old.metadata.deletionGracePeriodSeconds;
    if (old.metadata.deletionTimestamp !== undefined && current !== undefined && grace >= current) {
      return { object: old, deleted: false };
    }
    if (grace > 0 || finalizers.length > 0) {
      const meta: ObjectMeta = {
        ...old.metadata,
        deletionTimestamp: rfc3339(new Date(this.now().getTime() + grace * 1000)),
        deletionGracePeriodSeconds: grace,
      };
      // The first graceful deletion bumps generation: controllers must stop acting on the object.
      if (old.metadata.deletionTimestamp === undefined && (old.metadata.generation ?? 0) > 0) {
        meta.generation = (old.metadata.generation ?? 0) + 1;
      }
      if (grace === 0 && finalizers.length === 0) {
        return { object: this.store.commit(r, this.key(ns, name), 'DELETED', { ...old, metadata: meta }).object, deleted: true };
      }
      return { object: this.store.commit(r, this.key(ns, name), 'MODIFIED', { ...old, metadata: meta }).object, deleted: false };
    }
    return { object: this.store.commit(r, this.key(ns, name), 'DELETED', old).object, deleted: true };
  }

  /** A direct write for the typed controls and kubelet emulation: no validation, no preconditions. */
  mutate(r: ResourceType, ns: string, name: string, fn: (o: KubeObject) => KubeObject): KubeObject {
    const old = this.get(r, ns, name);
    const next = fn(structuredClone(old) as KubeObject);
    next.metadata = { ...next.metadata, name, namespace: ns };
    if (old.metadata.resourceVersion !== undefined) next.metadata.resourceVersion = old.metadata.resourceVersion;
    return this.update(r, ns, name, next, { direct: true });
  }
}

