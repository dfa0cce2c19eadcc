/**
 * Namespaces as an API: the cluster-scoped core/v1 kind, its strategy (label
 * `kubernetes.io/metadata.name`, `spec.finalizers: [kubernetes]`, phase Active, Terminating while
 * deleted) and the NamespaceLifecycle admission rule: no create into a namespace that does not
 * exist (404) or is terminating (403).
 */
import { ApiServerStatusError } from '../errors.js';
import { isRecord } from '../engine/meta.js';
import type { MvccStore } from '../engine/store.js';
import { failure, notFound } from '../status.js';
import type { ApiServerObject } from '../types.js';
import { genericStrategy, resourceType, type ResourceType } from './resource.js';

/** The namespaces every cluster has from the start. */
export const BUILT_IN_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;

/** The label the apiserver keeps equal to a namespace's name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

function defaultNamespace(obj: ApiServerObject): void {
  const name = obj.metadata.name ?? '';
  obj.metadata.labels = { ...(isRecord(obj.metadata.labels) ? obj.metadata.labels : {}), [NAMESPACE_NAME_LABEL]: name };
}

const base = genericStrategy({ statusSubresource: true, namespaced: false, builtIn: true });

/** The built-in core/v1 namespaces resource. */
export const NAMESPACE_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', singular: 'namespace', shortNames: ['ns'] },
  {
    ...base,
    nameRule: 'label',
    supportedFields: ['metadata.name', 'status.phase'],
    fieldSet: (obj) => ({
      'metadata.name': obj.metadata.name ?? '',
      'status.phase': isRecord(obj['status']) && typeof obj['status']['phase'] === 'string' ? obj['status']['phase'] : '',
    }),
    prepareForCreate(obj) {
      defaultNamespace(obj);
      obj['spec'] = { finalizers: ['kubernetes'] };
      obj['status'] = { phase: 'Active' };
    },
    prepareForUpdate(next, old) {
      defaultNamespace(next);
      // spec.finalizers change only through the finalize subresource.
      next['spec'] = old['spec'];
    },
    generationPart: () => null,
    holdsDeletion: (obj) =>
      isRecord(obj['spec']) && Array.isArray(obj['spec']['finalizers']) && obj['spec']['finalizers'].length > 0,
    prepareForDelete(obj) {
      obj['status'] = { ...(isRecord(obj['status']) ? obj['status'] : {}), phase: 'Terminating' };
    },
    tableColumns: [
      { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
      { name: 'Status', type: 'string', format: '', description: 'The status of the namespace', priority: 0 },
      {
        name: 'Age',
        type: 'string',
        format: '',
        description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
        priority: 0,
      },
    ],
    tableCells: (o, now) => {
      const phase = isRecord(o['status']) && typeof o['status']['phase'] === 'string' ? o['status']['phase'] : '';
      const [name, age] = base.tableCells(o, now);
      return [name, phase, age];
    },
  },
);

/** True when `ns` exists and is not terminating. */
export function namespaceState(store: MvccStore, ns: string): 'missing' | 'active' | 'terminating' {
  const o = store.get(NAMESPACE_RESOURCE, `/${ns}`);
  if (o === undefined) return 'missing';
  return o.metadata.deletionTimestamp === undefined ? 'active' : 'terminating';
}

/**
 * NamespaceLifecycle admission for a create into `ns`: 404 `namespaces "x" not found` when it does
 * not exist, 403 while it terminates — before validation, as admission runs first.
 */
export function admitCreateIn(store: MvccStore, ns: string): void {
  const state = namespaceState(store, ns);
  if (state === 'missing') throw new ApiServerStatusError(notFound(NAMESPACE_RESOURCE, ns));
  if (state === 'terminating') {
    throw new ApiServerStatusError(
      failure(403, 'Forbidden', `unable to create new content in namespace ${ns} because it is being terminated`, {
        name: ns,
        kind: 'namespaces',
        causes: [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }],
      }),
    );
  }
}
