/**
 * The core kinds a controller touches besides pods, each a strategy over the generic engine:
 * ConfigMaps, Secrets (`stringData` folded into base64 `data`, type Opaque), Services (defaulted
 * ports, an allocated cluster IP), Events (core/v1 and events.k8s.io/v1) and Leases
 * (coordination.k8s.io/v1). None keeps `metadata.generation`, as on a real server.
 */
import { isRecord } from '../engine/meta.js';
import { invalidValue, required, type FieldError } from '../status.js';
import type { ApiServerObject } from '../types.js';
import { genericStrategy, resourceType, str, type ResourceType } from './resource.js';

const builtIn = (statusSubresource = false) => genericStrategy({ statusSubresource, namespaced: true, builtIn: true });

function stringMap(obj: ApiServerObject, field: string, errs: FieldError[]): void {
  const v = obj[field];
  if (v === undefined || v === null) return;
  if (!isRecord(v)) {
    errs.push(invalidValue(field, '', 'must be a map of string to string'));
    return;
  }
  for (const [k, x] of Object.entries(v))
    if (typeof x !== 'string') errs.push(invalidValue(`${field}[${k}]`, '', 'must be a string'));
}

/** core/v1 ConfigMap. */
export const CONFIGMAP_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', singular: 'configmap', shortNames: ['cm'] },
  {
    ...builtIn(),
    validate(obj) {
      const errs: FieldError[] = [];
      stringMap(obj, 'data', errs);
      stringMap(obj, 'binaryData', errs);
      return errs;
    },
  },
);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `stringData` is write-only: folded into `data` (base64), as the Secret strategy does. */
function foldStringData(obj: ApiServerObject): void {
  const sd = obj['stringData'];
  if (isRecord(sd)) {
    const data: Record<string, unknown> = isRecord(obj['data']) ? { ...obj['data'] } : {};
    for (const [k, v] of Object.entries(sd)) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj['data'] = data;
  }
  delete obj['stringData'];
  obj['type'] ??= 'Opaque';
}

/** core/v1 Secret. */
export const SECRET_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', singular: 'secret' },
  {
    ...builtIn(),
    supportedFields: ['metadata.name', 'metadata.namespace', 'type'],
    fieldSet: (o) => ({
      'metadata.name': str(o.metadata.name),
      'metadata.namespace': str(o.metadata.namespace),
      type: str(o['type']),
    }),
    prepareForCreate: foldStringData,
    prepareForUpdate: foldStringData,
    validate(obj) {
      const errs: FieldError[] = [];
      stringMap(obj, 'data', errs);
      if (isRecord(obj['data'])) {
        for (const [k, v] of Object.entries(obj['data'])) {
          if (typeof v === 'string' && !BASE64.test(v))
            errs.push(invalidValue(`data[${k}]`, '<secret contents redacted>', 'illegal base64 data'));
        }
      }
      return errs;
    },
  },
);

let nextClusterIp = 10;

/** The Service defaults a controller reads back: protocol/targetPort per port, ClusterIP type, an allocated IP. */
function defaultService(obj: ApiServerObject): void {
  const spec: Record<string, unknown> = isRecord(obj['spec']) ? { ...obj['spec'] } : {};
  if (Array.isArray(spec['ports'])) {
    spec['ports'] = spec['ports'].map((p: unknown) =>
      isRecord(p) ? { protocol: 'TCP', ...p, targetPort: p['targetPort'] ?? p['port'] } : p,
    );
  }
  spec['type'] ??= 'ClusterIP';
  spec['sessionAffinity'] ??= 'None';
  if (spec['type'] !== 'ExternalName' && spec['clusterIP'] === undefined) {
    const n = nextClusterIp++;
    spec['clusterIP'] = `10.0.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
  }
  if (typeof spec['clusterIP'] === 'string' && spec['clusterIPs'] === undefined) spec['clusterIPs'] = [spec['clusterIP']];
  if (spec['type'] !== 'ExternalName') {
    spec['ipFamilies'] ??= ['IPv4'];
    spec['ipFamilyPolicy'] ??= 'SingleStack';
    spec['internalTrafficPolicy'] ??= 'Cluster';
  }
  obj['spec'] = spec;
}

/** core/v1 Service. */
export const SERVICE_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'Service', plural: 'services', singular: 'service', shortNames: ['svc'] },
  {
    ...builtIn(true),
    returnDeletedObject: true,
    categories: ['all'],
    prepareForCreate(obj, direct) {
      defaultService(obj);
      if (!direct || !isRecord(obj['status'])) obj['status'] = { loadBalancer: {} };
    },
    prepareForUpdate(next, old) {
      defaultService(next);
      // The allocated cluster IP is immutable; an update that omits it keeps it.
      const spec = next['spec'] as Record<string, unknown>;
      const oldSpec = isRecord(old['spec']) ? old['spec'] : {};
      if (oldSpec['clusterIP'] !== undefined) {
        spec['clusterIP'] = oldSpec['clusterIP'];
        spec['clusterIPs'] = oldSpec['clusterIPs'];
      }
    },
    validate(obj) {
      const spec = isRecord(obj['spec']) ? obj['spec'] : {};
      if (spec['type'] !== 'ExternalName' && (!Array.isArray(spec['ports']) || spec['ports'].length === 0))
        return [required('spec.ports', '')];
      return [];
    },
  },
);

const EVENT_FIELDS = [
  'metadata.name',
  'metadata.namespace',
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
];

/** core/v1 Event. */
export const EVENT_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'Event', plural: 'events', singular: 'event', shortNames: ['ev'] },
  {
    ...builtIn(),
    supportedFields: EVENT_FIELDS,
    fieldSet(o) {
      const inv = isRecord(o['involvedObject']) ? o['involvedObject'] : {};
      const src = isRecord(o['source']) ? o['source'] : {};
      const out: Record<string, string> = {
        'metadata.name': str(o.metadata.name),
        'metadata.namespace': str(o.metadata.namespace),
      };
      for (const f of ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'])
        out[`involvedObject.${f}`] = str(inv[f]);
      out['reason'] = str(o['reason']);
      out['reportingComponent'] = str(o['reportingComponent']);
      out['source'] = str(src['component']);
      out['type'] = str(o['type']);
      return out;
    },
    validate(obj) {
      const inv = obj['involvedObject'];
      if (!isRecord(inv)) return [required('involvedObject', '')];
      if (typeof inv['namespace'] === 'string' && inv['namespace'] !== '' && inv['namespace'] !== obj.metadata.namespace) {
        return [invalidValue('involvedObject.namespace', inv['namespace'], 'does not match event.namespace')];
      }
      return [];
    },
  },
);

/** events.k8s.io/v1 Event (stored apart from core/v1 Events here; see the README's known differences). */
export const EVENT_V1_RESOURCE: ResourceType = resourceType(
  { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', singular: 'event', shortNames: ['ev'] },
  {
    ...builtIn(),
    validate(obj) {
      const errs: FieldError[] = [];
      if (obj['eventTime'] === undefined || obj['eventTime'] === null) errs.push(required('eventTime', ''));
      for (const f of ['reportingController', 'reportingInstance', 'action', 'reason']) {
        if (typeof obj[f] !== 'string' || obj[f] === '') errs.push(required(f, ''));
      }
      if (obj['type'] !== 'Normal' && obj['type'] !== 'Warning')
        errs.push(invalidValue('type', obj['type'] ?? '', 'has invalid value: must be Normal or Warning'));
      return errs;
    },
  },
);

/** coordination.k8s.io/v1 Lease. */
export const LEASE_RESOURCE: ResourceType = resourceType(
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', singular: 'lease' },
  builtIn(),
);

/** Every built-in kind this server serves, pods and namespaces aside. */
export const CORE_KINDS: readonly ResourceType[] = [
  CONFIGMAP_RESOURCE,
  SECRET_RESOURCE,
  SERVICE_RESOURCE,
  EVENT_RESOURCE,
  EVENT_V1_RESOURCE,
  LEASE_RESOURCE,
];
