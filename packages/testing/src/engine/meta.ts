/**
 * Object-shape helpers shared by the engine and the kind strategies: timestamps, key order, the
 * canonical form used to compare objects, and the name rules of apimachinery's validation.
 */
import type { ApiServerObject, ObjectMeta } from '../types.js';
import { setOwn } from './json-safe.js';

/** True for a plain JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 3339 with whole seconds, as `metav1.Time` serializes. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

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
  'managedFields',
];

function orderMeta(m: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = {};
  for (const k of META_ORDER) if (Object.hasOwn(m, k) && m[k] !== undefined) out[k] = m[k];
  for (const [k, v] of Object.entries(m)) if (!Object.hasOwn(out, k) && v !== undefined) setOwn(out, k, v);
  return out;
}

/**
 * kind, apiVersion, metadata, then the rest in the client's order, as the real server prints objects.
 * `r` is the served kind (a `ResourceType`); only its `kind` and `apiVersion` are read.
 */
export function shape(
  r: { readonly kind: string; readonly apiVersion: string },
  o: Record<string, unknown>,
  meta: ObjectMeta,
): ApiServerObject {
  const out: ApiServerObject = { kind: r.kind, apiVersion: r.apiVersion, metadata: orderMeta(meta) };
  for (const [k, v] of Object.entries(o)) {
    if (k === 'kind' || k === 'apiVersion' || k === 'metadata' || v === undefined) continue;
    setOwn(out, k, v);
  }
  return out;
}

/** Canonical JSON (sorted keys): two values are the same object iff their `stable` texts are equal. */
export function stable(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) => {
    if (isRecord(val)) {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(val).sort()) setOwn(o, k, val[k]);
      return o;
    }
    return val;
  });
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `validation.IsDNS1123Subdomain`'s message. */
export const DNS1123_SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/** `validation.IsDNS1123Label`'s message. */
export const DNS1123_LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** How a kind's names are validated: most built-ins use DNS-1123 subdomains, namespaces labels, custom resources path segments. */
export type NameRule = 'subdomain' | 'label' | 'path-segment';

/** The problems with `name` under `rule` (empty when valid), in apimachinery's words. */
export function nameErrors(name: string, rule: NameRule): string[] {
  if (rule === 'path-segment') {
    if (name === '.' || name === '..') return [`may not be '${name}'`];
    const bad = ['/', '%'].filter((c) => name.includes(c));
    return bad.map((c) => `may not contain '${c}'`);
  }
  const out: string[] = [];
  const max = rule === 'label' ? 63 : 253;
  if (name.length > max) out.push(`must be no more than ${max} characters`);
  if (rule === 'label' ? !DNS1123_LABEL.test(name) : !DNS1123_SUBDOMAIN.test(name)) {
    out.push(rule === 'label' ? DNS1123_LABEL_MESSAGE : DNS1123_SUBDOMAIN_MESSAGE);
  }
  return out;
}

/** True when `ns` is a valid namespace name (DNS-1123 label), the rule every path's namespace segment obeys. */
export function isNamespaceName(ns: string): boolean {
  return nameErrors(ns, 'label').length === 0;
}
