import type { KubeObject, Pod } from './types.js';

/** What {@link ApiServer.registerResource} needs to serve a namespaced kind at a generic path. */
export interface ResourceDefinition {
  /** API group, e.g. `example.com`. Empty only for the built-in core group. */
  group: string;
  /** Version, e.g. `v1`. */
  version: string;
  /** Kind, e.g. `Widget`. */
  kind: string;
  /** Plural resource name used in paths, e.g. `widgets`. */
  plural: string;
  /** Singular name for discovery; defaults to the lower-cased kind. */
  singular?: string;
  /** Short names for discovery (kubectl `get w`). */
  shortNames?: string[];
  /** Whether `/status` is a separate subresource (main writes then ignore status). Default true. */
  statusSubresource?: boolean;
}

/** A resource the server serves, with the per-kind behaviour the registry needs. */
export interface ResourceType {
  readonly id: string;
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly statusSubresource: boolean;
  readonly isPod: boolean;
  /** Pods return the deleted object from DELETE; custom resources return a Success Status. */
  readonly returnDeletedObject: boolean;
  /** List items carry kind/apiVersion for custom resources (unstructured), not for built-ins. */
  readonly listItemsCarryType: boolean;
  readonly supportedFields: readonly string[];
  unknownFieldMessage(field: string): string;
  fieldSet(obj: KubeObject): Record<string, string>;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

/** The built-in core/v1 pods resource. */
export const POD_RESOURCE: ResourceType = {
  id: '/pods',
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  kind: 'Pod',
  listKind: 'PodList',
  plural: 'pods',
  singular: 'pod',
  shortNames: ['po'],
  statusSubresource: true,
  isPod: true,
  returnDeletedObject: true,
  listItemsCarryType: false,
  supportedFields: [
    'metadata.name',
    'metadata.namespace',
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  unknownFieldMessage: (field) => `field label not supported: ${field}`,
  fieldSet(obj) {
    const p = obj as Pod;
    const spec = p.spec ?? {};
    const status = p.status ?? {};
    return {
      'metadata.name': str(p.metadata.name),
      'metadata.namespace': str(p.metadata.namespace),
      'spec.nodeName': str(spec.nodeName),
      'spec.restartPolicy': str(spec.restartPolicy),
      'spec.schedulerName': str(spec['schedulerName']),
      'spec.serviceAccountName': str(spec['serviceAccountName']),
      'spec.hostNetwork': spec['hostNetwork'] === true ? 'true' : 'false',
      'status.phase': str(status.phase),
      'status.podIP': str(status.podIP),
      'status.nominatedNodeName': str(status['nominatedNodeName']),
    };
  },
};

/** Builds the served form of a registered custom resource. */
export function customResource(def: ResourceDefinition): ResourceType {
  const fields = ['metadata.name', 'metadata.namespace'];
  return {
    id: `${def.group}/${def.plural}`,
    group: def.group,
    version: def.version,
    apiVersion: def.group === '' ? def.version : `${def.group}/${def.version}`,
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular ?? def.kind.toLowerCase(),
    shortNames: def.shortNames ?? [],
    statusSubresource: def.statusSubresource ?? true,
    isPod: false,
    returnDeletedObject: false,
    listItemsCarryType: true,
    supportedFields: fields,
    unknownFieldMessage: (field) => `"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
    fieldSet: (obj) => ({
      'metadata.name': str(obj.metadata.name),
      'metadata.namespace': str(obj.metadata.namespace),
    }),
  };
}

/** `metav1.APIResource` entries for one group/version, as `/api/v1` and `/apis/{g}/{v}` list them. */
export function apiResourceList(groupVersion: string, resources: readonly ResourceType[]): Record<string, unknown> {
  const out: Record<string, unknown>[] = [];
  for (const r of resources) {
    const main: Record<string, unknown> = {
      name: r.plural,
      singularName: r.singular,
      namespaced: true,
      kind: r.kind,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    };
    if (r.shortNames.length > 0) main['shortNames'] = [...r.shortNames];
    if (r.isPod) main['categories'] = ['all'];
    out.push(main);
    if (r.statusSubresource) {
      out.push({ name: `${r.plural}/status`, singularName: '', namespaced: true, kind: r.kind, verbs: ['get', 'patch', 'update'] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources: out };
}
